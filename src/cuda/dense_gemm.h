// Prompt GEMMs of a dense quantized matrix over many positions: the matrix decoded once to F16, then cuBLAS's F16 GEMM with F32 sums.
//
// The own tensor-core kernels (mmq.cuh) decode each weight in every block of
// positions: 64 times per matrix at 8192 positions. Decoded once
// (f16_weights.cuh, a few microseconds for a 2048 x 4096 matrix), the same F16
// weights go through cublasGemmEx (F16 inputs, F32 compute and output): the
// same products as mmq's, summed in cuBLAS's order, which repeats bit for bit
// for one shape on one device (the workspace is set, so no call allocates).
// The grouped expert GEMMs keep the own kernels: their matrices are many and
// each meets a few hundred positions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant.h"
#include "core/stage_buffers.h"
#include "cuda/gemm_types.h"
#include "cuda/memory.h"

namespace strata::cuda {

// Positions from which the decoded path is the faster one (gemm_bench,
// docs/BENCHMARKS.md session 13); the placement counts its buffers from there.
inline constexpr int64_t kDenseGemmMinRows = core::kDenseF16MinRows;

// Whether dense prompt GEMMs may take the decoded path: yes unless
// STRATA_GEMM names one of the own kernels (mma, wgmma), which then run every
// prompt GEMM.
bool dense_gemm_enabled();

// One cuBLAS handle, its workspace and one F16 matrix of at most max_weights
// values, on one device; used from one thread (an executor's). Not copyable.
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

  uint64_t device_bytes() const { return f16_.size() + workspace_.size(); }

 private:
  int device_;
  int64_t max_weights_;
  DeviceBuffer f16_, workspace_;
  void* handle_ = nullptr;  // cublasHandle_t
};

}  // namespace strata::cuda
