// Instance file: the warpgroup (sm_90a) prompt attention kernel, F16 caches with head dims 128, F16 Q or Q split into F16 hi + lo (P F16).
#include "cuda/attention/attention_wgmma.cuh"

namespace strata::cuda::attn_mma {

void launch_wgmma(const attn::Params& p, bool split, cudaStream_t stream) {
  if (split) {
    attn_wgmma::launch<true>(p, stream);
  } else {
    attn_wgmma::launch<false>(p, stream);
  }
}

}  // namespace strata::cuda::attn_mma
