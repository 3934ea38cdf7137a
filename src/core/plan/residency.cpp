// Adaptive residency: decayed usage and deterministic swap plans over a PlacementPlan.
#include "core/plan/residency.h"

#include <algorithm>
#include <numeric>

#include "core/base/error.h"

namespace strata::core {

void decay_usage(std::vector<double>& usage, std::span<const uint64_t> routed) {
  if (usage.size() != routed.size())
    fail(STRATA_ERR_INVALID_ARGUMENT, "residency: usage of {} experts, routed counts of {}", usage.size(),
         routed.size());
  for (size_t i = 0; i < usage.size(); ++i) usage[i] = kUsageDecay * usage[i] + static_cast<double>(routed[i]);
}

std::vector<ExpertSwap> plan_swaps(const PlacementPlan& plan, const std::vector<double>& usage,
                                   const std::vector<uint64_t>& blob_bytes, int32_t max_swaps) {
  const size_t n = plan.resident.size();
  if (usage.size() != n || blob_bytes.size() != n || max_swaps < 0)
    fail(STRATA_ERR_INVALID_ARGUMENT, "residency: {} experts, usage of {}, sizes of {}, max_swaps {}", n,
         usage.size(), blob_bytes.size(), max_swaps);
  std::vector<int32_t> hot, cold;  // streamed by usage descending, resident by usage ascending
  for (size_t i = 0; i < n; ++i) (plan.resident[i] ? cold : hot).push_back(static_cast<int32_t>(i));
  std::stable_sort(hot.begin(), hot.end(), [&](int32_t a, int32_t b) { return usage[a] > usage[b]; });
  std::stable_sort(cold.begin(), cold.end(), [&](int32_t a, int32_t b) { return usage[a] < usage[b]; });
  std::vector<ExpertSwap> swaps;
  std::vector<bool> taken(n, false);
  for (int32_t in : hot) {
    if (static_cast<int32_t>(swaps.size()) == max_swaps) break;
    // The least-used resident of the same size not yet given away.
    const auto out = std::find_if(cold.begin(), cold.end(),
                                  [&](int32_t c) { return !taken[c] && blob_bytes[c] == blob_bytes[in]; });
    if (out == cold.end() || !(usage[in] > usage[*out])) continue;
    taken[*out] = true;
    swaps.push_back({in, *out});
  }
  return swaps;
}

void apply_swaps(PlacementPlan& p, std::span<const ExpertSwap> swaps, const std::vector<uint64_t>& blob_bytes) {
  for (const ExpertSwap& s : swaps) {
    const auto n = static_cast<int32_t>(p.resident.size());
    if (s.in < 0 || s.in >= n || s.out < 0 || s.out >= n || p.resident[s.in] || !p.resident[s.out])
      fail(STRATA_ERR_INVALID_ARGUMENT, "residency: swap of {} in and {} out is not streamed for resident", s.in,
           s.out);
    if (p.arena_offset[s.out] == UINT64_MAX)
      fail(STRATA_ERR_INVALID_ARGUMENT, "residency: expert {} has no host copy to stream from", s.out);
    p.resident[s.in] = 1;
    p.resident[s.out] = 0;
    p.resident_offset[s.in] = p.resident_offset[s.out];
    p.resident_offset[s.out] = UINT64_MAX;
    p.streamed_bytes += blob_bytes[s.out];
    p.streamed_bytes -= blob_bytes[s.in];
  }
  p.streamed.clear();
  for (int32_t l = 0; l < p.n_layer; ++l)
    for (int32_t e = 0; e < p.n_experts(l); ++e)
      if (!p.is_resident(l, e)) p.streamed.push_back({l, e});
}

}  // namespace strata::core
