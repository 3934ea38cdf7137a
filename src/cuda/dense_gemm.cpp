// Dense prompt GEMMs through an F16 copy of the matrix and cuBLAS (dense_gemm.h).
#include "cuda/dense_gemm.h"

#include <cublas_v2.h>

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/f16_weights.cuh"
#include "cuda/gemm_host.h"
#include "cuda/stream.h"

namespace strata::cuda {
namespace {

constexpr size_t kWorkspace = core::kDenseF16Workspace;  // what cuBLAS asks for on Hopper

void check_cublas(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    core::fail(st == CUBLAS_STATUS_ALLOC_FAILED ? STRATA_ERR_OUT_OF_MEMORY : STRATA_ERR_DEVICE, "cuBLAS: {}: {}",
               call, cublasGetStatusString(st));
}

cublasHandle_t as_handle(void* h) { return static_cast<cublasHandle_t>(h); }

}  // namespace

bool dense_gemm_enabled() {
  static const bool on = std::getenv("STRATA_GEMM") == nullptr;
  return on;
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
  return gemm_detail::quantized_type(type) && T >= kDenseGemmMinRows && T < (1LL << 31) && n_in % 256 == 0 &&
         n_in < (1LL << 31) && n_out < (1LL << 31) && n_in * n_out <= max_weights_;
}

void DenseGemm::run(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const uint16_t* x, int64_t T,
                    float* y, Epilogue epi, cudaStream_t stream) {
  constexpr const char* op = "dense_gemm";
  require_stream(stream, op);
  require(takes(type, n_in, n_out, T), op, "a quantized matrix that fits the F16 copy, n_in % 256 == 0, T >= min rows",
          {{"n_in", n_in}, {"n_out", n_out}, {"T", T}, {"max_weights", max_weights_}});
  require(epi == Epilogue::Store || epi == Epilogue::Add, op, "epilogue Store or Add",
          {{"epi", static_cast<int64_t>(epi)}});
  require(x != nullptr && y != nullptr, op, "x and y");
  ScopedDevice on(device_);
  uint16_t* wh = f16_.as<uint16_t>();
  decode_f16_weights(type, w, n_in, n_out, wh, stream);
  // Row-major Y[T][n_out] = X[T][n_in] . W^T is column-major Y^T = W . X^T: A = W (stored n_in x n_out, transposed),
  // B = X (n_in x T).
  cublasHandle_t h = as_handle(handle_);
  check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  const float alpha = 1.0f, beta = epi == Epilogue::Add ? 1.0f : 0.0f;
  const int m = static_cast<int>(n_out), n = static_cast<int>(T), k = static_cast<int>(n_in);
  check_cublas(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, wh, CUDA_R_16F, k, x, CUDA_R_16F, k, &beta, y,
                            CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

}  // namespace strata::cuda
