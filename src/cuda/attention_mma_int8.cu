// Tensor-core prompt attention instances for INT8 KV caches (see attention_mma.cuh).
#include "cuda/attention_mma.cuh"

namespace strata::cuda::attn_mma {

void launch_int8(const attn::Params& p, int D, cudaStream_t stream) {
  switch (D) {
    case 64: return launch<core::KvType::Int8, 64>(p, stream);
    case 128: return launch<core::KvType::Int8, 128>(p, stream);
    default: return launch<core::KvType::Int8, 256>(p, stream);
  }
}

}  // namespace strata::cuda::attn_mma
