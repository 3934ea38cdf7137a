// The ring mode rule: the expected share of a layer's experts a chunk routes to.
#include "core/plan/ring_mode.h"

#include <cmath>

#include "core/base/error.h"

namespace strata::core {

double expected_routed_fraction(int64_t n_tokens, int k, int n_expert) {
  if (n_tokens < 0 || k < 1 || n_expert < k) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "routed fraction: n_tokens={} k={} n_expert={}", n_tokens, k, n_expert);
  }
  // pow of a value in [0, 1) to an integer power: exact enough, and 0 for k = n.
  return 1.0 - std::pow(1.0 - static_cast<double>(k) / n_expert, static_cast<double>(n_tokens));
}

RingMode choose_ring_mode(int64_t n_tokens, int k, int n_expert, double threshold) {
  if (!(threshold > 0 && threshold <= 1)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "ring mode: threshold {} outside (0, 1]", threshold);
  }
  return expected_routed_fraction(n_tokens, k, n_expert) >= threshold ? RingMode::StreamAll : RingMode::Routed;
}

}  // namespace strata::core
