// Owned memory: device buffers (cudaMalloc) and pinned host buffers (cudaHostAlloc), plus checked async copies.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace strata::cuda {

// Device memory on one device. Move-only; freed when destroyed. A zero-size
// buffer allocates nothing and has data() == nullptr.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` on `device` (the current device is restored after).
  // Throws Error(STRATA_ERR_OUT_OF_MEMORY) naming the bytes and the device
  // when they do not fit, Error(STRATA_ERR_DEVICE) for other failures.
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return ptr_; }
  template <typename T>
  T* as() const noexcept {
    return static_cast<T*>(ptr_);
  }
  // Elements of T that fit.
  template <typename T>
  size_t count() const noexcept {
    return bytes_ / sizeof(T);
  }
  size_t size() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }
  // Frees the memory now (synchronizes the device, as cudaFree does).
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

// Page-locked host memory. Move-only; freed when destroyed. `flags` are
// cudaHostAlloc flags; with cudaHostAllocMapped, device_ptr() is the address
// kernels use to read it over the link (the same on every device under UVA).
class HostBuffer {
 public:
  HostBuffer() = default;
  // Throws Error(STRATA_ERR_OUT_OF_MEMORY) naming the bytes when the pinned
  // allocation fails, Error(STRATA_ERR_DEVICE) for other failures.
  explicit HostBuffer(size_t bytes, unsigned flags = cudaHostAllocPortable);
  ~HostBuffer() { reset(); }
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* data() const noexcept { return ptr_; }
  template <typename T>
  T* as() const noexcept {
    return static_cast<T*>(ptr_);
  }
  template <typename T>
  size_t count() const noexcept {
    return bytes_ / sizeof(T);
  }
  size_t size() const noexcept { return bytes_; }
  bool mapped() const noexcept { return device_ptr_ != nullptr; }
  // nullptr unless allocated with cudaHostAllocMapped.
  void* device_ptr() const noexcept { return device_ptr_; }
  template <typename T>
  T* device_as() const noexcept {
    return static_cast<T*>(device_ptr_);
  }
  unsigned flags() const noexcept { return flags_; }
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  void* device_ptr_ = nullptr;
  size_t bytes_ = 0;
  unsigned flags_ = 0;
};

// Pinned host-to-device copy rate of `device` in GB/s (1e9 B/s): `rounds`
// copies of `bytes` from `pinned` into a scratch device buffer on a fresh
// stream, timed with events (the first copy, a warm-up, not counted).
double measure_h2d_GBps(int device, const void* pinned, size_t bytes, int rounds = 4);

// Checked cudaMemcpyAsync (cudaMemcpyDefault) / cudaMemsetAsync on `stream`;
// bytes == 0 is a no-op. Like every launcher, they refuse the legacy default
// stream with Error(STRATA_ERR_INVALID_ARGUMENT).
void copy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream);
void memset_async(void* dst, int value, size_t bytes, cudaStream_t stream);

}  // namespace strata::cuda
