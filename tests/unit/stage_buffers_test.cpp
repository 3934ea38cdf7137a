// StageBuffers and lend(): sizes, alignment, no overlap, the budget check, helper-wide slots.
#include "core/plan/stage_buffers.h"

#include <algorithm>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"

using strata::core::BufferRange;
using strata::core::BufferShape;
using strata::core::Error;
using strata::core::lend;
using strata::core::LendStage;
using strata::core::StageBuffers;

namespace {

// Qwen3-30B-A3B: n_embd 2048, n_ff_exp 768, 8 of 128 experts; Q8A rows of 40 bytes per 32 values.
BufferShape qwen3_30b(int64_t chunk) {
  BufferShape s;
  s.chunk = chunk;
  s.n_embd = 2048;
  s.n_ff_exp = 768;
  s.k = 8;
  s.n_expert = 128;
  s.xq_row_bytes = 2048 / 32 * 40;
  s.hq_row_bytes = 768 / 32 * 40;
  return s;
}

void check_layout(const BufferShape& shape, const StageBuffers& b) {
  auto r = b.ranges();
  std::vector<BufferRange> v(r.begin(), r.end());
  for (size_t i = 0; i < v.size(); ++i) {
    CHECK(v[i].offset % shape.align == 0);
    CHECK(v[i].end() <= b.total);
    if (i > 0) CHECK(v[i - 1].end() <= v[i].offset);  // in order, no overlap
  }
  CHECK(b.total % shape.align == 0);
  CHECK(b.prompt_bytes() + b.ring.bytes == b.total);
  for (int s = 0; s < b.n_slots; ++s) {
    CHECK(b.slot(s).offset % shape.align == 0);
    CHECK(b.slot(s).end() <= b.ring.end());
  }
}

}  // namespace

TEST_CASE("stage buffers: sizes of every buffer") {
  const BufferShape shape = qwen3_30b(2048);
  const StageBuffers b = strata::core::layout_stage_buffers(shape, 4, 5'000'000);
  check_layout(shape, b);
  const uint64_t T = 2048, R = 2048 * 8;
  CHECK(b.mixed.bytes == T * 2048 * 4);
  CHECK(b.xq.bytes == T * 2560);
  CHECK(b.gu.bytes == R * 2 * 768 * 4);
  CHECK(b.h.bytes == R * 768 * 4);
  CHECK(b.hq.bytes == R * 960);
  CHECK(b.dm.bytes == R * 2048 * 4);
  CHECK(b.sums.bytes == T * 2048 * 4);
  CHECK(b.slot_bytes == 5'000'192);  // aligned to 256
  CHECK(b.ring.bytes == 4 * 5'000'192);
  CHECK(b.mixed.offset == 0);

  // Fewer rows at once shrink only the per-row buffers.
  BufferShape tiled = shape;
  tiled.max_rows = 4096;
  const StageBuffers t = strata::core::layout_stage_buffers(tiled, 4, 5'000'000);
  check_layout(tiled, t);
  CHECK(t.mixed.bytes == b.mixed.bytes);
  CHECK(t.dm.bytes == 4096ull * 2048 * 4);

  // F32 weights: no quantized copies.
  BufferShape f32 = shape;
  f32.xq_row_bytes = f32.hq_row_bytes = 0;
  const StageBuffers f = strata::core::layout_stage_buffers(f32, 0, 0);
  check_layout(f32, f);
  CHECK(f.xq.bytes == 0);
  CHECK(f.hq.bytes == 0);
  CHECK(f.ring.bytes == 0);
}

TEST_CASE("stage buffers: odd sizes stay aligned and disjoint") {
  for (int64_t chunk : {1, 3, 77, 512}) {
    for (uint64_t align : {64, 256, 4096}) {
      BufferShape s;
      s.chunk = chunk;
      s.n_embd = 96;
      s.n_ff_exp = 33;
      s.k = 3;
      s.n_expert = 5;
      s.xq_row_bytes = 123;
      s.hq_row_bytes = 45;
      s.align = align;
      check_layout(s, strata::core::layout_stage_buffers(s, 3, 1001));
    }
  }
}

TEST_CASE("stage buffers: lend lays out every stage, within budgets") {
  const BufferShape shape = qwen3_30b(1024);
  const uint64_t one = strata::core::layout_stage_buffers(shape, 8, 3'000'000).total;
  std::vector<LendStage> stages{{8, 3'000'000, one}, {8, 2'000'000, one}, {6, 2'500'000, one}};
  const auto all = lend(shape, stages, false);
  REQUIRE(all.size() == 3);
  for (const auto& b : all) check_layout(shape, b);
  CHECK(all[1].slot_bytes == 2'000'128);
  CHECK(all[0].total == one);

  // For helpers every slot takes the widest blob, so stage 0's blobs fit stage 1's ring.
  const auto wide = lend(shape, stages, true);
  for (const auto& b : wide) CHECK(b.slot_bytes == all[0].slot_bytes);

  // A budget one byte short is an error naming the stage.
  stages[2].budget = strata::core::layout_stage_buffers(shape, 6, 3'000'000).total - 1;
  try {
    lend(shape, stages, true);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_OUT_OF_MEMORY);
    CHECK(std::string(e.what()).find("stage 2") != std::string::npos);
  }
  CHECK(lend(shape, stages, false).size() == 3);  // its own slots fit
}

TEST_CASE("stage buffers: invalid shapes") {
  auto bad = [](auto edit) {
    BufferShape s = qwen3_30b(128);
    int32_t slots = 3;
    edit(s, slots);
    CHECK_THROWS_AS(strata::core::layout_stage_buffers(s, slots, 1000), Error);
  };
  bad([](BufferShape& s, int32_t&) { s.chunk = 0; });
  bad([](BufferShape& s, int32_t&) { s.n_embd = 0; });
  bad([](BufferShape& s, int32_t&) { s.k = 129; });
  bad([](BufferShape& s, int32_t&) { s.n_expert = 0; });
  bad([](BufferShape& s, int32_t&) { s.max_rows = -1; });
  bad([](BufferShape& s, int32_t&) { s.xq_row_bytes = 0; });
  bad([](BufferShape& s, int32_t&) { s.align = 100; });
  bad([](BufferShape&, int32_t& slots) { slots = -1; });
}

TEST_CASE("stage buffers: the dense F16 copy counts from its minimum chunk") {
  using strata::core::dense_f16_bytes;
  using strata::core::kDenseF16MinRows;
  using strata::core::kDenseF16Workspace;
  const int64_t q = 2048 * 4096;  // qwen3-30b-a3b's attn_q
  CHECK(dense_f16_bytes(kDenseF16MinRows - 1, q) == 0);
  CHECK(dense_f16_bytes(kDenseF16MinRows, q) == 2 * static_cast<uint64_t>(q) + kDenseF16Workspace);
  CHECK(dense_f16_bytes(8192, 0) == 0);  // no quantized dense matrix: nothing decoded
}

TEST_CASE("stage buffers: the F16 copy holds decoded attention matrices and an F32 router's pairs") {
  using strata::core::dense_f16_values;
  using strata::core::GgmlType;
  CHECK(dense_f16_values(GgmlType::Q4_K, 2048, 4096, false) == 2048 * 4096);
  CHECK(dense_f16_values(GgmlType::Q8_0, 2048, 512, false) == 2048 * 512);
  CHECK(dense_f16_values(GgmlType::F32, 2048, 4096, false) == 0);  // float attention keeps its own kernel
  CHECK(dense_f16_values(GgmlType::F32, 2048, 128, true) == 2 * 2048 * 128);
  CHECK(dense_f16_values(GgmlType::Q8_0, 2048, 128, true) == 0);  // a quantized router keeps its own kernel
}
