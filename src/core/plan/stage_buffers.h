// StageBuffers: the layout of one stage's prompt buffers and ring in one arena; lend() lays out every stage at once.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/quant/quant.h"

namespace strata::core {

// What sizes the prompt buffers of a stage.
struct BufferShape {
  int64_t chunk = 0;  // tokens per prompt chunk (T)
  int64_t n_embd = 0;
  int64_t n_ff_exp = 0;  // hidden size of one routed expert
  int32_t k = 0;         // experts per token
  int32_t n_expert = 0;  // routed experts per layer (for the shape check; the row tables live in mapped host memory)
  // Routed rows the expert GEMMs hold at once; 0 = chunk * k (a whole layer).
  int64_t max_rows = 0;
  // Bytes of one quantized activation row of n_embd and of n_ff_exp values
  // (the Q8A rows of quant.h's activation_row_size, or the F16 rows the GPU's
  // prompt GEMMs read, whichever is larger); 0 when the weights take F32
  // activations and no quantized copy exists.
  uint64_t xq_row_bytes = 0;
  uint64_t hq_row_bytes = 0;
  uint64_t align = 256;  // every buffer's offset; kernels load 16 bytes, cuBLAS likes 256

  int64_t rows() const { return max_rows > 0 ? max_rows : chunk * k; }
};

// The GPU's dense prompt GEMMs (cuda/gemm/dense_gemm.h) on chunks of at least
// kDenseF16MinRows tokens hold an F16 copy of the stage's largest dense
// matrix (max_weights F16 values, dense_f16_values) and cuBLAS's workspace.
inline constexpr int64_t kDenseF16MinRows = 16;
inline constexpr uint64_t kDenseF16Workspace = uint64_t(32) << 20;
inline uint64_t dense_f16_bytes(int64_t chunk, int64_t max_weights) {
  return chunk >= kDenseF16MinRows && max_weights > 0 ? 2 * static_cast<uint64_t>(max_weights) + kDenseF16Workspace
                                                      : 0;
}
// The F16 values that copy takes for one dense matrix of n_in x n_out
// weights: a quantized attention matrix (Wq, Wk, Wv, Wo) decoded, one a
// weight; an F32 router split into pairs, two a weight; 0 for the others.
inline int64_t dense_f16_values(GgmlType type, int64_t n_in, int64_t n_out, bool router) {
  if (router) return type == GgmlType::F32 ? 2 * n_in * n_out : 0;
  return activation_kind(type) == ActivationKind::Q8A ? n_in * n_out : 0;
}

// One buffer: [offset, offset + bytes) of the stage's arena.
struct BufferRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t end() const { return offset + bytes; }
};

// One stage's prompt buffers, all F32 unless said.
struct StageBuffers {
  BufferRange mixed;  // [chunk, n_embd]: the MoE input of the chunk (normed activations)
  BufferRange xq;     // [chunk, xq_row_bytes]: its quantized copy (empty for F32 weights)
  BufferRange gu;     // [rows, 2 * n_ff_exp]: gate and up outputs of the routed rows
  BufferRange h;      // [rows, n_ff_exp]: SwiGLU hidden
  BufferRange hq;     // [rows, hq_row_bytes]: its quantized copy (empty for F32 weights)
  BufferRange dm;     // [rows, n_embd]: down outputs per routed row
  BufferRange sums;   // [chunk, n_embd]: per-token weighted sums (what a peer or helper returns; the combine reads)
  BufferRange ring;   // n_slots * slot_bytes: the expert ring
  int32_t n_slots = 0;
  uint64_t slot_bytes = 0;  // one slot (aligned)
  uint64_t total = 0;       // arena bytes (aligned)

  BufferRange slot(int32_t i) const { return {ring.offset + static_cast<uint64_t>(i) * slot_bytes, slot_bytes}; }
  // The ranges above in layout order, for walking them.
  std::array<BufferRange, 8> ranges() const { return {mixed, xq, gu, h, hq, dm, sums, ring}; }
  // Bytes without the ring: PlacementInput::prompt_bytes.
  uint64_t prompt_bytes() const { return total - ring.bytes; }
};

// Lays out one stage: the buffers in the order of the fields, each at an
// aligned offset, then the ring. Throws Error(INVALID_ARGUMENT) for a
// non-positive chunk, n_embd, n_ff_exp, k or n_expert, k > n_expert, one
// quantized row size zero and the other not (both or neither exist), a
// negative max_rows or n_slots, or an alignment that is not a power of two.
StageBuffers layout_stage_buffers(const BufferShape& shape, int32_t n_slots, uint64_t slot_bytes);

// One stage's part of lend().
struct LendStage {
  int32_t n_slots = 0;      // its ring depth (PlacementPlan::ring_slots)
  uint64_t slot_bytes = 0;  // its slot size (PlacementPlan::slot_bytes)
  uint64_t budget = 0;      // bytes the stage reserved for buffers and ring (its placement's prompt + ring bytes)
};

// Before a prompt, lays out every stage's buffers at once from one shape, so
// a stage helper can borrow an idle stage's arena (the helper of stage s runs
// on helper_stage(s)'s card with that stage's buffers) without allocating.
// With for_helpers, every ring gets the largest slot of all stages, so any
// stage's blob fits a lender's slot (when slot sizes differ that costs the
// difference per slot; the budgets must allow it). Throws
// Error(OUT_OF_MEMORY) naming the stage and the shortfall in GiB when a
// layout exceeds its stage's budget; Error(INVALID_ARGUMENT) as above.
std::vector<StageBuffers> lend(const BufferShape& shape, const std::vector<LendStage>& stages, bool for_helpers);

}  // namespace strata::core
