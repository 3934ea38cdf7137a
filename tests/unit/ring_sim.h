// A tiny two-stream event simulator that executes a RingSchedule and checks it never overwrites a slot in use.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "prefill/ring.h"

namespace ring_sim {

// Durations of everything in one chunk. The compute stream runs, per layer,
// dense[l] (attention, router, grouping: the routing is known at its end)
// and then the layer's streamed computes in schedule order.
struct Times {
  std::vector<double> load;        // [loads]
  std::vector<double> compute;     // [computes]
  std::vector<double> dense;       // [layers]
  std::vector<double> slot_free0;  // [n_slots]: when each slot's use before this schedule ended (default 0)
  double start = 0;                // when both streams may begin
};

struct Timeline {
  std::vector<double> load_start, load_end, compute_start, compute_end, dense_end;
  double end = 0;
  bool deadlock = false;
};

// Runs both streams in order, each item as soon as its stream is free and
// what it waits on has ended: load i waits for compute wait_compute (or the
// slot's earlier release), and in Routed mode for the routing of
// known_after_layer; compute i waits for load computes[i].load.
inline Timeline simulate(const strata::prefill::RingSchedule& s, const Times& t) {
  const size_t n_load = s.loads.size(), n_comp = s.computes.size();
  const int n_layer = s.n_layer();
  Timeline out;
  out.load_start.assign(n_load, -1);
  out.load_end.assign(n_load, -1);
  out.compute_start.assign(n_comp, -1);
  out.compute_end.assign(n_comp, -1);
  out.dense_end.assign(n_layer, -1);
  std::vector<double> free0 = t.slot_free0;
  free0.resize(s.n_slots, t.start);

  // Compute stream items: dense of layer l, then its computes.
  struct Item {
    bool dense;
    int index;
  };
  std::vector<Item> cstream;
  for (int l = 0; l < n_layer; ++l) {
    cstream.push_back({true, l});
    for (int i = s.layer_begin[l]; i < s.layer_begin[l + 1]; ++i) cstream.push_back({false, i});
  }
  size_t li = 0, ci = 0;
  double copy_free = t.start, comp_free = t.start;
  while (li < n_load || ci < cstream.size()) {
    bool progress = false;
    if (li < n_load) {
      const auto& ld = s.loads[li];
      double ready = copy_free;
      bool ok = true;
      if (ld.wait_compute >= 0) {
        if (out.compute_end[ld.wait_compute] < 0)
          ok = false;
        else
          ready = std::max(ready, out.compute_end[ld.wait_compute]);
      } else {
        ready = std::max(ready, free0[ld.slot]);
      }
      if (ld.known_after_layer >= 0) {
        if (out.dense_end[ld.known_after_layer] < 0)
          ok = false;
        else
          ready = std::max(ready, out.dense_end[ld.known_after_layer]);
      }
      if (ok) {
        out.load_start[li] = ready;
        out.load_end[li] = copy_free = ready + t.load[li];
        ++li;
        progress = true;
      }
    }
    if (ci < cstream.size()) {
      const Item it = cstream[ci];
      if (it.dense) {
        out.dense_end[it.index] = comp_free = comp_free + t.dense[it.index];
        ++ci;
        progress = true;
      } else {
        const int ld = s.computes[it.index].load;
        if (out.load_end[ld] >= 0) {
          out.compute_start[it.index] = std::max(comp_free, out.load_end[ld]);
          out.compute_end[it.index] = comp_free = out.compute_start[it.index] + t.compute[it.index];
          ++ci;
          progress = true;
        }
      }
    }
    if (!progress) {
      out.deadlock = true;
      return out;
    }
  }
  out.end = std::max(copy_free, comp_free);
  return out;
}

// Safety of a simulated schedule, checked from the timeline alone (not from
// the wait fields): every compute reads the blob its load put in the slot, and
// no later load into that slot starts before the compute has ended. Returns
// "" when safe, else the first violation.
inline std::string check_slots(const strata::prefill::RingSchedule& s, const Timeline& tl) {
  if (tl.deadlock) return "deadlock";
  for (size_t c = 0; c < s.computes.size(); ++c) {
    const auto& cp = s.computes[c];
    const auto& ld = s.loads.at(cp.load);
    if (ld.layer != cp.layer || ld.expert != cp.expert || ld.slot != cp.slot) {
      return "compute " + std::to_string(c) + " reads another blob than its load wrote";
    }
    if (tl.compute_start[c] < tl.load_end[cp.load]) return "compute " + std::to_string(c) + " starts before its load";
    for (size_t j = cp.load + 1; j < s.loads.size(); ++j) {
      if (s.loads[j].slot != cp.slot) continue;
      if (tl.load_start[j] < tl.compute_end[c]) {
        return "load " + std::to_string(j) + " overwrites slot " + std::to_string(cp.slot) + " while compute " +
               std::to_string(c) + " reads it";
      }
      break;  // only the next write into the slot matters
    }
  }
  return "";
}

}  // namespace ring_sim
