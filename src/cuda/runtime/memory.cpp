// Owned memory: device buffers (cudaMalloc) and pinned host buffers (cudaHostAlloc), plus checked async copies.
#include "cuda/runtime/memory.h"

#include <utility>

#include "cuda/runtime/check.h"
#include "cuda/runtime/stream.h"

namespace strata::cuda {

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : bytes_(bytes), device_(device) {
  if (bytes == 0) return;
  ScopedDevice on(device);
  STRATA_CUDA_CHECK_ALLOC(cudaMalloc(&ptr_, bytes), bytes, device);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(std::exchange(other.device_, -1)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != nullptr) on_device_noexcept(device_, [&] { cudaFree(ptr_); });
  ptr_ = nullptr;
  bytes_ = 0;
  device_ = -1;
}

HostBuffer::HostBuffer(size_t bytes, unsigned flags) : bytes_(bytes), flags_(flags) {
  if (bytes == 0) return;
  STRATA_CUDA_CHECK_ALLOC(cudaHostAlloc(&ptr_, bytes, flags), bytes, -1);
  if (flags & cudaHostAllocMapped) {
    const cudaError_t err = cudaHostGetDevicePointer(&device_ptr_, ptr_, 0);
    if (err != cudaSuccess) {
      cudaFreeHost(ptr_);
      ptr_ = nullptr;
      bytes_ = 0;
      STRATA_CUDA_CHECK(err);
    }
  }
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      device_ptr_(std::exchange(other.device_ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      flags_(std::exchange(other.flags_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    device_ptr_ = std::exchange(other.device_ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    flags_ = std::exchange(other.flags_, 0);
  }
  return *this;
}

void HostBuffer::reset() noexcept {
  if (ptr_ != nullptr) cudaFreeHost(ptr_);
  ptr_ = nullptr;
  device_ptr_ = nullptr;
  bytes_ = 0;
  flags_ = 0;
}

void copy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  require_stream(stream, "copy_async");
  if (bytes == 0) return;
  STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
}

void memset_async(void* dst, int value, size_t bytes, cudaStream_t stream) {
  require_stream(stream, "memset_async");
  if (bytes == 0) return;
  STRATA_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream));
}

double measure_h2d_GBps(int device, const void* pinned, size_t bytes, int rounds) {
  if (bytes == 0 || rounds < 1) return 0;
  ScopedDevice on(device);
  Stream stream(device);
  DeviceBuffer scratch(device, bytes);
  Event start(device, true), stop(device, true);
  copy_async(scratch.data(), pinned, bytes, stream.get());
  start.record(stream);
  for (int i = 0; i < rounds; ++i) copy_async(scratch.data(), pinned, bytes, stream.get());
  stop.record(stream);
  stop.synchronize();
  const double ms = stop.elapsed_ms_since(start);
  return ms > 0 ? static_cast<double>(bytes) * rounds / (ms * 1e6) : 0;
}

}  // namespace strata::cuda
