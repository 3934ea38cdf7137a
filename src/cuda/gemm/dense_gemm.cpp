// Dense prompt GEMMs through an F16 copy of the matrix (or F16 pairs) and cuBLAS (dense_gemm.h).
#include "cuda/gemm/dense_gemm.h"

#include <cublas_v2.h>

#include "core/base/env.h"
#include "core/base/error.h"
#include "cuda/gemm/f16_weights.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/stream.h"

namespace strata::cuda {
namespace {

constexpr size_t kWorkspace = core::kDenseF16Workspace;  // what cuBLAS asks for on Hopper

void check_cublas(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    core::fail(st == CUBLAS_STATUS_ALLOC_FAILED ? STRATA_ERR_OUT_OF_MEMORY : STRATA_ERR_DEVICE, "cuBLAS: {}: {}",
               call, cublasGetStatusString(st));
}

cublasHandle_t as_handle(void* h) { return static_cast<cublasHandle_t>(h); }

void require_epilogue(Epilogue epi, const char* op) {
  require(epi == Epilogue::Store || epi == Epilogue::Add, op, "epilogue Store or Add",
          {{"epi", static_cast<int64_t>(epi)}});
}

}  // namespace

bool dense_gemm_enabled() {
  return core::env_value(core::EnvVar::Gemm) == nullptr;
}

DenseGemm::DenseGemm(int device, int64_t max_weights)
    : device_(device), max_weights_(max_weights),
      f16_(device, static_cast<size_t>(max_weights) * sizeof(uint16_t)), workspace_(device, kWorkspace) {
  ScopedDevice on(device);
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), "cublasCreate");
  handle_ = h;
  const cublasStatus_t st = cublasSetWorkspace(h, workspace_.data(), workspace_.size());
  if (st != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    check_cublas(st, "cublasSetWorkspace");
  }
}

DenseGemm::~DenseGemm() {
  on_device_noexcept(device_, [&] { cublasDestroy(as_handle(handle_)); });
}

bool DenseGemm::takes(core::GgmlType type, int64_t n_in, int64_t n_out, int64_t T) const {
  return has_kernel(KernelPath::F16Decode, type) && T >= kDenseGemmMinRows && T < (1LL << 31) && n_in % 256 == 0 &&
         n_in < (1LL << 31) && n_out < (1LL << 31) && n_in * n_out <= max_weights_;
}

void DenseGemm::gemm(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, int64_t m, int64_t n, int64_t k,
                     float alpha, float beta, float* y, cudaStream_t stream) {
  cublasHandle_t h = as_handle(handle_);
  check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  check_cublas(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                            &alpha, a, CUDA_R_16F, static_cast<int>(lda), b, CUDA_R_16F, static_cast<int>(ldb), &beta,
                            y, CUDA_R_32F, static_cast<int>(m), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

void DenseGemm::run(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const uint16_t* x, int64_t T,
                    float* y, Epilogue epi, cudaStream_t stream) {
  constexpr const char* op = "dense_gemm";
  require_stream(stream, op);
  require(takes(type, n_in, n_out, T), op, "a quantized matrix that fits the F16 copy, n_in % 256 == 0, T >= min rows",
          {{"n_in", n_in}, {"n_out", n_out}, {"T", T}, {"max_weights", max_weights_}});
  require_epilogue(epi, op);
  require(x != nullptr && y != nullptr, op, "x and y");
  ScopedDevice on(device_);
  uint16_t* wh = f16_.as<uint16_t>();
  decode_f16_weights(type, w, n_in, n_out, wh, stream);
  // Row-major Y[T][n_out] = X[T][n_in] . W^T is column-major Y^T = W . X^T: A = W (stored n_in x n_out, transposed),
  // B = X (n_in x T).
  gemm(wh, n_in, x, n_in, n_out, T, n_in, 1.0f, epi == Epilogue::Add ? 1.0f : 0.0f, y, stream);
}

bool DenseGemm::takes_f32(int64_t n_in, int64_t n_out, int64_t T, size_t scratch_bytes) const {
  return T >= kDenseGemmMinRows && T < (1LL << 31) && n_in >= 4 && n_in % 4 == 0 && 2 * n_in < (1LL << 31) &&
         n_out < (1LL << 31) && 2 * n_in * n_out <= max_weights_ && f32_scratch_bytes(n_in, T) <= scratch_bytes;
}

void DenseGemm::run_f32(const float* w, int64_t n_in, int64_t n_out, const float* x, int64_t T, float* y,
                        Epilogue epi, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  constexpr const char* op = "dense_gemm_f32";
  require_stream(stream, op);
  require(takes_f32(n_in, n_out, T, scratch_bytes), op,
          "an F32 matrix whose pairs fit the F16 copy, n_in % 4 == 0, T >= min rows, scratch for x's pairs",
          {{"n_in", n_in},
           {"n_out", n_out},
           {"T", T},
           {"max_weights", max_weights_},
           {"scratch_bytes", static_cast<int64_t>(scratch_bytes)}});
  require_epilogue(epi, op);
  require(w != nullptr && x != nullptr && y != nullptr && scratch != nullptr, op, "w, x, y and scratch");
  ScopedDevice on(device_);
  // Rows of W as [lo | hi], of X as [hi | lo]: hi.hi over the first n_in values of X's rows and the last of W's,
  // then hi.lo + lo.hi over all 2 n_in values of both, scaled back by 2^-11.
  uint16_t* wp = f16_.as<uint16_t>();
  auto* xp = static_cast<uint16_t*>(scratch);
  split_f16_rows(w, n_out, n_in, false, wp, stream);
  split_f16_rows(x, T, n_in, true, xp, stream);
  gemm(wp + n_in, 2 * n_in, xp, 2 * n_in, n_out, T, n_in, 1.0f, epi == Epilogue::Add ? 1.0f : 0.0f, y, stream);
  gemm(wp, 2 * n_in, xp, 2 * n_in, n_out, T, 2 * n_in, 1.0f / kSplitLoScale, 1.0f, y, stream);
}

}  // namespace strata::cuda
