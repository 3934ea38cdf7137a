// plan_ring: the slots and waits of a chunk's expert stream.
#include "prefill/ring.h"

#include <algorithm>
#include <unordered_set>

#include "core/base/error.h"
#include "prefill/row_table.h"

namespace strata::prefill {

using core::fail;

std::vector<int32_t> ring_layer_all(const std::vector<bool>& streamed) {
  std::vector<int32_t> list;
  for (size_t e = 0; e < streamed.size(); ++e) {
    if (streamed[e]) list.push_back(static_cast<int32_t>(e));
  }
  return list;
}

std::vector<int32_t> ring_layer_routed(const RowTable& t, const std::vector<bool>& streamed) {
  if (static_cast<int64_t>(streamed.size()) != t.n_expert) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "ring: streamed mask of {} experts for a table of {}", streamed.size(),
         t.n_expert);
  }
  std::vector<int32_t> list;
  for (int32_t e : t.active) {
    if (streamed[e]) list.push_back(e);
  }
  return list;
}

std::vector<int32_t> ring_batch_ends(int32_t begin, int32_t end, int32_t n_slots) {
  if (n_slots < 1 || end < begin)
    fail(STRATA_ERR_INVALID_ARGUMENT, "ring batches: [{}, {}) over {} slots", begin, end, n_slots);
  const int32_t n = end - begin, max_batch = std::max(1, n_slots / 3);
  const int32_t batches = (n + max_batch - 1) / max_batch;
  std::vector<int32_t> ends;
  for (int32_t b = 1; b <= batches; ++b)  // the first n % batches batches take one more
    ends.push_back(begin + b * (n / batches) + std::min(b, n % batches));
  return ends;
}

RingSchedule plan_ring(const RingInput& in) {
  if (in.n_slots < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "ring: {} slots", in.n_slots);
  if (in.first_slot < 0 || in.first_slot >= in.n_slots) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "ring: first slot {} outside [0, {})", in.first_slot, in.n_slots);
  }
  RingSchedule s;
  s.mode = in.mode;
  s.n_slots = in.n_slots;
  s.layer_begin.push_back(0);
  int32_t slot = in.first_slot;
  for (size_t l = 0; l < in.layers.size(); ++l) {
    std::unordered_set<int32_t> seen;
    for (int32_t e : in.layers[l]) {
      if (e < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "ring: layer {} lists expert {}", l, e);
      if (!seen.insert(e).second) fail(STRATA_ERR_INVALID_ARGUMENT, "ring: layer {} lists expert {} twice", l, e);
      const int32_t i = static_cast<int32_t>(s.loads.size());
      const int32_t layer = static_cast<int32_t>(l);
      RingLoad load{layer, e, slot, i - in.n_slots >= 0 ? i - in.n_slots : -1,
                    in.mode == RingMode::StreamAll ? -1 : layer};
      s.loads.push_back(load);
      s.computes.push_back({layer, e, slot, i});
      slot = slot + 1 == in.n_slots ? 0 : slot + 1;
    }
    s.layer_begin.push_back(static_cast<int32_t>(s.loads.size()));
  }
  s.next_slot = slot;
  return s;
}

}  // namespace strata::prefill
