// DeviceRing: slots, the copy stream and the load/release events of a ring schedule.
#include "cuda/ring.h"

#include <algorithm>

#include "core/error.h"

namespace strata::cuda {

DeviceRing::DeviceRing(int device, int32_t n_slots, uint64_t slot_bytes)
    : device_(device),
      n_slots_(n_slots),
      slot_bytes_(slot_bytes),
      copy_(device),
      slots_(device, static_cast<size_t>(n_slots) * slot_bytes) {
  for (int32_t s = 0; s < n_slots; ++s) released_.emplace_back(device);
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
  for (int32_t j = 0; j < std::min(n, n_slots_); ++j) enqueue_load(j);
}

void DeviceRing::enqueue_load(int32_t j) {
  const prefill::RingLoad& load = schedule_->loads[j];
  const Blob blob = source_(load);
  if (blob.bytes > slot_bytes_)
    core::fail(STRATA_ERR_INTERNAL, "ring: blob of {} bytes for a slot of {}", blob.bytes, slot_bytes_);
  // The slot's last reader: compute j - n_slots of this schedule, or one of an
  // earlier schedule; either way its release is the event's latest record.
  released_[load.slot].wait_from(copy_);
  copy_async(slot(load.slot), blob.host, blob.bytes, copy_.get());
  loaded_[j].record(copy_);
  bytes_ += blob.bytes;
  enqueued_ = j + 1;
}

void DeviceRing::wait(int32_t i, cudaStream_t compute) {
  if (i >= enqueued_) core::fail(STRATA_ERR_INTERNAL, "ring: compute {} before its load was enqueued", i);
  loaded_[i].wait_from(compute);
}

void DeviceRing::release_through(int32_t i, cudaStream_t compute) {
  for (int32_t c = released_through_ + 1; c <= i; ++c) released_[schedule_->computes[c].slot].record(compute);
  released_through_ = std::max(released_through_, i);
  const auto n = static_cast<int32_t>(schedule_->loads.size());
  while (enqueued_ < n && enqueued_ - n_slots_ <= released_through_) enqueue_load(enqueued_);
}

}  // namespace strata::cuda
