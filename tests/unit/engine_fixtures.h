// Test helpers for whole-engine tests: a synthetic model file per process, and a fixed token sequence.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/synth.h"

namespace strata::test {

// A tiny synthetic model in the temp dir, named for this process (ctest runs
// test cases as parallel processes), removed when destroyed.
struct TempModel {
  std::string path;
  TempModel(const std::string& name, int n_layer, uint64_t seed) {
    path = (std::filesystem::temp_directory_path() / ("strata-" + name + "-" + std::to_string(::getpid()) + ".gguf"))
               .string();
    core::SynthParams sp;
    sp.shape = "tiny";
    sp.n_layer = n_layer;
    sp.seed = seed;
    core::write_synthetic_model(sp, path);
  }
  ~TempModel() { std::filesystem::remove(path); }
};

// n token ids below n_vocab from a linear congruential sequence started at seed.
inline std::vector<int32_t> lcg_tokens(int32_t n_vocab, int n, uint32_t seed) {
  std::vector<int32_t> t;
  uint32_t x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab)));
  }
  return t;
}

}  // namespace strata::test
