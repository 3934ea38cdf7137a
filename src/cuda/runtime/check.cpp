// CUDA error checking: error messages, the STRATA_SYNC_CHECK launch check, argument-check messages.
#include "cuda/runtime/check.h"

#include <cstring>
#include <string>

#include "core/base/env.h"
#include "core/base/error.h"

namespace strata::cuda {
namespace {

// "src/cuda/runtime/memory.cpp" rather than the build machine's absolute path.
const char* short_path(const char* file) {
  const char* s = std::strstr(file, "src/");
  return s ? s : file;
}

strata_status status_of(cudaError_t err) {
  return err == cudaErrorMemoryAllocation ? STRATA_ERR_OUT_OF_MEMORY : STRATA_ERR_DEVICE;
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();
  throw core::Error(status_of(err), fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(err),
                                                cudaGetErrorString(err), call, short_path(file), line));
}

void throw_alloc_error(cudaError_t err, const char* call, size_t bytes, int device, const char* file, int line) {
  cudaGetLastError();
  const std::string where = device < 0 ? std::string("pinned host memory") : fmt::format("device {}", device);
  throw core::Error(status_of(err),
                    fmt::format("CUDA error {} ({}) allocating {} bytes ({:.1f} MiB) of {} in {} at {}:{}",
                                cudaGetErrorName(err), cudaGetErrorString(err), bytes,
                                static_cast<double>(bytes) / (1024.0 * 1024.0), where, call, short_path(file), line));
}

bool sync_check_enabled() noexcept {
  static const bool enabled = core::env_flag(core::EnvVar::SyncCheck);  // asked after every launch
  return enabled;
}

void launch_check(const char* kernel_name, cudaStream_t stream) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw core::Error(status_of(err), fmt::format("CUDA error {} ({}) launching kernel {}", cudaGetErrorName(err),
                                                  cudaGetErrorString(err), kernel_name));
  }
  if (!sync_check_enabled()) return;
  err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw core::Error(status_of(err), fmt::format("CUDA error {} ({}) in kernel {} (STRATA_SYNC_CHECK=1)",
                                                  cudaGetErrorName(err), cudaGetErrorString(err), kernel_name));
  }
}

void fail_need(strata_status status, const char* op, const char* condition, std::initializer_list<ArgValue> values) {
  std::string msg = fmt::format("{}: need {}", op, condition);
  if (values.size() != 0) {
    msg += " (";
    bool first = true;
    for (const ArgValue& v : values) {
      msg += fmt::format("{}{}={}", first ? "" : " ", v.name, v.value);
      first = false;
    }
    msg += ")";
  }
  throw core::Error(status, std::move(msg));
}

}  // namespace strata::cuda
