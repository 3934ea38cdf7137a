// Attention kernel instances for INT8 KV caches (see attention_impl.cuh).
#include "cuda/attention/attention_impl.cuh"

namespace strata::cuda::attn {

void launch_int8(const Params& p, int vpl, int R, dim3 grid, cudaStream_t stream) {
  dispatch<core::KvType::Int8>(vpl, R, p, grid, stream);
}

}  // namespace strata::cuda::attn
