// Host helpers of the matrix-kernel launchers: multiprocessor count and the dynamic shared-memory opt-in, per device.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "core/quant/quant.h"
#include "cuda/gemm/gemm_types.h"
#include "cuda/gemm/type_paths.h"
#include "cuda/runtime/check.h"

namespace strata::cuda::gemm_detail {

// Where the kernels find matrix g of a weight set (see WeightSet).
struct MatrixSet {
  const uint8_t* base;
  size_t stride;
  const uint8_t* const* ptrs;
};

inline MatrixSet matrix_set(const WeightSet& w) {
  return MatrixSet{static_cast<const uint8_t*>(w.base), w.stride, w.ptrs};
}

// Checks the weights of a launch: a type with a kernel on `path` (refused
// with UNSUPPORTED otherwise), 0 < n_in < 2^30 a multiple of n_in_multiple,
// 0 < n_out < 2^30, w2 (when not null) of w's type and shape, and every
// matrix 16-byte aligned or given by a pointer table.
inline void check_weights(const char* op, KernelPath path, const WeightSet& w, const WeightSet* w2,
                          int64_t n_in_multiple) {
  require_kernel(path, w.type, op);
  require(w.n_in > 0 && w.n_in % n_in_multiple == 0 && w.n_in < (1 << 30) && w.n_out > 0 && w.n_out < (1 << 30), op,
          "0 < n_in < 2^30 (a multiple of the kernel's K step) and 0 < n_out < 2^30",
          {{"n_in", w.n_in}, {"multiple", n_in_multiple}, {"n_out", w.n_out}});
  require(w2 == nullptr || (w2->type == w.type && w2->n_in == w.n_in && w2->n_out == w.n_out), op,
          "w2 of the same type and shape as w for SwigluPair");
  for (const WeightSet* ws : {&w, w2 != nullptr ? w2 : &w}) {
    require(ws->ptrs != nullptr || (ws->base != nullptr && reinterpret_cast<uintptr_t>(ws->base) % 16 == 0 &&
                                    ws->stride % 16 == 0),
            op, "weights 16-byte aligned (base and stride) or a pointer table",
            {{"stride", static_cast<int64_t>(ws->stride)}});
  }
}

// Launchers never run on the legacy default stream (nullptr or cudaStreamLegacy).
inline void check_stream(const char* op, cudaStream_t stream) {
  require(stream != nullptr && stream != cudaStreamLegacy, op, "an explicit stream, not the legacy default stream");
}

// An attribute of the current device, asked once per device.
template <cudaDeviceAttr kAttr>
inline int device_attribute() {
  static std::atomic<int> cache[64];  // value + 1; 0: not asked yet
  int dev = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&dev));
  std::atomic<int>& slot = cache[dev & 63];
  int n = slot.load(std::memory_order_relaxed);
  if (n == 0) {
    STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&n, kAttr, dev));
    slot.store(++n, std::memory_order_relaxed);
  }
  return n - 1;
}

// Multiprocessors of the current device.
inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }

// Compute capability of the current device, 10 major + minor.
inline int compute_capability() {
  return 10 * device_attribute<cudaDevAttrComputeCapabilityMajor>() +
         device_attribute<cudaDevAttrComputeCapabilityMinor>();
}

// Raises `kernel`'s dynamic shared-memory limit to `bytes` on the current
// device the first time it is launched there (`done` holds one bit per device).
inline void allow_smem(const void* kernel, int bytes, std::atomic<uint64_t>& done) {
  int dev = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&dev));
  const uint64_t bit = uint64_t{1} << (dev & 63);
  if ((done.load(std::memory_order_acquire) & bit) != 0) return;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.fetch_or(bit, std::memory_order_release);
}

}  // namespace strata::cuda::gemm_detail
