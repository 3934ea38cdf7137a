// CpuRing: a copy thread that fills slots in schedule order, gated on the computes that free them.
#include "cpu/ring_runner.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "core/base/error.h"

namespace strata::core::cpu {

CpuRing::CpuRing(int32_t n_slots, uint64_t slot_bytes)
    : n_slots_(n_slots), slot_bytes_(slot_bytes), slots_(new uint8_t[static_cast<size_t>(n_slots) * slot_bytes]) {}

CpuRing::~CpuRing() {
  stop();
  if (copier_.joinable()) copier_.join();
}

void CpuRing::start(const prefill::RingSchedule& schedule, Source source) {
  finish();
  if (schedule.n_slots != n_slots_)
    fail(STRATA_ERR_INTERNAL, "ring: a schedule of {} slots for a ring of {}", schedule.n_slots, n_slots_);
  schedule_ = &schedule;
  loaded_ = released_ = 0;
  stopping_ = false;
  error_ = nullptr;
  copier_ = std::thread(&CpuRing::copy_loop, this, std::move(source));
}

void CpuRing::copy_loop(Source source) {
  try {
    for (const prefill::RingLoad& load : schedule_->loads) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || released_ > load.wait_compute; });
        if (stopping_) return;
      }
      const Blob blob = source(load);
      if (blob.bytes > slot_bytes_)
        fail(STRATA_ERR_INTERNAL, "ring: blob of {} bytes for a slot of {}", blob.bytes, slot_bytes_);
      std::memcpy(slot(load.slot), blob.data, blob.bytes);
      std::lock_guard lock(mu_);
      bytes_copied_ += blob.bytes;
      ++loaded_;
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard lock(mu_);
    error_ = std::current_exception();
    stopping_ = true;
    cv_.notify_all();
  }
}

const uint8_t* CpuRing::wait_loaded(int32_t i) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return loaded_ > i || error_ || stopping_; });
  wait_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (error_) std::rethrow_exception(error_);
  if (loaded_ <= i) fail(STRATA_ERR_INTERNAL, "ring: load {} waited for after the ring stopped", i);
  return slot(schedule_->loads[i].slot);
}

void CpuRing::release(int32_t i) {
  std::lock_guard lock(mu_);
  released_ = i + 1;
  cv_.notify_all();
}

void CpuRing::stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

void CpuRing::finish() {
  if (!copier_.joinable()) return;
  {
    // Done when every load landed; otherwise (an error on the compute side) stop the copies now.
    std::lock_guard lock(mu_);
    if (schedule_ && loaded_ < static_cast<int32_t>(schedule_->loads.size())) stopping_ = true;
    cv_.notify_all();
  }
  copier_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace strata::core::cpu
