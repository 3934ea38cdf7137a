// Token sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded.
#include "core/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/base/error.h"

namespace strata::core {

void validate(const SamplerParams& p) {
  if (!std::isfinite(p.temperature)) fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: temperature must be finite");
  if (p.top_k < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: top_k must be >= 0, got {}", p.top_k);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: top_p must be in (0, 1], got {}", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p < 1.0f))
    fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: min_p must be in [0, 1), got {}", p.min_p);
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty))
    fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: repeat_penalty must be > 0, got {}", p.repeat_penalty);
  if (p.repeat_last_n < 0)
    fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: repeat_last_n must be >= 0, got {}", p.repeat_last_n);
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) { validate(params_); }

void Sampler::accept(int32_t token) {
  if (params_.repeat_last_n == 0) return;
  history_.push_back(token);
  while (history_.size() > static_cast<size_t>(params_.repeat_last_n)) history_.pop_front();
}

// 53 random bits as a double in [0, 1): the same on every platform, unlike
// std::uniform_real_distribution whose algorithm is implementation-defined.
double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

// The CTRL-style penalty: positive logits divided, negative multiplied.
void Sampler::apply_repeat_penalty(std::vector<float>& logits) const {
  if (params_.repeat_penalty == 1.0f) return;
  std::vector<int32_t> seen(history_.begin(), history_.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  for (int32_t t : seen) {
    if (t < 0 || static_cast<size_t>(t) >= logits.size()) continue;
    float& l = logits[t];
    l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
  }
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "sampler: no logits");
  scratch_.assign(logits.begin(), logits.end());
  apply_repeat_penalty(scratch_);

  int32_t token;
  if (params_.temperature <= 0.0f) {
    // First maximum: ties go to the lowest id.
    token = static_cast<int32_t>(std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin());
  } else {
    // Candidates sorted by logit (descending, ties by id), cut by top-k.
    ids_.resize(scratch_.size());
    std::iota(ids_.begin(), ids_.end(), 0);
    auto by_logit = [&](int32_t a, int32_t b) { return scratch_[a] > scratch_[b] || (scratch_[a] == scratch_[b] && a < b); };
    size_t n = ids_.size();
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
      n = params_.top_k;
      std::partial_sort(ids_.begin(), ids_.begin() + n, ids_.end(), by_logit);
    } else {
      std::sort(ids_.begin(), ids_.end(), by_logit);
    }
    // Probabilities at the temperature (double for a stable sum).
    std::vector<double> p(n);
    const double top = scratch_[ids_[0]];
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp((scratch_[ids_[i]] - top) / params_.temperature);
    for (double& v : p) v /= sum;
    // top-p: the smallest prefix whose mass reaches top_p.
    if (params_.top_p < 1.0f) {
      double mass = 0.0;
      size_t keep = n;
      for (size_t i = 0; i < n; ++i) {
        mass += p[i];
        if (mass >= params_.top_p) { keep = i + 1; break; }
      }
      n = keep;
    }
    // min-p: drop candidates below min_p times the best probability.
    if (params_.min_p > 0.0f) {
      size_t keep = 1;
      while (keep < n && p[keep] >= params_.min_p * p[0]) ++keep;
      n = keep;
    }
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += p[i];
    double r = uniform() * total;
    size_t pick = n - 1;
    for (size_t i = 0; i < n; ++i) {
      if (r < p[i]) { pick = i; break; }
      r -= p[i];
    }
    token = ids_[pick];
  }
  accept(token);
  return token;
}

}  // namespace strata::core
