// Instance file: the F16 tensor-core GEMM kernel for Q4_K weights (one per type so nvcc builds them in parallel).
#include "cuda/mmq_f16.cuh"

namespace strata::cuda::gemm_detail {
void launch_mmq_q4_k(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_f16<GgmlType::Q4_K>(p, grid, stream); }
}  // namespace strata::cuda::gemm_detail
