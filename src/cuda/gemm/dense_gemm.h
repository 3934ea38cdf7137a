// Prompt GEMMs of a dense matrix over many positions: the matrix as F16 (decoded once, or split into pairs), then cuBLAS's F16 GEMM with F32 sums.
//
// The own tensor-core kernels (mmq.cuh) decode each weight in every block of
// positions: 64 times per matrix at 8192 positions. Decoded once
// (f16_weights.cuh, a few microseconds for a 2048 x 4096 matrix), the same F16
// weights go through cublasGemmEx (F16 inputs, F32 compute and output): the
// same products as mmq's, summed in cuBLAS's order, which repeats bit for bit
// for one shape on one device (the workspace is set, so no call allocates).
// The grouped expert GEMMs keep the own kernels: their matrices are many and
// each meets a few hundred positions.
//
// An F32 matrix (the router) meets F32 activations: both are split into F16
// pairs (f16_weights.cuh: split_f16_rows) and multiplied as hi.hi + 2^-11
// (hi.lo + lo.hi), two GEMMs on the tensor cores in place of the F32 kernel's
// separately rounded products (mmq_float.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/plan/stage_buffers.h"
#include "core/quant/quant.h"
#include "cuda/gemm/gemm_types.h"
#include "cuda/runtime/memory.h"

namespace strata::cuda {

// Positions from which the decoded path is the faster one (as gemm_bench
// measures it on the H200); the placement counts its buffers from there.
inline constexpr int64_t kDenseGemmMinRows = core::kDenseF16MinRows;

// Whether dense prompt GEMMs may take the decoded path: yes unless
// STRATA_GEMM names one of the own kernels (mma, wgmma), which then run every
// prompt GEMM.
bool dense_gemm_enabled();

// One cuBLAS handle, its workspace and one F16 matrix of at most max_weights
// values (core::dense_f16_values), on one device; used from one thread (an
// executor's). Not copyable.
class DenseGemm {
 public:
  // Throws Error(STRATA_ERR_OUT_OF_MEMORY) when the buffers do not fit and
  // Error(STRATA_ERR_DEVICE) when cuBLAS cannot start on `device`.
  DenseGemm(int device, int64_t max_weights);
  ~DenseGemm();
  DenseGemm(const DenseGemm&) = delete;
  DenseGemm& operator=(const DenseGemm&) = delete;

  // Whether run() takes a matrix of this type and shape at T positions.
  bool takes(core::GgmlType type, int64_t n_in, int64_t n_out, int64_t T) const;

  // y[t][r] = dot(row r of w, x[t]) (epi Store) or y[t][r] += it (epi Add)
  // for t < T: w n_out rows of a quantized type, x T packed F16 rows of n_in
  // (gemm_acts), y [T][n_out] F32. Asynchronous on `stream`; the F16 copy of w
  // is reused by the next call only after this one's GEMM, in stream order.
  // Throws Error(STRATA_ERR_INVALID_ARGUMENT) for what takes() refuses or
  // another epilogue, Error(STRATA_ERR_DEVICE) when cuBLAS fails.
  void run(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const uint16_t* x, int64_t T, float* y,
           Epilogue epi, cudaStream_t stream);

  // Whether run_f32() takes an F32 matrix of this shape at T positions with
  // scratch_bytes of scratch (f32_scratch_bytes).
  bool takes_f32(int64_t n_in, int64_t n_out, int64_t T, size_t scratch_bytes) const;
  static size_t f32_scratch_bytes(int64_t n_in, int64_t T) { return static_cast<size_t>(4 * n_in * T); }

  // As run() for an F32 matrix w [n_out][n_in] and F32 rows x [T][n_in]: the
  // pairs' error and the lo.lo term omitted move a product by under 2^-20 of
  // itself, beside the tensor cores' F32 sums (as in run(): up to
  // (n_in / 16 + 8) 2^-22 of sum |w x|; about 1e-6 of it measured at n_in =
  // 2048), where every |w| and |x| is below 65504 (beyond, the F16 pairs
  // overflow). scratch (16-byte aligned) holds x's pairs; it is free again
  // after the GEMMs, in stream order. Throws as run() for what takes_f32()
  // refuses.
  void run_f32(const float* w, int64_t n_in, int64_t n_out, const float* x, int64_t T, float* y, Epilogue epi,
               void* scratch, size_t scratch_bytes, cudaStream_t stream);

  uint64_t device_bytes() const { return f16_.size() + workspace_.size(); }

 private:
  // Column-major Y^T (m x n) = alpha A^T B + beta Y^T for F16 A (k x m, lda)
  // and B (k x n, ldb), F32 Y (ldc = m).
  void gemm(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, int64_t m, int64_t n, int64_t k,
            float alpha, float beta, float* y, cudaStream_t stream);

  int device_;
  int64_t max_weights_;
  DeviceBuffer f16_, workspace_;
  void* handle_ = nullptr;  // cublasHandle_t
};

}  // namespace strata::cuda
