// Instance file: the warpgroup (sm_90a) GEMM kernel for Q5_K weights.
#include "cuda/mmq_wgmma.cuh"

namespace strata::cuda::gemm_detail {
void launch_wgmma_q5_k(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_wgmma<GgmlType::Q5_K>(p, grid, stream); }
}  // namespace strata::cuda::gemm_detail
