// Token sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

namespace strata::core {

struct SamplerParams {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  uint64_t seed = 0;
};

// Throws Error(INVALID_ARGUMENT) naming the field that is out of range.
void validate(const SamplerParams& params);

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);

  // Picks a token and records it in the history. Deterministic for a seed
  // and the same sequence of calls.
  int32_t sample(std::span<const float> logits);
  void accept(int32_t token);

 private:
  void apply_repeat_penalty(std::vector<float>& logits) const;
  double uniform();

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::deque<int32_t> history_;
  std::vector<float> scratch_;
  std::vector<int32_t> ids_;
};

}  // namespace strata::core
