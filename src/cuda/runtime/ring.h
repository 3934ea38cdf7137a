// DeviceRing: a session's expert ring on one device: VRAM slots, the copy stream that fills them from the pinned
// host arena, and the events that order loads against the computes reading the slots.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cuda/runtime/memory.h"
#include "cuda/runtime/stream.h"
#include "prefill/ring.h"

namespace strata::cuda {

// Executes a prefill::RingSchedule. Load j copies its blob into its slot on
// the copy stream after the release of that slot by compute j - n_slots (an
// event recorded on the compute stream); compute i waits for load i's event.
// A CUDA event wait binds to the event's latest record at enqueue time, so a
// load is enqueued only once the compute it waits for has been enqueued
// (release_through), and a compute only after its load (loads run ahead).
//
// Host work per blob is what limits a stream-all chunk (the host enqueues a
// layer's loads between its routing and its experts), so: one release event
// per release_through call, not per slot; a load waits on a release event
// only when the copy stream has not already waited on it; and consecutive
// loads whose blobs are adjacent in the arena and whose slots are adjacent
// go as one copy (up to kRunLoads), with one completion event for the run
// (a compute waiting for any of its loads waits for the run: never for a
// load whose slot a later compute must release, since a run is shorter than
// the ring).
class DeviceRing {
 public:
  struct Blob {
    const void* host = nullptr;  // pinned
    uint64_t bytes = 0;
  };
  using Source = std::function<Blob(const prefill::RingLoad&)>;

  // Throws Error(OUT_OF_MEMORY) naming the bytes when the slots do not fit.
  DeviceRing(int device, int32_t n_slots, uint64_t slot_bytes);

  // Starts a schedule (kept by reference until the next begin()): enqueues
  // its first n_slots loads, whose slots were released by earlier schedules.
  void begin(const prefill::RingSchedule& schedule, Source source);
  // Makes `compute` wait until load i has landed (and, the copy stream being
  // in order, every load before it).
  void wait(int32_t i, cudaStream_t compute);
  // Device address of slot s.
  uint8_t* slot(int32_t s) const { return slots_.as<uint8_t>() + static_cast<uint64_t>(s) * slot_bytes_; }
  // Computes up to i (inclusive) are enqueued on `compute`: records their
  // slots' releases and enqueues the loads that were waiting for them.
  void release_through(int32_t i, cudaStream_t compute);

  int32_t n_slots() const { return n_slots_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint64_t device_bytes() const { return slots_.size(); }
  // Bytes of every load enqueued so far.
  uint64_t bytes_enqueued() const { return bytes_; }

 private:
  // Enqueues loads [enqueued_, end) in runs.
  void enqueue_loads(int32_t end);
  static constexpr int32_t kRunLoads = 16;

  int device_;
  int32_t n_slots_;
  uint64_t slot_bytes_;
  Stream copy_;
  DeviceBuffer slots_;
  std::vector<Event> loaded_;       // per load of the schedule (grown on demand, reused); recorded at run ends
  std::vector<int32_t> run_end_;    // per load: the last load of its run (whose event marks it landed)
  std::vector<Event> releases_;     // n_slots + 1 release events, recorded round robin
  std::vector<int32_t> slot_release_;  // per slot: the release event recorded after its last reader (-1: none)
  int32_t next_release_ = 0;
  int32_t copy_waited_ = -1;        // the release event the copy stream last waited on
  const prefill::RingSchedule* schedule_ = nullptr;
  Source source_;
  int32_t enqueued_ = 0;  // loads of this schedule on the copy stream
  int32_t released_through_ = -1;
  uint64_t bytes_ = 0;
};

}  // namespace strata::cuda
