// Streams, events and the current-device guard: RAII over cudaStream_t, cudaEvent_t and cudaSetDevice.
#pragma once

#include <cuda_runtime.h>

namespace strata::cuda {

// Makes `device` current for its lifetime and restores the previous current
// device after. Throws Error(STRATA_ERR_DEVICE) when the device cannot be
// selected (a bad ordinal, a broken driver).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = -1;
  bool switched_ = false;
};

// Runs f() with `device` current and restores the previous device, ignoring
// errors: for release paths in destructors, which cannot report them (a
// failure there means the context is broken and the next checked call says so).
template <typename F>
void on_device_noexcept(int device, F&& f) noexcept {
  int prev = -1;
  const bool switched = cudaGetDevice(&prev) == cudaSuccess && prev != device && cudaSetDevice(device) == cudaSuccess;
  f();
  if (switched) cudaSetDevice(prev);
}

// A CUDA stream: owning (created non-blocking, so it never synchronizes with
// the legacy default stream) or wrapping a caller's stream (not destroyed).
// Move-only.
class Stream {
 public:
  Stream() = default;
  // Creates a non-blocking stream on `device`; priority as for
  // cudaStreamCreateWithPriority (0 = default, lower = higher priority).
  explicit Stream(int device, int priority = 0);
  // Wraps `stream` of `device` without owning it. The legacy default stream
  // (nullptr or cudaStreamLegacy) is refused with
  // Error(STRATA_ERR_INVALID_ARGUMENT): the engine never runs on it.
  static Stream wrap(cudaStream_t stream, int device);
  ~Stream() { reset(); }
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const noexcept { return stream_; }
  int device() const noexcept { return device_; }
  bool owning() const noexcept { return owning_; }
  // Blocks until all work queued on the stream has finished; throws on a
  // failure of that work.
  void synchronize() const;
  void reset() noexcept;

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
  bool owning_ = false;
};

// A CUDA event on one device. Without timing (the default) it is cheaper to
// record and wait on. Move-only.
class Event {
 public:
  Event() = default;
  explicit Event(int device, bool timing = false);
  ~Event() { reset(); }
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const noexcept { return event_; }
  bool timing() const noexcept { return timing_; }
  // Records the event at the current end of `stream`.
  void record(cudaStream_t stream);
  void record(const Stream& stream) { record(stream.get()); }
  // Makes `stream` wait (on the device, not the host) until the event's work is done.
  void wait_from(cudaStream_t stream) const;
  void wait_from(const Stream& stream) const { wait_from(stream.get()); }
  // Blocks the host until the event has completed.
  void synchronize() const;
  // True when the event has completed (or was never recorded).
  bool done() const;
  // Milliseconds from `start` to this event; both must have timing on and
  // have completed (throws Error(STRATA_ERR_INVALID_ARGUMENT) without timing).
  float elapsed_ms_since(const Event& start) const;
  void reset() noexcept;

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
  bool timing_ = false;
};

}  // namespace strata::cuda
