// CpuRing: the CPU backend's execution of a ring schedule: slot buffers, a copy thread standing in for the copy
// stream, and counters standing in for the CUDA events.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "prefill/ring.h"

namespace strata::core::cpu {

class CpuRing {
 public:
  // Where load i's blob comes from and how many bytes it has.
  struct Blob {
    const uint8_t* data = nullptr;
    uint64_t bytes = 0;
  };
  using Source = std::function<Blob(const prefill::RingLoad&)>;

  CpuRing(int32_t n_slots, uint64_t slot_bytes);
  ~CpuRing();
  CpuRing(const CpuRing&) = delete;
  CpuRing& operator=(const CpuRing&) = delete;

  // Starts copying the schedule's loads in order on the copy thread: load i
  // copies its blob into its slot once compute wait_compute has been
  // released (-1: at once, the previous schedule being finished). The
  // schedule must outlive finish().
  void start(const prefill::RingSchedule& schedule, Source source);
  // Blocks until load i has landed; returns its slot. Rethrows an error of the copy thread.
  const uint8_t* wait_loaded(int32_t i);
  // Compute i has read its slot: the load waiting for it may start.
  void release(int32_t i);
  // Waits for the copy thread to end (every load done, or stopped after an
  // error on either side) and rethrows its error. Called by the destructor
  // without rethrowing.
  void finish();

  uint8_t* slot(int32_t s) const { return slots_.get() + static_cast<uint64_t>(s) * slot_bytes_; }
  int32_t n_slots() const { return n_slots_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint64_t bytes_copied() const { return bytes_copied_; }
  double wait_ms() const { return wait_ms_; }

 private:
  void copy_loop(Source source);
  void stop();

  int32_t n_slots_;
  uint64_t slot_bytes_;
  std::unique_ptr<uint8_t[]> slots_;
  const prefill::RingSchedule* schedule_ = nullptr;
  std::thread copier_;
  std::mutex mu_;
  std::condition_variable cv_;
  int32_t loaded_ = 0;    // loads landed
  int32_t released_ = 0;  // computes released (they release in order)
  bool stopping_ = false;
  std::exception_ptr error_;
  uint64_t bytes_copied_ = 0;
  double wait_ms_ = 0;
};

}  // namespace strata::core::cpu
