// The environment rows (src/core/base/env.h): their rules, docs/options.md's table as the rows, and no getenv outside the resolver.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "core/base/env.h"
#include "core/base/error.h"
#include "error_checks.h"

namespace fs = std::filesystem;
using strata::core::EnvKind;
using strata::core::EnvRow;
using strata::core::EnvVar;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("env: one row per variable, each named STRATA_ once", "[env]") {
  std::set<std::string> names;
  for (const EnvRow& row : strata::core::env_rows()) {
    INFO(row.name);
    CHECK(std::string(row.name).rfind("STRATA_", 0) == 0);
    CHECK(names.insert(row.name).second);
    CHECK(&strata::core::env_row(row.var) == &row);
    CHECK((row.kind == EnvKind::Choice) == (*row.choices != '\0'));
  }
}

TEST_CASE("env: flags, choices and numbers read their values by their rules", "[env]") {
  const EnvRow& log = strata::core::env_row(EnvVar::Log);  // OffWhenZero
  CHECK(strata::core::env_flag_of(log, nullptr));
  CHECK(strata::core::env_flag_of(log, "1"));
  CHECK_FALSE(strata::core::env_flag_of(log, "0"));
  const EnvRow& sync = strata::core::env_row(EnvVar::SyncCheck);  // OnWhenOne
  CHECK_FALSE(strata::core::env_flag_of(sync, nullptr));
  CHECK_FALSE(strata::core::env_flag_of(sync, "yes"));
  CHECK(strata::core::env_flag_of(sync, "1"));
  const EnvRow& avx = strata::core::env_row(EnvVar::NoAvx2);  // OnWhenSet
  CHECK_FALSE(strata::core::env_flag_of(avx, nullptr));
  CHECK(strata::core::env_flag_of(avx, ""));

  const EnvRow& gemm = strata::core::env_row(EnvVar::Gemm);
  CHECK_FALSE(strata::core::env_choice_of(gemm, nullptr).has_value());
  CHECK(strata::core::env_choice_of(gemm, "mma") == "mma");
  CHECK(strata::core::env_choice_of(gemm, "wgmma") == "wgmma");
  CHECK(status_of([&] { strata::core::env_choice_of(gemm, "wmma"); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { strata::core::env_choice_of(gemm, "mm"); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK_FAILS_WITH(strata::core::env_choice_of(gemm, "fast"), STRATA_ERR_INVALID_ARGUMENT, "STRATA_GEMM=fast");

  const EnvRow& frac = strata::core::env_row(EnvVar::PrefillHelpFrac);
  CHECK_FALSE(strata::core::env_number_of(frac, nullptr).has_value());
  CHECK_FALSE(strata::core::env_number_of(frac, "").has_value());
  CHECK(strata::core::env_number_of(frac, "0.25") == 0.25);
  CHECK(status_of([&] { strata::core::env_number_of(frac, "0.25x"); }) == STRATA_ERR_INVALID_ARGUMENT);
  // A rule asked of a row of another kind is a bug in the caller.
  CHECK(status_of([&] { strata::core::env_flag_of(frac, "1"); }) == STRATA_ERR_INTERNAL);
  CHECK(status_of([&] { strata::core::env_number_of(log, "1"); }) == STRATA_ERR_INTERNAL);
}

TEST_CASE("env: a session row is read at each call", "[env]") {
  REQUIRE(strata::core::env_row(EnvVar::CudaGraph).read == strata::core::EnvRead::Session);
  setenv("STRATA_CUDA_GRAPH", "0", 1);
  CHECK_FALSE(strata::core::env_flag(EnvVar::CudaGraph));
  setenv("STRATA_CUDA_GRAPH", "1", 1);
  CHECK(strata::core::env_flag(EnvVar::CudaGraph));
  unsetenv("STRATA_CUDA_GRAPH");
  CHECK(strata::core::env_flag(EnvVar::CudaGraph));
  setenv("STRATA_PREFILL_HELP_FRAC", "oops", 1);
  CHECK(status_of([] { strata::core::env_number(EnvVar::PrefillHelpFrac); }) == STRATA_ERR_INVALID_ARGUMENT);
  unsetenv("STRATA_PREFILL_HELP_FRAC");
  CHECK_FALSE(strata::core::env_number(EnvVar::PrefillHelpFrac).has_value());
}

TEST_CASE("env: docs/options.md's environment table is the rows", "[env]") {
  const std::string doc = read_text(fs::path(STRATA_SOURCE_DIR) / "docs" / "options.md");
  const std::string header = "| variable | effect | read |\n| --- | --- | --- |\n";
  const size_t start = doc.find(header);
  REQUIRE(start != std::string::npos);
  const size_t body = start + header.size();
  size_t end = doc.find("\n\n", body);
  if (end == std::string::npos) end = doc.size();
  const std::string table = doc.substr(body, end - body + 1);
  INFO("docs/options.md's table should read:\n" << strata::core::env_markdown());
  CHECK(table == strata::core::env_markdown());
}

TEST_CASE("env: no source file reads the environment but the resolver", "[env]") {
  const fs::path src = fs::path(STRATA_SOURCE_DIR) / "src";
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const bool resolver = entry.path().parent_path().filename() == "base" && entry.path().stem() == "env";
    if (!entry.is_regular_file() || resolver) continue;
    INFO(entry.path().string());
    CHECK(read_text(entry.path()).find("getenv") == std::string::npos);
  }
}
