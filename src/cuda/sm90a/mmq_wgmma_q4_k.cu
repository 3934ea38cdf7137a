// Instance file: the warpgroup (sm_90a) GEMM kernel for Q4_K weights.
#include "cuda/mmq_wgmma.cuh"

namespace strata::cuda::gemm_detail {
void launch_wgmma_q4_k(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_wgmma<GgmlType::Q4_K>(p, grid, stream); }
}  // namespace strata::cuda::gemm_detail
