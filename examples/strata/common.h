// Shared pieces of the strata CLI (engine options, size parsing, progress bar), also used by strata-server.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/strata.hpp"

namespace cli {

// The engine options every command accepts.
struct EngineOptions {
  std::string devices;
  std::string layer_split;
  std::string vram_budget;  // "12GiB", "800MB", bytes
  int32_t peer_device = -1;
  int32_t threads = 0;
  std::string kv = "f16";
  int32_t chunk = 0;
  bool no_pipeline = false;
  int32_t adapt_swaps = 16;
  std::string expert_profile;  // path
  double decode_cpu_share = -1;
  double peer_share = -1;
  bool peer_f32 = false;
  int32_t peer_pieces = 0;
  bool no_helper = false;
  double helper_share = -1;
  bool helper_exact = false;
  int32_t ctx = 0;

  void add_to(CLI::App& app);
  strata::ModelParams model_params(bool progress_bar) const;
  strata::SessionParams session_params(bool progress_bar) const;
};

// A whole number in [1, INT32_MAX]; throws std::invalid_argument naming the option and the text.
int32_t parse_positive(std::string_view text, const char* what);

// A one-line progress bar on stderr; returns true (never cancels).
bool progress_bar(const char* label, uint64_t done, uint64_t total);

std::string read_file(const std::string& path);

void add_run(CLI::App& app);
void add_bench(CLI::App& app);
void add_eval(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_tools(CLI::App& app);

}  // namespace cli
