// A stage's ring schedules: the RingSchedule of a chunk (stream-all, shared with a peer, or one routed layer)
// from the stage's placement (core::StageExperts).
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/expert_store.h"
#include "prefill/ring.h"

namespace strata::prefill {

// The ring schedule of a chunk in StreamAll mode: every streamed expert of
// every layer, (layer, expert) order, slots from first_slot on.
RingSchedule stream_all_schedule(const core::StageExperts& experts, int32_t first_slot);
// A stream-all chunk whose streamed experts a peer shares: per layer (of the
// stage), the streamed experts the primary keeps and the peer's
// (peer_experts_stream_all), each ascending.
struct SharedStreamAll {
  std::vector<std::vector<int32_t>> primary, peer;
};
SharedStreamAll split_stream_all(const core::StageExperts& x, double share);
// The StreamAll ring schedule of per-layer lists through n_slots slots.
RingSchedule lists_schedule(std::vector<std::vector<int32_t>> lists, int32_t n_slots, int32_t first_slot);
// The ring schedule of one layer in Routed mode: `experts` in that order
// (ring_layer_routed: its routed streamed experts, biggest group
// first, or part of them); the schedule's layer 0 is the layer.
RingSchedule routed_schedule(const core::StageExperts& x, std::vector<int32_t> experts, int32_t first_slot);

}  // namespace strata::prefill
