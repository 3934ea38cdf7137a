// Error checks for the GEMM kernels: the runtime layer's cuda/check.h, or a stand-in with the same API until it lands.
//
// TODO(merge h/cuda): once src/cuda/check.h is in main, delete the #else
// branch (it is never compiled when check.h exists) and include "cuda/check.h"
// directly wherever this header is included.
#pragma once

#if __has_include("cuda/check.h")
#include "cuda/check.h"
#else
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "core/error.h"

namespace strata::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();
  throw core::Error(err == cudaErrorMemoryAllocation ? STRATA_ERR_OUT_OF_MEMORY : STRATA_ERR_DEVICE,
                    std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in " +
                        call + " at " + file + ":" + std::to_string(line));
}

inline void check(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) [[unlikely]]
    throw_cuda_error(err, call, file, line);
}

inline bool sync_check_enabled() noexcept {
  static const bool enabled = [] {
    const char* v = std::getenv("STRATA_SYNC_CHECK");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return enabled;
}

inline void launch_check(const char* kernel_name, cudaStream_t stream) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess && sync_check_enabled()) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) throw_cuda_error(err, "launch", kernel_name, 0);
}

struct ArgValue {
  const char* name;
  int64_t value;
};

[[noreturn]] inline void fail_require(const char* op, const char* condition, std::initializer_list<ArgValue> values) {
  std::string msg = std::string(op) + ": need " + condition;
  if (values.size() != 0) {
    msg += " (";
    bool first = true;
    for (const ArgValue& v : values) {
      msg += (first ? "" : " ") + std::string(v.name) + "=" + std::to_string(v.value);
      first = false;
    }
    msg += ")";
  }
  throw core::Error(STRATA_ERR_INVALID_ARGUMENT, msg);
}

inline void require(bool ok, const char* op, const char* condition, std::initializer_list<ArgValue> values = {}) {
  if (!ok) [[unlikely]]
    fail_require(op, condition, values);
}

}  // namespace strata::cuda

#define STRATA_CUDA_CHECK(call) ::strata::cuda::check((call), #call, __FILE__, __LINE__)
#endif
