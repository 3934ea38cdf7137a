// Attention kernel instances for F16 KV caches (see attention_impl.cuh).
#include "cuda/attention/attention_impl.cuh"

namespace strata::cuda::attn {

void launch_f16(const Params& p, int vpl, int R, dim3 grid, cudaStream_t stream) {
  dispatch<core::KvType::F16>(vpl, R, p, grid, stream);
}

}  // namespace strata::cuda::attn
