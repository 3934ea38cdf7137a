// MoE expert steps: the device-side tile map, and gate/up and down as grouped GEMMs (prompt) or batched mmvq (decode).
#include "cuda/moe/moe_gemm.cuh"
#include "prefill/row_table.h"

#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/mmq.cuh"
#include "cuda/gemm/mmvq.cuh"
#include "cuda/gemm/type_paths.h"
#include "cuda/norm/quantize.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

using core::GgmlType;

constexpr int kMapThreads = 1024;

// One block: per listed group its tile count ceil(rows / 64), an exclusive
// block scan over the list (chunks of 1024 groups), then each thread writes
// its group's tiles at its offset.
static __global__ void __launch_bounds__(kMapThreads)
    tile_map_kernel(const int32_t* __restrict__ offsets, int n_groups, const int32_t* __restrict__ groups,
                    int n_listed, GemmTile* __restrict__ tiles, int32_t* __restrict__ tile_count,
                    int64_t max_tiles) {
  pdl_prologue();
  __shared__ int warp_sums[kMapThreads / 32];
  __shared__ int carry;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid == 0) carry = 0;
  __syncthreads();
  for (int base = 0; base < n_listed; base += kMapThreads) {
    const int i = base + tid;
    int g = -1, begin = 0, end = 0, cnt = 0;
    if (i < n_listed) {
      g = groups != nullptr ? groups[i] : i;
      if (g >= 0 && g < n_groups) {
        begin = offsets[g];
        end = offsets[g + 1];
        cnt = end > begin ? (end - begin + kGemmTileRows - 1) / kGemmTileRows : 0;
      }
    }
    int v = cnt;  // inclusive scan within the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += y;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
      int s = warp_sums[lane];
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, s, o);
        if (lane >= o) s += y;
      }
      warp_sums[lane] = s;  // inclusive over warps
    }
    __syncthreads();
    int at = carry + (warp > 0 ? warp_sums[warp - 1] : 0) + v - cnt;
    for (int c = 0; c < cnt; ++c, ++at) {
      if (at < max_tiles) {
        const int b = begin + c * kGemmTileRows;
        tiles[at] = GemmTile{g, b, min(b + kGemmTileRows, end), 0};
      }
    }
    __syncthreads();  // everyone has read carry and warp_sums
    if (tid == 0) carry += warp_sums[kMapThreads / 32 - 1];
    __syncthreads();
  }
  if (tid == 0) *tile_count = static_cast<int32_t>(min(static_cast<int64_t>(carry), max_tiles));
}

// The activations a matrix of type t takes: the quantized form (Q8A rows for
// mmvq, F16 rows for the GEMMs) or the float rows.
const void* acts_for(GgmlType t, const float* x, const void* xq, const char* op, const char* what) {
  const bool q = q8a_type(t);
  require(q ? xq != nullptr : x != nullptr, op, what, {{"quantized", q ? 1 : 0}});
  return q ? xq : static_cast<const void*>(x);
}

void check_experts(const MoeExperts& w, const char* op) {
  require(w.gate.n_in == w.up.n_in && w.gate.n_out == w.up.n_out && w.down.n_in == w.gate.n_out &&
              w.down.n_out == w.gate.n_in,
          op, "gate and up [n_ff x n_embd], down [n_embd x n_ff]",
          {{"gate_in", w.gate.n_in}, {"gate_out", w.gate.n_out}, {"up_in", w.up.n_in}, {"up_out", w.up.n_out},
           {"down_in", w.down.n_in}, {"down_out", w.down.n_out}});
  require(w.gate.n_out % 32 == 0, op, "n_ff % 32 == 0", {{"n_ff", w.gate.n_out}});
}

}  // namespace

void gemm_tile_map(const int32_t* offsets, int32_t n_groups, const int32_t* groups, int32_t n_listed,
                   GemmTile* tiles, int32_t* tile_count, int64_t max_tiles, cudaStream_t stream) {
  require(offsets != nullptr && tiles != nullptr && tile_count != nullptr && n_groups >= 1 && n_listed >= 0 &&
              max_tiles >= 1,
          "gemm_tile_map", "offsets, tiles, tile_count, n_groups >= 1, n_listed >= 0, max_tiles >= 1",
          {{"n_groups", n_groups}, {"n_listed", n_listed}, {"max_tiles", max_tiles}});
  gemm_detail::check_stream("gemm_tile_map", stream);
  cuda::launch("tile_map_kernel", tile_map_kernel, 1, kMapThreads, 0, stream, offsets, n_groups, groups, n_listed, tiles,
         tile_count, max_tiles);
}

void moe_gate_up(const MoeExperts& w, const RowTableView& table, const float* x, const uint16_t* xh,
                 const GemmTile* tiles, const int32_t* tile_count, int64_t max_tiles, float* h, uint16_t* hh,
                 cudaStream_t stream) {
  constexpr const char* op = "moe_gate_up";
  check_experts(w, op);
  require(table.entries != nullptr && table.k >= 1 && table.n_tokens >= 0, op, "a row table with entries and k >= 1",
          {{"k", table.k}, {"n_tokens", table.n_tokens}});
  const bool pair = w.gate.type == w.up.type;
  require(pair ? (h != nullptr || hh != nullptr) : h != nullptr, op,
          "h or hh (gate and up of one type), h (of two types: it holds the gate)");
  auto args = [&](const WeightSet& ws) {
    GemmArgs a;
    a.w = ws;
    a.x = acts_for(ws.type, x, xh, op, "xh for quantized, x for float gate/up");
    a.x_rows = table.entries;
    a.x_div = table.k;
    a.n_rows = static_cast<int64_t>(table.n_tokens) * table.k;
    a.tiles = tiles;
    a.tile_count = tile_count;
    a.max_tiles = max_tiles;
    return a;
  };
  if (pair) {
    GemmArgs a = args(w.gate);
    a.w2 = w.up;
    a.epi = Epilogue::SwigluPair;
    a.y = h;
    a.yh = hh;
    gemm(a, stream);
  } else {
    GemmArgs g = args(w.gate);
    g.y = h;
    gemm(g, stream);
    GemmArgs u = args(w.up);
    u.y = h;
    u.yh = hh;
    u.epi = Epilogue::SwigluMul;
    gemm(u, stream);
  }
}

void moe_down(const MoeExperts& w, const RowTableView& table, const float* h, const uint16_t* hh,
              const GemmTile* tiles, const int32_t* tile_count, int64_t max_tiles, float* y, cudaStream_t stream) {
  constexpr const char* op = "moe_down";
  check_experts(w, op);
  require(table.entries != nullptr && table.k >= 1 && table.n_tokens >= 0, op, "a row table with entries and k >= 1",
          {{"k", table.k}, {"n_tokens", table.n_tokens}});
  GemmArgs a;
  a.w = w.down;
  a.x = acts_for(w.down.type, h, hh, op, "hh for a quantized, h for a float down");
  a.y = y;
  a.y_rows = table.entries;
  a.n_rows = static_cast<int64_t>(table.n_tokens) * table.k;
  a.tiles = tiles;
  a.tile_count = tile_count;
  a.max_tiles = max_tiles;
  gemm(a, stream);
}

void moe_experts_prompt(const MoeExperts& w, const RowTableView& table, const float* x, const uint16_t* xh,
                        const MoeScratch& s, float* y, cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(table.n_tokens) * table.k;
  if (rows == 0) return;
  require(table.offsets != nullptr && table.n_expert >= 1, "moe_experts_prompt", "offsets and n_expert >= 1",
          {{"n_expert", table.n_expert}});
  moe_experts_listed(w, table, nullptr, table.n_expert, gemm_max_tiles(rows, table.n_expert), x, xh, s, y, stream);
}

void moe_experts_listed(const MoeExperts& w, const RowTableView& table, const int32_t* experts, int32_t n_listed,
                        int64_t max_tiles, const float* x, const uint16_t* xh, const MoeScratch& s, float* y,
                        cudaStream_t stream) {
  if (max_tiles == 0 || n_listed == 0) return;
  gemm_tile_map(table.offsets, table.n_expert, experts, n_listed, s.tiles, s.tile_count, max_tiles, stream);
  // A quantized down reads h as F16 only; the F32 rows are written where a float down reads them, or where gate
  // and up of two types need them for the gate.
  const bool q_down = q8a_type(w.down.type);
  uint16_t* hh = q_down ? s.hh : nullptr;
  float* h = q_down && w.gate.type == w.up.type ? nullptr : s.h;
  moe_gate_up(w, table, x, xh, s.tiles, s.tile_count, max_tiles, h, hh, stream);
  moe_down(w, table, h, hh, s.tiles, s.tile_count, max_tiles, y, stream);
}

int64_t listed_tiles(const prefill::RowTable& table, std::span<const int32_t> experts) {
  int64_t tiles = 0;
  for (int32_t e : experts) tiles += (table.rows(e) + kGemmTileRows - 1) / kGemmTileRows;
  return tiles;
}

void moe_experts_decode(const MoeExperts& w, const int32_t* ids, int32_t n_tokens, int32_t k, const float* x,
                        const core::BlockQ8A* xq, float* h, core::BlockQ8A* hq, float* y, cudaStream_t stream) {
  constexpr const char* op = "moe_experts_decode";
  check_experts(w, op);
  require(ids != nullptr && k >= 1 && n_tokens >= 0 && h != nullptr && y != nullptr, op,
          "ids, h, y, k >= 1, n_tokens >= 0", {{"k", k}, {"n_tokens", n_tokens}});
  const int32_t entries = n_tokens * k;
  if (entries == 0) return;
  auto args = [&](const WeightSet& ws) {
    MmvqArgs a;
    a.w = ws;
    a.x = acts_for(ws.type, x, xq, op, "xq for quantized, x for float gate/up");
    a.ids = ids;
    a.n_batch = entries;
    a.x_div = k;
    a.y = h;
    return a;
  };
  if (w.gate.type == w.up.type) {
    MmvqArgs a = args(w.gate);
    a.w2 = w.up;
    a.epi = Epilogue::SwigluPair;
    mmvq(a, stream);
  } else {
    mmvq(args(w.gate), stream);
    MmvqArgs u = args(w.up);
    u.epi = Epilogue::SwigluMul;
    mmvq(u, stream);
  }
  MmvqArgs d;
  d.w = w.down;
  d.x = acts_for(w.down.type, h, hq, op, "hq for a quantized, h for a float down");
  if (q8a_type(w.down.type)) quantize_q8a(h, w.gate.n_out, hq, w.gate.n_out / 32, w.gate.n_out, entries, stream);
  d.ids = ids;
  d.n_batch = entries;
  d.y = y;
  mmvq(d, stream);
}

}  // namespace strata::cuda
