// A stage's ring schedules from its placement.
#include "prefill/stage_ring.h"

#include <utility>

#include "prefill/peer_share.h"

namespace strata::prefill {

namespace {

RingSchedule schedule_of(RingMode mode, std::vector<std::vector<int32_t>> lists, int32_t n_slots,
                         int32_t first_slot) {
  RingInput in;
  in.mode = mode;
  in.n_slots = n_slots;
  in.first_slot = first_slot;
  in.layers = std::move(lists);
  return plan_ring(in);
}

}  // namespace

RingSchedule lists_schedule(std::vector<std::vector<int32_t>> lists, int32_t n_slots, int32_t first_slot) {
  return schedule_of(RingMode::StreamAll, std::move(lists), n_slots, first_slot);
}

RingSchedule stream_all_schedule(const core::StageExperts& x, int32_t first_slot) {
  std::vector<std::vector<int32_t>> lists;
  for (const std::vector<bool>& mask : x.streamed) lists.push_back(ring_layer_all(mask));
  return lists_schedule(std::move(lists), x.plan.ring_slots, first_slot);
}

SharedStreamAll split_stream_all(const core::StageExperts& x, double share) {
  SharedStreamAll out;
  for (const std::vector<bool>& mask : x.streamed) {
    PeerSplit split = split_candidates(ring_layer_all(mask), share);
    out.primary.push_back(std::move(split.own));
    out.peer.push_back(std::move(split.peer));
  }
  return out;
}

RingSchedule routed_schedule(const core::StageExperts& x, std::vector<int32_t> experts, int32_t first_slot) {
  return schedule_of(RingMode::Routed, {std::move(experts)}, x.plan.ring_slots, first_slot);
}

}  // namespace strata::prefill
