// The routed experts of one MoE layer on the GPU: grouped GEMMs over a row table (prompt), per-entry matvecs (decode).
//
// Prompt, per layer (three launches):
//   gemm_tile_map(table.offsets ...)                  tile list over the experts' row groups
//   moe_gate_up(x, xh -> h, hh)                      h[p] = silu(gate_e . x_t) * (up_e . x_t), as F16 for the down
//   moe_down(h, hh -> y)                             y[token * k + slot] = down_e . h[p]
// where p runs over table positions (entries in expert order), e is p's
// expert and t = entries[p] / k its token. The combine (y rows weighted and
// summed in slot order) is the caller's next kernel. Every output element is
// written once by one thread, so results are deterministic; against
// core::cpu::expert_ffn they differ as the GEMMs do (mmq.cuh: F16 activations
// and weights in the quantized GEMMs).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "core/quant/quant.h"
#include "cuda/gemm/gemm_types.h"

namespace strata::prefill {
struct RowTable;
}

namespace strata::cuda {

// A prefill::RowTable in device memory (offsets and entries copied as they are).
struct RowTableView {
  const int32_t* offsets = nullptr;  // [n_expert + 1]
  const int32_t* entries = nullptr;  // [n_tokens * k]: token * k + slot, grouped by expert
  int32_t n_tokens = 0;
  int32_t k = 0;
  int32_t n_expert = 0;
};

// One layer's routed experts; expert e is matrix e of each set (base +
// e * stride as in the GGUF 3-D tensors, or a pointer table for experts that
// live in ring slots or anywhere else).
struct MoeExperts {
  WeightSet gate;  // n_out = n_ff rows of n_in = n_embd values
  WeightSet up;    // as gate
  WeightSet down;  // n_out = n_embd rows of n_in = n_ff values
};

// Builds the tile list of a grouped GEMM on the device: for each group g of
// `groups` (device [n_listed]; all n_groups groups in order when null), its
// positions [offsets[g], offsets[g+1]) cut into tiles of kGemmTileRows, in
// list order; *tile_count = their number. max_tiles must be at least
// gemm_max_tiles(positions, listed groups), which bounds the count for any
// routing. Ids outside [0, n_groups) are skipped. One block; asynchronous.
void gemm_tile_map(const int32_t* offsets, int32_t n_groups, const int32_t* groups, int32_t n_listed,
                   GemmTile* tiles, int32_t* tile_count, int64_t max_tiles, cudaStream_t stream);

// Step 1 over the tiles: h row p = silu(gate_e . x_t) * (up_e . x_t) (F32,
// [n_tokens * k][n_ff] in table order, where h is not null), and, when hh is
// not null, the same row as F16 (what a quantized down reads). x:
// [n_tokens][n_embd] floats (read by float gate/up), xh: the same rows as F16
// (read by quantized gate/up). Gate and up of one type run as one fused GEMM
// (then h may be null when hh is set); of different types as two (gate into
// h, then up with silu: h is required).
void moe_gate_up(const MoeExperts& w, const RowTableView& table, const float* x, const uint16_t* xh,
                 const GemmTile* tiles, const int32_t* tile_count, int64_t max_tiles, float* h, uint16_t* hh,
                 cudaStream_t stream);

// Step 2 over the tiles: y row entries[p] = down_e . h row p, y
// [n_tokens * k][n_embd]; h or hh as down's type needs.
void moe_down(const MoeExperts& w, const RowTableView& table, const float* h, const uint16_t* hh,
              const GemmTile* tiles, const int32_t* tile_count, int64_t max_tiles, float* y, cudaStream_t stream);

// Caller-owned device scratch of moe_experts_prompt.
struct MoeScratch {
  GemmTile* tiles = nullptr;       // [gemm_max_tiles(n_tokens * k, n_expert)]
  int32_t* tile_count = nullptr;   // [1]
  float* h = nullptr;              // [n_tokens * k][n_ff]
  uint16_t* hh = nullptr;          // [n_tokens * k][n_ff] F16
};

// The whole prompt step for all experts: tile map, gate/up, down.
void moe_experts_prompt(const MoeExperts& w, const RowTableView& table, const float* x, const uint16_t* xh,
                        const MoeScratch& scratch, float* y, cudaStream_t stream);

// The same step for the listed experts only (device `experts`, n_listed
// ids): their rows of y are written, every other row keeps what it held.
// max_tiles bounds their tiles (the caller knows their row counts); 0 does nothing.
void moe_experts_listed(const MoeExperts& w, const RowTableView& table, const int32_t* experts, int32_t n_listed,
                        int64_t max_tiles, const float* x, const uint16_t* xh, const MoeScratch& scratch,
                        float* y, cudaStream_t stream);
// The tiles of the listed experts' groups in a host row table: their max_tiles.
int64_t listed_tiles(const prefill::RowTable& table, std::span<const int32_t> experts);

// Decode (a few tokens): entry b = token * k + slot uses expert ids[b]
// (device [n_tokens * k], the router's choices; an entry with a negative id
// is skipped: its h and y rows keep what they held, so the experts of a
// step may run in several calls, each with the other entries masked). h [n_tokens * k][n_ff] and
// hq [n_tokens * k][n_ff / 32] (for a quantized down) are scratch; y
// [n_tokens * k][n_embd] gets each entry's expert output. Runs mmvq (one
// fused gate/up launch, quantize_q8a, one down launch): weights read once per
// entry, products within mmvq's summation-order bound of the CPU's.
void moe_experts_decode(const MoeExperts& w, const int32_t* ids, int32_t n_tokens, int32_t k, const float* x,
                        const core::BlockQ8A* xq, float* h, core::BlockQ8A* hq, float* y, cudaStream_t stream);

}  // namespace strata::cuda
