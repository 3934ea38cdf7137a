// Instance file: the int8 MMA GEMM kernel for Q8_0 weights (one per type so nvcc builds them in parallel).
#include "cuda/mmq_mma.cuh"

namespace strata::cuda::gemm_detail {
void launch_mmq_q8_0(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_mma<GgmlType::Q8_0>(p, grid, stream); }
}  // namespace strata::cuda::gemm_detail
