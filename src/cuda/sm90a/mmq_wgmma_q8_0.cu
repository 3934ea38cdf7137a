// Instance file: the warpgroup (sm_90a) GEMM kernel for Q8_0 weights.
#include "cuda/mmq_wgmma.cuh"

namespace strata::cuda::gemm_detail {
void launch_wgmma_q8_0(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_wgmma<GgmlType::Q8_0>(p, grid, stream); }
}  // namespace strata::cuda::gemm_detail
