// Instance file: the F16 tensor-core GEMM kernel for Q4_1 weights (one per type so nvcc builds them in parallel).
#include "cuda/gemm/mmq_f16.cuh"

namespace strata::cuda::gemm_detail {
template void launch_f16<GgmlType::Q4_1>(const MmParams& p, dim3 grid, cudaStream_t stream);
}  // namespace strata::cuda::gemm_detail
