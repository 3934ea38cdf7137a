// layout_stage_buffers and lend(): aligned, non-overlapping ranges in one arena per stage.
#include "core/plan/stage_buffers.h"

#include <algorithm>

#include "core/base/bytes.h"
#include "core/base/error.h"

namespace strata::core {

namespace {

void check_shape(const BufferShape& s) {
  if (s.chunk < 1 || s.n_embd < 1 || s.n_ff_exp < 1 || s.k < 1 || s.n_expert < 1 || s.k > s.n_expert ||
      s.max_rows < 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "prompt buffers: chunk={} n_embd={} n_ff_exp={} k={} n_expert={} max_rows={}",
         s.chunk, s.n_embd, s.n_ff_exp, s.k, s.n_expert, s.max_rows);
  }
  if ((s.xq_row_bytes == 0) != (s.hq_row_bytes == 0)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "prompt buffers: quantized rows of {} and {} bytes (both or neither)",
         s.xq_row_bytes, s.hq_row_bytes);
  }
}

}  // namespace

StageBuffers layout_stage_buffers(const BufferShape& shape, int32_t n_slots, uint64_t slot_bytes) {
  check_shape(shape);
  if (n_slots < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "prompt buffers: {} ring slots", n_slots);
  const uint64_t T = static_cast<uint64_t>(shape.chunk);
  const uint64_t R = static_cast<uint64_t>(shape.rows());
  const uint64_t embd = static_cast<uint64_t>(shape.n_embd), ff = static_cast<uint64_t>(shape.n_ff_exp);
  constexpr uint64_t f32 = 4;

  StageBuffers b;
  uint64_t at = 0;
  auto place = [&](BufferRange& r, uint64_t bytes) {
    r.offset = align_up(at, shape.align);
    r.bytes = bytes;
    at = add_bytes(r.offset, bytes);
  };
  place(b.mixed, mul_bytes(mul_bytes(T, embd), f32));
  place(b.xq, mul_bytes(T, shape.xq_row_bytes));
  place(b.gu, mul_bytes(mul_bytes(R, 2 * ff), f32));
  place(b.h, mul_bytes(mul_bytes(R, ff), f32));
  place(b.hq, mul_bytes(R, shape.hq_row_bytes));
  place(b.dm, mul_bytes(mul_bytes(R, embd), f32));
  place(b.sums, mul_bytes(mul_bytes(T, embd), f32));
  b.n_slots = n_slots;
  b.slot_bytes = align_up(slot_bytes, shape.align);
  place(b.ring, mul_bytes(b.slot_bytes, static_cast<uint64_t>(n_slots)));
  b.total = align_up(at, shape.align);
  return b;
}

std::vector<StageBuffers> lend(const BufferShape& shape, const std::vector<LendStage>& stages, bool for_helpers) {
  uint64_t widest = 0;
  for (const LendStage& s : stages) widest = std::max(widest, s.slot_bytes);
  std::vector<StageBuffers> out;
  for (size_t i = 0; i < stages.size(); ++i) {
    const LendStage& s = stages[i];
    out.push_back(layout_stage_buffers(shape, s.n_slots, for_helpers ? widest : s.slot_bytes));
    if (out.back().total > s.budget) {
      fail(STRATA_ERR_OUT_OF_MEMORY,
           "prompt buffers of stage {}: {} for chunk {} and a ring of {} x {} exceed the {} reserved: {} short", i,
           format_bytes(out.back().total), shape.chunk, s.n_slots, format_bytes(out.back().slot_bytes),
           format_bytes(s.budget), format_bytes(out.back().total - s.budget));
    }
  }
  return out;
}

}  // namespace strata::core
