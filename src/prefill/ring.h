// RingSchedule: which expert blob goes into which VRAM slot when, and what each load and compute waits for.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/ring_mode.h"

namespace strata::prefill {

struct RowTable;
using core::RingMode;

// What the ring streams for one chunk on one device.
struct RingInput {
  RingMode mode = RingMode::Routed;
  int32_t n_slots = 3;  // >= 1; placement gives >= 3 (one slot read, one ready, one filling)
  int32_t first_slot =
      0;  // the previous chunk's RingSchedule::next_slot: reuse continues with the slot freed longest ago
  // Per layer (of this device), the experts to stream in load order; an empty
  // list for a layer that streams nothing. Build them with ring_layer_all /
  // ring_layer_routed.
  std::vector<std::vector<int32_t>> layers;
};

// StreamAll list of one layer: every expert with streamed[e], ascending id.
std::vector<int32_t> ring_layer_all(const std::vector<bool>& streamed);
// Routed list of one layer: the table's active experts with streamed[e], in
// active order (biggest group first, ties lower id). Throws
// Error(INVALID_ARGUMENT) when streamed.size() != t.n_expert.
std::vector<int32_t> ring_layer_routed(const RowTable& t, const std::vector<bool>& streamed);

// One copy of a blob from the host arena into a slot, on the copy stream.
struct RingLoad {
  int32_t layer = 0;
  int32_t expert = 0;
  int32_t slot = 0;
  // The compute (index into computes) that last read this slot and must end
  // before the copy starts; -1 when the slot was last used before this
  // schedule (the executor's per-slot release event, recorded by the previous
  // chunk, still covers it). A CUDA event wait binds to the latest record
  // at enqueue time, so the executor enqueues this load only after it has
  // enqueued compute wait_compute (which records the slot's release).
  int32_t wait_compute = -1;
  // -1: known at the chunk start (StreamAll). Else the layer whose routing
  // names this blob (Routed: the load's own layer); the executor enqueues it
  // after that layer's grouping is on the host.
  int32_t known_after_layer = -1;
};

// One expert GEMM reading its blob from a slot, on the compute stream.
struct RingCompute {
  int32_t layer = 0;
  int32_t expert = 0;
  int32_t slot = 0;
  int32_t load = 0;  // index into loads: the copy whose completion it waits for
};

// The schedule of one chunk. Computes run in load order (FIFO): compute i
// waits for load i, and load i reuses the slot of load i - n_slots, so it
// waits for compute i - n_slots. That order cannot deadlock (every wait points
// to an earlier position of the other stream) and frees slots in the order
// they were filled, which is what lets StreamAll loads run ahead by n_slots.
// Resident experts are not in it: they need no wait and the executor may run
// them at any point of their layer (first is best: they cover the first loads).
struct RingSchedule {
  RingMode mode = RingMode::Routed;
  int32_t n_slots = 0;
  std::vector<RingLoad> loads;        // copy stream order
  std::vector<RingCompute> computes;  // compute stream order, computes[i].load == i
  // [n_layer + 1]: layer l's loads (and computes) are [layer_begin[l], layer_begin[l + 1]).
  std::vector<int32_t> layer_begin;
  int32_t next_slot = 0;  // first_slot of the next chunk

  int32_t n_layer() const { return static_cast<int32_t>(layer_begin.size()) - 1; }
};

// The batches in which an executor runs computes [begin, end) of one layer:
// each batch after its last load has landed, then its slots released. At
// most a third of the ring each, so loads keep running at least two thirds of
// the ring ahead (the link streams on through attention and routing), in as
// few batches as that allows, of sizes that differ by at most one: each
// batch is a launch whose last wave is partly idle, so a layer of 121 streamed
// experts in a ring of 233 runs as 61 + 60, not 58 + 58 + 5 (a quarter each).
// Returns each batch's end (exclusive), ascending; none when begin == end.
// Throws Error(INVALID_ARGUMENT) for n_slots < 1 or end < begin.
std::vector<int32_t> ring_batch_ends(int32_t begin, int32_t end, int32_t n_slots);

// Builds the schedule. Throws Error(INVALID_ARGUMENT) for n_slots < 1,
// first_slot outside [0, n_slots), a negative expert id, or an expert listed
// twice in one layer (each blob is loaded exactly once per chunk).
RingSchedule plan_ring(const RingInput& in);

}  // namespace strata::prefill
