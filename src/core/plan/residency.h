// Adaptive residency: decayed usage counts per (layer, expert) of a stage, and the swaps between requests that
// make the most-used streamed experts resident in place of the least-used resident ones.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/plan/placement.h"

namespace strata::core {

// How much of its past count an expert keeps at each request: recent use
// dominates, but one request does not undo a long history.
inline constexpr double kUsageDecay = 0.8;
// Swaps per request when the model options leave it unset.
inline constexpr int32_t kDefaultAdaptSwaps = 16;

// One swap: flat indices (PlacementPlan::index) of the streamed expert that
// becomes resident and of the resident one that leaves VRAM for its place.
struct ExpertSwap {
  int32_t in = 0;
  int32_t out = 0;
  friend bool operator==(const ExpertSwap&, const ExpertSwap&) = default;
};

// Usage per flat expert index: usage = kUsageDecay * usage + rows routed since
// the last request. routed[i] are the rows routed to expert i since then.
void decay_usage(std::vector<double>& usage, std::span<const uint64_t> routed);

// Up to max_swaps swaps: the streamed experts by descending usage against the
// resident ones by ascending usage, pairing the i-th of each while the
// streamed one's usage is strictly higher and the two blobs are the same
// size (a resident's VRAM takes exactly its replacement). Ties order by the
// lower flat index, so the same usage always gives the same swaps. Throws
// Error(INVALID_ARGUMENT) for a usage or size vector of another length or a
// negative max_swaps.
std::vector<ExpertSwap> plan_swaps(const PlacementPlan& plan, const std::vector<double>& usage,
                                   const std::vector<uint64_t>& blob_bytes, int32_t max_swaps);

// Applies the swaps to the plan: residency flags, the incoming expert takes
// the outgoing one's resident offset, and the streamed list (kept in
// (layer, expert) order) and streamed bytes follow. Every expert must have an
// arena offset (PlacementInput::arena_holds_resident), since the outgoing one
// streams from the arena from now on: Error(INVALID_ARGUMENT) otherwise, or
// for a swap whose `in` is resident or whose `out` is not.
void apply_swaps(PlacementPlan& plan, std::span<const ExpertSwap> swaps, const std::vector<uint64_t>& blob_bytes);

}  // namespace strata::core
