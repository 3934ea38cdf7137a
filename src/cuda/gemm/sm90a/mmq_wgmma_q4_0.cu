// Instance file: the warpgroup (sm_90a) GEMM kernel for Q4_0 weights.
#include "cuda/gemm/mmq_wgmma.cuh"

namespace strata::cuda::gemm_detail {
template void launch_wgmma<GgmlType::Q4_0>(const MmParams& p, dim3 grid, cudaStream_t stream);
}  // namespace strata::cuda::gemm_detail
