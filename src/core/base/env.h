// The library's environment variables: one row each (name, shape, rule, when it is read, effect), read only through here.
//
// docs/options.md's environment table is these rows (env_markdown();
// tests/unit/env_test.cpp compares them). Process rows are read once, at
// their first use, and keep that answer; Session rows are read each time
// they are asked for, which is when a session is created (tests set them at
// run time). No fmt or exceptions in this header: CUDA sources include it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace strata::core {

enum class EnvVar {
  Log,
  DataDir,
  PrefillTiming,
  NoAvx2,
  SyncCheck,
  Gemm,
  Attention,
  Pdl,
  CudaGraph,
  PeerPieces,
  PrefillHelp,
  PrefillHelpFrac,
  TestSeed,
};

// How a value is read.
enum class EnvKind {
  OffWhenZero,  // a flag, on unless the value is "0"
  OnWhenOne,    // a flag, on when the value is "1"
  OnWhenSet,    // a flag, on when the variable is set at all
  Choice,       // one of the words of `shape` ("mma|wgmma"), or unset
  Number,       // a number (strtod, the whole value), or unset or empty
  Text,         // any text, e.g. a directory
};

// When a value is read: once per process (at first use), each time a
// session is created, or only by the test programs (not the library).
enum class EnvRead { Process, Session, Tests };

struct EnvRow {
  EnvVar var;
  const char* name;    // "STRATA_GEMM"
  const char* shape;   // what the docs show after the name: "=mma|wgmma", "=0", "" (a free value)
  const char* choices; // Choice: the accepted words, '|'-separated; else ""
  EnvKind kind;
  EnvRead read;
  const char* effect;  // the docs' sentence, without when it is read
};

std::span<const EnvRow> env_rows();
const EnvRow& env_row(EnvVar v);

// A caller asked at every launch keeps a Process row's answer in a static
// of its own (the row's value cannot change).
//
// The value, nullptr when unset. A Process row's is the first call's answer
// and stays valid; a Session row's is std::getenv's (valid until the
// environment changes). Nothing is allocated after a row's first read.
const char* env_value(EnvVar v);
// A flag row's answer.
bool env_flag(EnvVar v);
// A Choice row's word, nullopt when unset. Throws Error(INVALID_ARGUMENT)
// naming the variable and its words for any other value.
std::optional<std::string_view> env_choice(EnvVar v);
// A Number row's value, nullopt when unset or empty. Throws
// Error(INVALID_ARGUMENT) naming the variable when it is not a number.
std::optional<double> env_number(EnvVar v);

// The rules of env_flag, env_choice and env_number on a given value
// (nullptr: unset).
bool env_flag_of(const EnvRow& row, const char* value);
std::optional<std::string_view> env_choice_of(const EnvRow& row, const char* value);
std::optional<double> env_number_of(const EnvRow& row, const char* value);

// The rows of docs/options.md's environment table, one line each.
std::string env_markdown();

}  // namespace strata::core
