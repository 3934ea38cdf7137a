// CUDA runtime queries that the CUDA-free core may call.
#include "cuda/runtime.h"

#include <cuda_runtime.h>

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

}  // namespace strata::cuda
