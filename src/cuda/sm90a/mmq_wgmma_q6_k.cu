// Instance file: the warpgroup (sm_90a) GEMM kernel for Q6_K weights.
#include "cuda/mmq_wgmma.cuh"

namespace strata::cuda::gemm_detail {
void launch_wgmma_q6_k(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_wgmma<GgmlType::Q6_K>(p, grid, stream); }
}  // namespace strata::cuda::gemm_detail
