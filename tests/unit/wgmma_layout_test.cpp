// The warpgroup GEMM's maps (src/cuda/gemm/wgmma_layout.h) on the CPU: every K value multiplied once per stage in either chunk order, A and B agreeing on it, the activation copies, the descriptor (each type's quant reads: quant_pairs_test.cpp).
#include <cstdint>
#include <set>
#include <vector>

#include "catch.hpp"
#include "cuda/gemm/mma_layout.h"
#include "cuda/gemm/wgmma_layout.h"

namespace wg = strata::cuda::wgmma;
namespace mma = strata::cuda::mma;

namespace {

// The chunk orders (QuantTraits::kChunkDelta): 4 for Q4_K, Q5_K and Q8_0, 8
// for Q6_K.
constexpr int kDeltas[] = {4, 8};
constexpr int kColCounts[] = {64, 128};  // positions per tile: QuantTraits::kWgCols

// The stage value (0..255) that logical k (0..15) of instruction i multiplies.
int value_of(int delta, int i, int k) { return 8 * wg::chunk_of(delta, i, k / 8) + k % 8; }

}  // namespace

TEST_CASE("wgmma: each stage value is one instruction's, and A and B agree on it", "[wgmma]") {
  for (int t : kDeltas) {
    INFO("chunk delta " << t);
    std::vector<int> seen(256, 0);
    for (int i = 0; i < wg::kSteps; ++i) {
      for (int k = 0; k < 16; ++k) ++seen[static_cast<size_t>(value_of(t, i, k))];
    }
    for (int v = 0; v < 256; ++v) {
      INFO("value " << v);
      REQUIRE(seen[static_cast<size_t>(v)] == 1);
    }
    for (int i = 0; i < wg::kSteps; ++i) {
      // B: the hardware's address of (k, n) from the instruction's start is
      // where the copies put value value_of(i, k) of position n (an n64
      // instruction on a 128-column tile reads its first 64 columns).
      for (int cols : kColCounts) {
        const int start = wg::b_start(i, cols);
        for (int k = 0; k < 16; ++k) {
          for (int n = 0; n < cols; ++n) {
            const int v = value_of(t, i, k);
            INFO("instruction " << i << " k " << k << " n " << n << " of " << cols);
            REQUIRE(wg::b_elem_offset(start, k, n, wg::kSbo) == wg::x_offset(t, n, v / 8, cols) + 2 * (v % 8));
          }
        }
      }
      // A: register a_reg(h, m), half e of lane (g, t) is row g + 8h, the
      // logical k whose value is lane t's pair of chunk m (QuantTraits::quant_pairs).
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, tq = lane % 4;
        for (int h = 0; h < 2; ++h) {
          for (int m = 0; m < 2; ++m) {
            for (int e = 0; e < 2; ++e) {
              const mma::Coord c = mma::a_elem(lane, 2 * wg::a_reg(h, m) + e);
              INFO("instruction " << i << " lane " << lane << " h " << h << " m " << m << " e " << e);
              REQUIRE(c.row == g + 8 * h);
              REQUIRE(value_of(t, i, c.col) == 8 * wg::chunk_of(t, i, m) + 2 * tq + e);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("wgmma: a chunk's scale entry is its block's or its half's, Q3_K's and Q6_K's scale by its half", "[wgmma]") {
  for (int c = 0; c < wg::kChunks; ++c) {
    CHECK(wg::entry_of_chunk(c, 1) == 8 * c / 32);
    CHECK(wg::entry_of_chunk(c, 2) == 8 * c / 16);
    CHECK(wg::second_half(c) == (8 * c % 32 >= 16));
  }
}

TEST_CASE("wgmma: the activation copies fill the tile once, 8 lanes on 8 bank groups", "[wgmma]") {
  for (int t : kDeltas) {
    for (int cols : kColCounts) {
      INFO("chunk delta " << t << ", " << cols << " columns");
      std::set<int> offsets;
      for (int k = 0; k < cols * wg::kChunks; ++k) {
        const int n = wg::x_copy_column(k, cols), c = wg::x_copy_chunk(k, cols);
        REQUIRE((n >= 0 && n < cols));
        REQUIRE((c >= 0 && c < wg::kChunks));
        REQUIRE(wg::chunk_of(t, wg::instruction_of(t, c), wg::core_matrix_of(t, c)) == c);
        const int off = wg::x_offset(t, n, c, cols);
        REQUIRE(off % 16 == 0);
        offsets.insert(off);
        if (k % 8 == 0) {
          // A lane group of 8: 8 different 16-byte bank groups (of 128 bytes).
          std::set<int> groups;
          for (int l = 0; l < 8; ++l)
            groups.insert(wg::x_offset(t, wg::x_copy_column(k + l, cols), wg::x_copy_chunk(k + l, cols), cols) / 16 % 8);
          REQUIRE(groups.size() == 8);
        }
        if (k % 32 == 0) {
          // A warp: 8 activation rows, 4 consecutive chunks (64 bytes) of each.
          for (int l = 0; l < 32; ++l) {
            REQUIRE(wg::x_copy_column(k + l, cols) == n + l % 8);
            REQUIRE(wg::x_copy_chunk(k + l, cols) == c + (l / 8));
          }
        }
      }
      REQUIRE(offsets.size() == static_cast<size_t>(cols * wg::kChunks));
      REQUIRE(*offsets.rbegin() == cols * 512 - 16);
      // The GEMM's 512 threads: thread tid makes copies tid + 512 j, all of one column.
      for (int tid = 0; tid < 512; ++tid)
        for (int k = tid; k < cols * wg::kChunks; k += 512) REQUIRE(wg::x_copy_column(k, cols) == wg::x_copy_column(tid, cols));
    }
  }
}

TEST_CASE("wgmma: descriptors hold the start, LBO and SBO in 16-byte units and the 128-byte swizzle", "[wgmma]") {
  const uint32_t addr = 0x1A400;  // a stage in the upper half of shared memory, 1024-byte aligned
  const uint64_t d = wg::smem_desc(addr, wg::kSbo);
  CHECK(((d & 0x3FFF) << 4) == addr);
  CHECK(((d >> 16) & 0x3FFF) == 1);
  CHECK((((d >> 32) & 0x3FFF) << 4) == static_cast<uint64_t>(wg::kSbo));
  CHECK(((d >> 49) & 7) == 0);   // base offset: atoms 1024-byte aligned
  CHECK((d >> 62) == 1);         // 128-byte swizzle
  for (int cols : kColCounts) {
    for (int i = 0; i < wg::kSteps; ++i) {
      const int off = wg::b_start(i, cols);
      CHECK(wg::desc_at(d, off) == wg::smem_desc(addr + static_cast<uint32_t>(off), wg::kSbo));
    }
  }
}

// The attention tiles (attention_wgmma.cuh): 64 rows of 128 values.
constexpr int kAttnRows = 64, kAttnPanel = kAttnRows * 128;

TEST_CASE("wgmma attention: the tile holds each row's chunks once, copies of a row on 8 bank groups", "[wgmma]") {
  std::set<int> offsets;
  for (int r = 0; r < kAttnRows; ++r) {
    std::set<int> groups[2];
    for (int c = 0; c < 16; ++c) {
      const int off = wg::panel_offset(r, c, kAttnRows);
      REQUIRE(off % 16 == 0);
      REQUIRE(off / kAttnPanel == c / 8);  // values 64p .. 64p + 63 in panel p
      offsets.insert(off);
      groups[c / 8].insert(off / 16 % 8);
    }
    // The 8 lanes copying a row's chunks of one panel write 8 different 16-byte bank groups.
    REQUIRE(groups[0].size() == 8);
    REQUIRE(groups[1].size() == 8);
  }
  REQUIRE(offsets.size() == static_cast<size_t>(kAttnRows * 16));
  REQUIRE(*offsets.rbegin() == 2 * kAttnPanel - 16);
}

TEST_CASE("wgmma attention: K-major reads of Q and K see dims 16 kk .. 16 kk + 15 of each row", "[wgmma]") {
  for (int kk = 0; kk < 8; ++kk) {
    const int start = wg::kmajor_start(kk, kAttnRows);
    for (int n = 0; n < kAttnRows; ++n)
      for (int k = 0; k < 16; ++k) {
        const int v = 16 * kk + k;  // the value (dim) of row n that logical k of instruction kk multiplies
        REQUIRE(wg::b_elem_offset(start, k, n, wg::kAtomBytes) ==
                wg::panel_offset(n, v / 8, kAttnRows) + 2 * (v % 8));
      }
  }
}

TEST_CASE("wgmma attention: N-major reads of V see keys 16 kk .. 16 kk + 15, all 128 dims", "[wgmma]") {
  for (int kk = 0; kk < 4; ++kk) {
    const int start = wg::mn_start(kk);
    REQUIRE(start % wg::kAtomBytes == 0);  // whole atoms: base offset 0
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 128; ++n) {
        const int key = 16 * kk + k;
        REQUIRE(wg::mn_elem_offset(start, k, n, kAttnPanel, wg::kAtomBytes) ==
                wg::panel_offset(key, n / 8, kAttnRows) + 2 * (n % 8));
      }
  }
  const uint32_t addr = 0x12000;
  const uint64_t d = wg::smem_desc(addr, wg::kAtomBytes, kAttnPanel);
  CHECK(((d & 0x3FFF) << 4) == addr);
  CHECK((((d >> 16) & 0x3FFF) << 4) == static_cast<uint64_t>(kAttnPanel));  // LBO: the next 64 dims
  CHECK((((d >> 32) & 0x3FFF) << 4) == static_cast<uint64_t>(wg::kAtomBytes));  // SBO: the next 8 keys
  CHECK((d >> 62) == 1);
}
