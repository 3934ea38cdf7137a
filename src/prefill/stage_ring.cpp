// A stage's ring schedules from its placement.
#include "prefill/stage_ring.h"

#include <utility>

#include "prefill/peer_share.h"

namespace strata::prefill {

RingSchedule lists_schedule(std::vector<std::vector<int32_t>> lists, int32_t n_slots, int32_t first_slot) {
  RingInput in;
  in.mode = RingMode::StreamAll;
  in.n_slots = n_slots;
  in.first_slot = first_slot;
  in.layers = std::move(lists);
  return plan_ring(in);
}

RingSchedule stream_all_schedule(const core::StageExperts& x, int32_t first_slot) {
  std::vector<std::vector<int32_t>> lists;
  for (const std::vector<bool>& mask : x.streamed) lists.push_back(ring_layer_all(mask));
  return lists_schedule(std::move(lists), x.plan.ring_slots, first_slot);
}

SharedStreamAll split_stream_all(const core::StageExperts& x, double share) {
  SharedStreamAll out;
  for (const std::vector<bool>& mask : x.streamed) {
    std::vector<int32_t> peer = peer_experts_stream_all(mask, share), own;
    std::vector<bool> taken(mask.size(), false);
    for (int32_t e : peer) taken[e] = true;
    for (int32_t e : ring_layer_all(mask))
      if (!taken[e]) own.push_back(e);
    out.primary.push_back(std::move(own));
    out.peer.push_back(std::move(peer));
  }
  return out;
}

RingSchedule routed_schedule(const core::StageExperts& x, std::vector<int32_t> experts, int32_t first_slot) {
  RingInput in;
  in.mode = RingMode::Routed;
  in.n_slots = x.plan.ring_slots;
  in.first_slot = first_slot;
  in.layers.push_back(std::move(experts));
  return plan_ring(in);
}

}  // namespace strata::prefill
