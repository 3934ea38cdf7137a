// Tensor-core prompt attention instances for F16 KV caches, F16 operands (see attention_mma.cuh).
#include "cuda/attention/attention_mma.cuh"

namespace strata::cuda::attn_mma {

void launch_f16(const attn::Params& p, int D, cudaStream_t stream) {
  launch_by_dim<core::KvType::F16, false>(p, D, stream);
}

}  // namespace strata::cuda::attn_mma
