// Attention on the device over a layer's KV cache: flash-style prompt attention and split-K decode attention.
#include <cmath>
#include <cstdint>

#include "core/base/env.h"
#include "cuda/attention/attention.cuh"
#include "cuda/attention/attention_decode.cuh"
#include "cuda/attention/attention_impl.cuh"
#include "cuda/attention/attention_mma.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/host_route.cuh"
#include "cuda/runtime/memory.h"

namespace strata::cuda {
namespace {

using attn::kDecodeMaxSplits;
using attn::Params;

constexpr int kPromptRowsPerWarp = 8;

// Smallest power of two >= x.
int pow2_at_least(int64_t x) {
  int r = 1;
  while (r < x) r *= 2;
  return r;
}

// Checks the views and fills the shape part of the parameters.
Params make_params(const char* op, const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head,
                   float scale, float* out) {
  check_kv_view(k, op);
  check_kv_view(v, op);
  require(k.type == v.type && k.n_ctx == v.n_ctx && k.n_head_kv == v.n_head_kv, op,
          "K and V views of one type, n_ctx and n_head_kv",
          {{"k.n_ctx", k.n_ctx}, {"v.n_ctx", v.n_ctx}, {"k.n_head_kv", k.n_head_kv}, {"v.n_head_kv", v.n_head_kv}});
  require(n_head >= 1 && n_head % k.n_head_kv == 0, op, "n_head a multiple of n_head_kv",
          {{"n_head", n_head}, {"n_head_kv", k.n_head_kv}});
  if (k.head_dim > attn::kMaxHeadDim || v.head_dim > attn::kMaxHeadDim) {
    fail_need(STRATA_ERR_UNSUPPORTED, op, "head dims <= 256", {{"head_dim_k", k.head_dim}, {"head_dim_v", v.head_dim}});
  }
  Params p{};
  p.q = q;
  p.k = k.data;
  p.k_scales = k.scales;
  p.v = v.data;
  p.v_scales = v.scales;
  p.out = out;
  p.n_head = n_head;
  p.n_head_kv = k.n_head_kv;
  p.group = n_head / k.n_head_kv;
  p.dk = k.head_dim;
  p.dv = v.head_dim;
  p.scale = scale;
  const int per_vec = k.type == core::KvType::F16 ? 8 : 16;  // elements of one 16-byte load
  p.vec_k = k.head_dim % per_vec == 0 && reinterpret_cast<uintptr_t>(k.data) % 16 == 0;
  p.vec_v = v.head_dim % per_vec == 0 && reinterpret_cast<uintptr_t>(v.data) % 16 == 0;
  return p;
}

void run(const Params& p, core::KvType type, int R, cudaStream_t stream) {
  const int64_t row_tiles = ceil_div(p.T * p.group, static_cast<int64_t>(attn::kWarps) * R);
  require(row_tiles <= INT32_MAX, "attention", "T * n_head / n_head_kv < 2^31 rows", {{"T", p.T}});
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(p.n_head_kv),
                  static_cast<unsigned>(p.n_split));
  const int vpl = pow2_at_least(ceil_div(p.dv, kWarp));
  if (type == core::KvType::F16) {
    attn::launch_f16(p, vpl, R, grid, stream);
  } else {
    attn::launch_int8(p, vpl, R, grid, stream);
  }
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The tensor-core path for a prompt's parameters (split: Q, and P on
// mma.sync, as F16 hi + lo pairs), where attention.cuh says it applies and the device gives a
// block its shared memory; false leaves the prompt to the F32 kernel.
bool try_prompt_mma(const Params& p, core::KvType type, bool split, cudaStream_t stream) {
  const int D = attn_mma::head_dim_class(p.dk, p.dv);
  if (D == 0 || !aligned(p.q, 16) || !aligned(p.out, 8) || !aligned(p.k, 16) || !aligned(p.v, 16)) return false;
  if (type == core::KvType::F16 && p.dk == 128 && p.dv == 128 && attention_kernel() == AttentionKernel::Wgmma &&
      aligned(p.out_h, 4)) {
    // F16 rows out: Q as one F16 too (attention_prompt_to_f16).
    attn_mma::launch_wgmma(p, split && p.out_h == nullptr, stream);
    return true;
  }
  if (p.out_h != nullptr) return false;  // the F16 rows come from the F32 ones below
  int device = 0, max_smem = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&device));
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (attn_mma::smem_bytes(type, D, split) > max_smem) return false;
  const int64_t blocks = ceil_div(p.T * p.group, attn_mma::block_rows(D, split)) * p.n_head_kv;
  require(blocks <= INT32_MAX, "attention_prompt", "T * n_head / n_head_kv < 2^31 rows", {{"T", p.T}});
  if (type == core::KvType::F16) {
    (split ? attn_mma::launch_f16_split : attn_mma::launch_f16)(p, D, stream);
  } else {
    (split ? attn_mma::launch_int8_split : attn_mma::launch_int8)(p, D, stream);
  }
  return true;
}

// attention_prompt(_to_f16) and attention_prompt_f16: the checks, then the
// tensor cores where they apply, else the F32 kernel. With out_h, the
// warpgroup kernel writes F16 rows there; the others write out, converted
// after.
void prompt(const char* op, const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
            int32_t pos0, float scale, float* out, uint16_t* out_h, bool split, cudaStream_t stream) {
  require_stream(stream, op);
  Params p = make_params(op, q, k, v, n_head, scale, out);
  require(T >= 0 && pos0 >= 0 && pos0 + T <= k.n_ctx, op, "T >= 0, pos0 >= 0, pos0 + T <= n_ctx",
          {{"T", T}, {"pos0", pos0}, {"n_ctx", k.n_ctx}});
  if (T == 0) return;
  p.T = T;
  p.pos0 = pos0;
  p.n_split = 1;
  p.out_h = out_h;
  if (try_prompt_mma(p, k.type, split, stream)) return;
  p.out_h = nullptr;
  if (!try_prompt_mma(p, k.type, split, stream)) {
    p.keys_per_split = ceil_div(pos0 + T, attn::kTileKeys) * attn::kTileKeys;
    run(p, k.type, kPromptRowsPerWarp, stream);
  }
  if (out_h != nullptr) f32_to_f16(out, out_h, T * n_head * v.head_dim, stream);
}

}  // namespace

AttentionKernel attention_kernel() {
  static const bool mma = core::env_choice(core::EnvVar::Attention) == "mma";  // asked at every prompt attention
  if (mma) return AttentionKernel::MmaSync;
  return gemm_detail::compute_capability() == 90 ? AttentionKernel::Wgmma : AttentionKernel::MmaSync;
}

void attention_prompt(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                      int32_t pos0, float scale, float* out, cudaStream_t stream) {
  prompt("attention_prompt", q, k, v, n_head, T, pos0, scale, out, nullptr, true, stream);
}

void attention_prompt_to_f16(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                             int32_t pos0, float scale, float* out, uint16_t* out_h, cudaStream_t stream) {
  require(out_h != nullptr, "attention_prompt_to_f16", "out_h");
  prompt("attention_prompt_to_f16", q, k, v, n_head, T, pos0, scale, out, out_h, true, stream);
}

void attention_prompt_f16(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                          int32_t pos0, float scale, float* out, cudaStream_t stream) {
  prompt("attention_prompt_f16", q, k, v, n_head, T, pos0, scale, out, nullptr, false, stream);
}

// The decode workspace: merge counters (n_head of them, at least one a
// (row tile, kv head), padded to 16 bytes), then the ranges' (max, sum)
// pairs, then their unnormalized rows.
size_t merge_count_bytes(int n_head) { return (static_cast<size_t>(n_head) * sizeof(unsigned) + 15) / 16 * 16; }

size_t attention_decode_workspace_bytes(int n_head, int head_dim_v) {
  return merge_count_bytes(n_head) + static_cast<size_t>(kDecodeMaxSplits) * static_cast<size_t>(n_head) *
                                         (static_cast<size_t>(head_dim_v) + 2) * sizeof(float);
}

void attention_decode_workspace_init(void* workspace, int n_head, cudaStream_t stream) {
  require_stream(stream, "attention_decode_workspace_init");
  require(workspace != nullptr && n_head >= 1, "attention_decode_workspace_init", "a workspace and n_head >= 1",
          {{"n_head", n_head}});
  memset_async(workspace, 0, merge_count_bytes(n_head), stream);
}

void attention_decode(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, const int32_t* n_kv,
                      int32_t max_kv, float scale, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream) {
  require_stream(stream, "attention_decode");
  Params p = make_params("attention_decode", q, k, v, n_head, scale, out);
  require(n_kv != nullptr, "attention_decode", "n_kv in device memory");
  require(max_kv >= 1 && max_kv <= k.n_ctx, "attention_decode", "1 <= max_kv <= n_ctx",
          {{"max_kv", max_kv}, {"n_ctx", k.n_ctx}});
  p.T = 1;
  p.n_kv_dev = n_kv;
  p.max_kv = max_kv;
  // F16 caches of the common shapes take the kernel that reads each kv
  // head's keys once for its whole group (attention_decode.cu); the others the
  // F32 kernel with one query head a warp: a group of more than kWarps query
  // heads then takes several blocks per (kv head, split), each loading the
  // tiles (a lone token leaves most SMs idle, so more blocks with half the
  // work each finish sooner than fewer that share the loads). The grid covers
  // the most ranges any n_kv up to max_kv needs; the kernels choose the split
  // from the device n_kv.
  const bool gqa = attn::decode_gqa_takes(p, k.type);
  const int grid_splits = gqa ? attn::decode_gqa_max_splits(max_kv) : attn::DecodeSplit::max_split(max_kv);
  p.n_split = grid_splits;
  auto launch = [&] {
    if (gqa)
      attn::launch_decode_gqa(p, grid_splits, stream);
    else
      run(p, k.type, 1, stream);
  };
  if (grid_splits == 1) {
    launch();
    return;
  }
  const size_t need = attention_decode_workspace_bytes(n_head, v.head_dim);
  require(workspace != nullptr && workspace_bytes >= need, "attention_decode",
          "a workspace of attention_decode_workspace_bytes(n_head, head_dim_v)",
          {{"bytes", static_cast<int64_t>(workspace_bytes)}, {"need", static_cast<int64_t>(need)}});
  p.merge_count = static_cast<unsigned*>(workspace);
  p.part_ml = reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) + merge_count_bytes(n_head));
  p.part_o = p.part_ml + static_cast<size_t>(grid_splits) * n_head * 2;
  launch();
}

}  // namespace strata::cuda
