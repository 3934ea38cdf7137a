// Phase times of a chunk on a stream.
#include "cuda/runtime/phase_timer.h"

namespace strata::cuda {

void PhaseTimer::start(cudaStream_t s) {
  on_ = true;
  used_ = 0;
  mark(s, nullptr);
}

void PhaseTimer::off() {
  on_ = false;
  used_ = 0;
}

void PhaseTimer::mark(cudaStream_t s, double* phase) {
  if (!on_) return;
  if (used_ == events_.size()) events_.emplace_back(Event(device_, true), nullptr);
  events_[used_].first.record(s);
  events_[used_].second = phase;
  ++used_;
}

void PhaseTimer::collect() {
  for (size_t i = 1; i < used_; ++i)
    if (events_[i].second) *events_[i].second += events_[i].first.elapsed_ms_since(events_[i - 1].first);
}

}  // namespace strata::cuda
