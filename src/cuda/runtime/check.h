// CUDA error checking: STRATA_CUDA_CHECK, launch checks, argument checks usable from .cu files (which cannot include fmt).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "strata/strata.h"

namespace strata::cuda {

// Throws core::Error for a failed CUDA call: STRATA_ERR_OUT_OF_MEMORY for
// cudaErrorMemoryAllocation, STRATA_ERR_DEVICE otherwise, with the error name
// and string, the call's text, file and line. Clears the (non-sticky) last
// error first so that later calls are not reported as failing too.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

// As throw_cuda_error, for an allocation of `bytes` that the caller knows:
// the message names the bytes and the device (-1: pinned host memory).
[[noreturn]] void throw_alloc_error(cudaError_t err, const char* call, size_t bytes, int device, const char* file,
                                    int line);

inline void check(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) [[unlikely]]
    throw_cuda_error(err, call, file, line);
}

inline void check_alloc(cudaError_t err, const char* call, size_t bytes, int device, const char* file, int line) {
  if (err != cudaSuccess) [[unlikely]]
    throw_alloc_error(err, call, bytes, device, file, line);
}

// After a kernel launch: cudaGetLastError() (launch configuration errors),
// and when STRATA_SYNC_CHECK=1 (read once per process) a synchronize of
// `stream` so that a fault inside the kernel is reported at this launch, with
// its name, rather than at some later call.
void launch_check(const char* kernel_name, cudaStream_t stream);

// Whether STRATA_SYNC_CHECK=1 was set when first asked.
bool sync_check_enabled() noexcept;

// A named integer for argument-check messages.
struct ArgValue {
  const char* name;
  int64_t value;
};

// Throws Error(status) "op: need condition (name=value ...)".
[[noreturn]] void fail_need(strata_status status, const char* op, const char* condition,
                            std::initializer_list<ArgValue> values);

// Argument check for launchers: the message names the op, the broken
// condition and the values involved.
inline void require(bool ok, const char* op, const char* condition, std::initializer_list<ArgValue> values = {}) {
  if (!ok) [[unlikely]]
    fail_need(STRATA_ERR_INVALID_ARGUMENT, op, condition, values);
}

// Refuses the legacy default stream (nullptr or cudaStreamLegacy) with
// Error(STRATA_ERR_INVALID_ARGUMENT): the engine never queues work on it,
// since it synchronizes with every blocking stream of the device.
inline void require_stream(cudaStream_t stream, const char* op) {
  require(stream != nullptr && stream != cudaStreamLegacy, op, "a stream other than the legacy default stream");
}

}  // namespace strata::cuda

// Checks a CUDA runtime call; throws core::Error on failure (see throw_cuda_error).
#define STRATA_CUDA_CHECK(call) ::strata::cuda::check((call), #call, __FILE__, __LINE__)
// Checks an allocation call of `bytes` on `device` (-1 for host); the error names the bytes.
#define STRATA_CUDA_CHECK_ALLOC(call, bytes, device) \
  ::strata::cuda::check_alloc((call), #call, (bytes), (device), __FILE__, __LINE__)
