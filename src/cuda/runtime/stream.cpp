// Streams, events and the current-device guard: RAII over cudaStream_t, cudaEvent_t and cudaSetDevice.
#include "cuda/runtime/stream.h"

#include <utility>

#include "cuda/runtime/check.h"

namespace strata::cuda {
ScopedDevice::ScopedDevice(int device) {
  require(device >= 0, "ScopedDevice", "a device ordinal >= 0", {{"device", device}});
  STRATA_CUDA_CHECK(cudaGetDevice(&prev_));
  if (prev_ != device) {
    STRATA_CUDA_CHECK(cudaSetDevice(device));
    switched_ = true;
  }
}

ScopedDevice::~ScopedDevice() {
  if (switched_) cudaSetDevice(prev_);
}

Stream::Stream(int device, int priority) : device_(device), owning_(true) {
  ScopedDevice on(device);
  STRATA_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
}

Stream Stream::wrap(cudaStream_t stream, int device) {
  require(stream != nullptr && stream != cudaStreamLegacy, "Stream::wrap",
          "a stream other than the legacy default stream");
  Stream s;
  s.stream_ = stream;
  s.device_ = device;
  s.owning_ = false;
  return s;
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)),
      device_(std::exchange(other.device_, -1)),
      owning_(std::exchange(other.owning_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = std::exchange(other.device_, -1);
    owning_ = std::exchange(other.owning_, false);
  }
  return *this;
}

void Stream::synchronize() const { STRATA_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void Stream::reset() noexcept {
  if (owning_ && stream_ != nullptr) on_device_noexcept(device_, [&] { cudaStreamDestroy(stream_); });
  stream_ = nullptr;
  device_ = -1;
  owning_ = false;
}

Event::Event(int device, bool timing) : device_(device), timing_(timing) {
  ScopedDevice on(device);
  STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)),
      device_(std::exchange(other.device_, -1)),
      timing_(std::exchange(other.timing_, false)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
    device_ = std::exchange(other.device_, -1);
    timing_ = std::exchange(other.timing_, false);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { STRATA_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::wait_from(cudaStream_t stream) const { STRATA_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

void Event::synchronize() const { STRATA_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::done() const {
  const cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) return false;
  STRATA_CUDA_CHECK(err);
  return true;
}

float Event::elapsed_ms_since(const Event& start) const {
  require(timing_ && start.timing_, "Event::elapsed_ms_since", "both events created with timing on");
  float ms = 0.0f;
  STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

void Event::reset() noexcept {
  if (event_ != nullptr) on_device_noexcept(device_, [&] { cudaEventDestroy(event_); });
  event_ = nullptr;
  device_ = -1;
  timing_ = false;
}

}  // namespace strata::cuda
