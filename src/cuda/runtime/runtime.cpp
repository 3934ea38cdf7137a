// CUDA runtime queries: the device count and each device's properties, for the backend's registry entry and the tests.
#include "cuda/runtime/runtime.h"

#include <cuda_runtime.h>

#include "core/base/error.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/stream.h"

namespace strata::cuda {

int device_count() noexcept {
  int n = 0;
  // No driver or no GPU is a normal situation here: report zero devices.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not poisoned
    return 0;
  }
  return n;
}

DeviceInfo device_info(int ordinal) {
  const int n = device_count();
  if (ordinal < 0 || ordinal >= n) {
    core::fail(STRATA_ERR_DEVICE, "CUDA device {} does not exist ({} device{} found)", ordinal, n, n == 1 ? "" : "s");
  }
  cudaDeviceProp prop{};
  STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.total_mem = prop.totalGlobalMem;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.can_map_host = prop.canMapHostMemory != 0;
  ScopedDevice on(ordinal);
  size_t free_b = 0, total_b = 0;
  STRATA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  info.free_mem = free_b;
  return info;
}

}  // namespace strata::cuda
