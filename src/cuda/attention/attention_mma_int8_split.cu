// Tensor-core prompt attention instances for INT8 KV caches, split (hi + lo) F16 operands (see attention_mma.cuh).
#include "cuda/attention/attention_mma.cuh"

namespace strata::cuda::attn_mma {

void launch_int8_split(const attn::Params& p, int D, cudaStream_t stream) {
  launch_by_dim<core::KvType::Int8, true>(p, D, stream);
}

}  // namespace strata::cuda::attn_mma
