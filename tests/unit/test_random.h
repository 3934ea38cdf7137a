// Test helpers: a fresh random seed per run (replay with STRATA_TEST_SEED), nonzero random data, NaN poison.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

namespace strata::test {

// A new seed every run so repeated CI runs cover new inputs; STRATA_TEST_SEED=n
// replays the run that printed "seed=n" in its failure message.
inline uint64_t test_seed() {
  if (const char* s = std::getenv("STRATA_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

struct Rng {
  uint64_t seed;
  std::mt19937_64 gen;
  explicit Rng(uint64_t s) : seed(s), gen(s) {}

  int32_t int_in(int32_t lo, int32_t hi) {  // inclusive bounds
    return std::uniform_int_distribution<int32_t>(lo, hi)(gen);
  }
  // |value| in [0.1, 1] * scale with a random sign: never zero, so a dropped
  // term or an unwritten output cannot hide behind a zero input.
  float nonzero(float scale = 1.0f) {
    const float mag = std::uniform_real_distribution<float>(0.1f, 1.0f)(gen);
    return (gen() & 1) ? mag * scale : -mag * scale;
  }
  std::vector<float> vec(size_t n, float scale = 1.0f) {
    std::vector<float> v(n);
    for (auto& x : v) x = nonzero(scale);
    return v;
  }
  // Flags as a byte per element: 0, or with equal odds any of 1..255 (a test
  // of "!= 0" must not pass on 1 alone).
  std::vector<uint8_t> flags(size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& f : v) f = static_cast<uint8_t>(int_in(0, 1) * int_in(1, 255));
    return v;
  }
};

// Fills outputs with NaN before a call: any element the call fails to write
// stays NaN and fails every comparison.
inline void poison(std::vector<float>& v) { v.assign(v.size(), std::numeric_limits<float>::quiet_NaN()); }

}  // namespace strata::test
