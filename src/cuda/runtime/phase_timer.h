// Phase times of a chunk on a stream: events at phase boundaries, summed into PhaseTimes once the chunk is done.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/runtime/stream.h"

namespace strata::cuda {

// Off (marks ignored) for a step run as a graph: events recorded during a
// capture would become graph nodes.
class PhaseTimer {
 public:
  explicit PhaseTimer(int device) : device_(device) {}
  // On, with the first boundary now.
  void start(cudaStream_t s);
  void off();
  // Charges the time since the previous mark to *phase (none when null).
  void mark(cudaStream_t s, double* phase);
  // Adds each phase's time; the stream must have passed the last mark.
  void collect();

 private:
  int device_;
  std::vector<std::pair<Event, double*>> events_;
  size_t used_ = 0;
  bool on_ = false;
};

}  // namespace strata::cuda
