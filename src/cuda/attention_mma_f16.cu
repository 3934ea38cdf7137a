// Tensor-core prompt attention instances for F16 KV caches (see attention_mma.cuh).
#include "cuda/attention_mma.cuh"

namespace strata::cuda::attn_mma {

void launch_f16(const attn::Params& p, int D, cudaStream_t stream) {
  switch (D) {
    case 64: return launch<core::KvType::F16, 64>(p, stream);
    case 128: return launch<core::KvType::F16, 128>(p, stream);
    default: return launch<core::KvType::F16, 256>(p, stream);
  }
}

}  // namespace strata::cuda::attn_mma
