// DeviceRing: slots, the copy stream and the load/release events of a ring schedule.
#include "cuda/runtime/ring.h"

#include <algorithm>

#include "core/base/error.h"

namespace strata::cuda {

DeviceRing::DeviceRing(int device, int32_t n_slots, uint64_t slot_bytes)
    : device_(device),
      n_slots_(n_slots),
      slot_bytes_(slot_bytes),
      copy_(device),
      slots_(device, static_cast<size_t>(n_slots) * slot_bytes),
      slot_release_(static_cast<size_t>(n_slots), -1) {
  for (int32_t s = 0; s <= n_slots; ++s) releases_.emplace_back(device);
}

void DeviceRing::begin(const prefill::RingSchedule& schedule, Source source) {
  if (schedule.n_slots != n_slots_)
    core::fail(STRATA_ERR_INTERNAL, "ring: a schedule of {} slots for a ring of {}", schedule.n_slots, n_slots_);
  schedule_ = &schedule;
  source_ = std::move(source);
  enqueued_ = 0;
  released_through_ = -1;
  const auto n = static_cast<int32_t>(schedule.loads.size());
  while (static_cast<int32_t>(loaded_.size()) < n) loaded_.emplace_back(device_);
  run_end_.assign(static_cast<size_t>(n), -1);
  enqueue_loads(std::min(n, n_slots_));
}

void DeviceRing::enqueue_loads(int32_t end) {
  while (enqueued_ < end) {
    // A run: adjacent blobs into adjacent slots, each blob filling its slot.
    const int32_t first = enqueued_;
    const prefill::RingLoad& head = schedule_->loads[first];
    const Blob blob = source_(head);
    if (blob.bytes > slot_bytes_)
      core::fail(STRATA_ERR_INTERNAL, "ring: blob of {} bytes for a slot of {}", blob.bytes, slot_bytes_);
    int32_t last = first;
    uint64_t bytes = blob.bytes;
    while (blob.bytes == slot_bytes_ && last + 1 < end && last + 1 - first < kRunLoads) {
      const prefill::RingLoad& next = schedule_->loads[last + 1];
      const Blob b = source_(next);
      if (next.slot != schedule_->loads[last].slot + 1 || b.bytes != slot_bytes_ ||
          static_cast<const uint8_t*>(b.host) != static_cast<const uint8_t*>(blob.host) + bytes)
        break;
      ++last;
      bytes += b.bytes;
    }
    // The slots' last readers: computes of this schedule or of an earlier one;
    // their release events' latest records either way.
    for (int32_t j = first; j <= last; ++j) {
      const int32_t r = slot_release_[schedule_->loads[j].slot];
      if (r >= 0 && r != copy_waited_) {
        releases_[r].wait_from(copy_);
        copy_waited_ = r;
      }
    }
    copy_async(slot(head.slot), blob.host, bytes, copy_.get());
    loaded_[last].record(copy_);
    for (int32_t j = first; j <= last; ++j) run_end_[j] = last;
    bytes_ += bytes;
    enqueued_ = last + 1;
  }
}

void DeviceRing::wait(int32_t i, cudaStream_t compute) {
  if (i >= enqueued_) core::fail(STRATA_ERR_INTERNAL, "ring: compute {} before its load was enqueued", i);
  loaded_[run_end_[i]].wait_from(compute);
}

void DeviceRing::release_through(int32_t i, cudaStream_t compute) {
  if (i <= released_through_) return;
  const int32_t r = next_release_;
  next_release_ = (next_release_ + 1) % static_cast<int32_t>(releases_.size());
  releases_[r].record(compute);
  if (copy_waited_ == r) copy_waited_ = -1;  // a new record: the copy stream has not waited on it
  for (int32_t c = released_through_ + 1; c <= i; ++c) slot_release_[schedule_->computes[c].slot] = r;
  released_through_ = i;
  const auto n = static_cast<int32_t>(schedule_->loads.size());
  enqueue_loads(std::min(n, released_through_ + 1 + n_slots_));
}

}  // namespace strata::cuda
