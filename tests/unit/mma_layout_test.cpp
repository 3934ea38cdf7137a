// The tensor-core fragment maps of mma_layout.h on an emulated warp: coverage, the attention kernel's ldmatrix addresses, P re-packing, S = Q K^T and O = P V, the quantized GEMM's K order.
#include <array>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "cuda/gemm/mma_layout.h"

using strata::cuda::mma::Coord;
namespace mma = strata::cuda::mma;

namespace {

constexpr int kLanes = 32;

// Each (row, col) of a rows x cols matrix is named by exactly one (lane, i).
template <typename F>
bool covers_once(int rows, int cols, int n_per_lane, F elem) {
  std::vector<int> hits(static_cast<size_t>(rows * cols), 0);
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < n_per_lane; ++i) {
      const Coord c = elem(lane, i);
      if (c.row < 0 || c.row >= rows || c.col < 0 || c.col >= cols) return false;
      ++hits[static_cast<size_t>(c.row * cols + c.col)];
    }
  }
  for (int h : hits) {
    if (h != 1) return false;
  }
  return true;
}

// A matrix in emulated shared memory: element (r, c) at data[r * ld + c].
struct Smem {
  int ld;
  std::vector<float> data;
  Smem(int rows, int ld_) : ld(ld_), data(static_cast<size_t>(rows * ld_), -1.0f) {}
  float& at(int r, int c) { return data[static_cast<size_t>(r * ld + c)]; }
  float at(int r, int c) const { return data[static_cast<size_t>(r * ld + c)]; }
};

// Registers of one ldmatrix.x4: [lane][register][half].
using Regs4 = std::array<std::array<std::array<float, 2>, 4>, kLanes>;

// ldmatrix.x4 (.trans or not) where lane l gives the address base + addr(l):
// matrix j's row r is at the address of lane 8 j + r (mma_layout.h).
template <typename Addr>
Regs4 ldsm(const Smem& s, int row0, int col0, Addr addr, bool trans) {
  Regs4 out{};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int j = 0; j < 4; ++j) {
      for (int e = 0; e < 2; ++e) {
        const Coord in = mma::ldsm_elem(lane, e, trans);  // (row, col) of matrix j as stored
        const Coord a = addr(8 * j + in.row);
        out[lane][j][e] = s.at(row0 + a.row, col0 + a.col + in.col);
      }
    }
  }
  return out;
}

// Fragments as the hardware holds them: A 8 values, B 4, C 4 per lane.
using FragA = std::array<std::array<float, 8>, kLanes>;
using FragB = std::array<std::array<float, 4>, kLanes>;
using FragC = std::array<std::array<float, 4>, kLanes>;

// mma.m16n8k16: D = A B + C on fragments, through the maps.
void mma_emulated(FragC& d, const FragA& a, const FragB& b) {
  float A[16][16], B[16][8], C[16][8];
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < 8; ++i) A[mma::a_elem(lane, i).row][mma::a_elem(lane, i).col] = a[lane][i];
    for (int i = 0; i < 4; ++i) B[mma::b_elem(lane, i).row][mma::b_elem(lane, i).col] = b[lane][i];
    for (int i = 0; i < 4; ++i) C[mma::c_elem(lane, i).row][mma::c_elem(lane, i).col] = d[lane][i];
  }
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 8; ++c) {
      float acc = C[r][c];
      for (int k = 0; k < 16; ++k) acc += A[r][k] * B[k][c];
      C[r][c] = acc;
    }
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < 4; ++i) d[lane][i] = C[mma::c_elem(lane, i).row][mma::c_elem(lane, i).col];
  }
}

FragA a_from(const Regs4& r) {
  FragA a{};
  for (int lane = 0; lane < kLanes; ++lane)
    for (int i = 0; i < 8; ++i) a[lane][i] = r[lane][i / 2][i % 2];
  return a;
}

// B fragment of registers {2 half, 2 half + 1} of an x4 load (half 0 or 1).
FragB b_from(const Regs4& r, int half) {
  FragB b{};
  for (int lane = 0; lane < kLanes; ++lane)
    for (int i = 0; i < 4; ++i) b[lane][i] = r[lane][2 * half + i / 2][i % 2];
  return b;
}

// Small integers: every product and sum below is exact in F32.
float value(int r, int c, int salt) { return static_cast<float>((r * 7 + c * 3 + salt) % 11 - 5); }

}  // namespace

TEST_CASE("mma m16n8k16 fragment maps cover A, B and C exactly once") {
  CHECK(covers_once(16, 16, 8, mma::a_elem));
  CHECK(covers_once(16, 8, 4, mma::b_elem));
  CHECK(covers_once(16, 8, 4, mma::c_elem));
  CHECK(covers_once(8, 8, 2, [](int lane, int e) { return mma::ldsm_elem(lane, e, false); }));
  CHECK(covers_once(8, 8, 2, [](int lane, int e) { return mma::ldsm_elem(lane, e, true); }));
  // A's registers hold pairs of adjacent columns, as ldmatrix delivers them.
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int r = 0; r < 4; ++r) {
      CHECK(mma::a_elem(lane, 2 * r).row == mma::a_elem(lane, 2 * r + 1).row);
      CHECK(mma::a_elem(lane, 2 * r).col + 1 == mma::a_elem(lane, 2 * r + 1).col);
    }
  }
}

TEST_CASE("attention ldmatrix addresses give the Q, K and V fragments") {
  constexpr int kLd = 40;  // a padded stride, as the kernel's D + 8
  Smem s(32, kLd);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) s.at(r, c) = static_cast<float>(r * 100 + c);
  for (int row0 : {0, 16}) {
    for (int col0 : {0, 16}) {
      // Q [row][dim] as A: all four registers.
      const Regs4 q = ldsm(s, row0, col0, mma::q_ldsm, false);
      for (int lane = 0; lane < kLanes; ++lane)
        for (int i = 0; i < 8; ++i) {
          const Coord a = mma::a_elem(lane, i);
          CHECK(q[lane][i / 2][i % 2] == s.at(row0 + a.row, col0 + a.col));
        }
      // K [key][dim]: B[k = dim][n = key] of n-tiles keys 0-7 (registers 0, 1) and 8-15 (2, 3).
      const Regs4 k = ldsm(s, row0, col0, mma::k_ldsm, false);
      for (int lane = 0; lane < kLanes; ++lane)
        for (int nt = 0; nt < 2; ++nt)
          for (int i = 0; i < 4; ++i) {
            const Coord b = mma::b_elem(lane, i);
            CHECK(k[lane][2 * nt + i / 2][i % 2] == s.at(row0 + 8 * nt + b.col, col0 + b.row));
          }
      // V [key][dim]: B[k = key][n = dim] of n-tiles dims 0-7 (registers 0, 1) and 8-15 (2, 3).
      const Regs4 v = ldsm(s, row0, col0, mma::v_ldsm, true);
      for (int lane = 0; lane < kLanes; ++lane)
        for (int nt = 0; nt < 2; ++nt)
          for (int i = 0; i < 4; ++i) {
            const Coord b = mma::b_elem(lane, i);
            CHECK(v[lane][2 * nt + i / 2][i % 2] == s.at(row0 + b.row, col0 + 8 * nt + b.col));
          }
    }
  }
}

TEST_CASE("P re-packed from S's C fragments is the A fragment of P") {
  // S: 16 rows x 16 keys as two C n-tiles.
  FragC s[2];
  for (int nt = 0; nt < 2; ++nt)
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < 4; ++i) {
        const Coord c = mma::c_elem(lane, i);
        s[nt][lane][i] = value(c.row, 8 * nt + c.col, 1);
      }
  for (int lane = 0; lane < kLanes; ++lane)
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < 2; ++e) {
        const float got = s[mma::p_ntile(r)][lane][2 * mma::p_pair(r) + e];
        const Coord a = mma::a_elem(lane, 2 * r + e);
        CHECK(got == value(a.row, a.col, 1));
      }
}

// One warp's two products as the kernel runs them: 32 query rows (two m16
// tiles), 32 keys, head dim 32, every fragment from emulated ldmatrix.
TEST_CASE("emulated warp: S = Q K^T and O = P V through the kernel's fragments") {
  constexpr int kRows = 32, kKeys = 32, kD = 32, kLd = kD + 8;
  Smem q(kRows, kLd), k(kKeys, kLd), v(kKeys, kLd);
  for (int r = 0; r < kRows; ++r)
    for (int d = 0; d < kD; ++d) q.at(r, d) = value(r, d, 2);
  for (int j = 0; j < kKeys; ++j)
    for (int d = 0; d < kD; ++d) {
      k.at(j, d) = value(j, d, 3);
      v.at(j, d) = value(d, j, 4);
    }

  // S: for each k-step, A from Q and B pairs of n-tiles from K.
  FragC s[2][kKeys / 8] = {};
  for (int kk = 0; kk < kD / 16; ++kk) {
    for (int mt = 0; mt < 2; ++mt) {
      const FragA a = a_from(ldsm(q, 16 * mt, 16 * kk, mma::q_ldsm, false));
      for (int np = 0; np < kKeys / 16; ++np) {
        const Regs4 b = ldsm(k, 16 * np, 16 * kk, mma::k_ldsm, false);
        mma_emulated(s[mt][2 * np], a, b_from(b, 0));
        mma_emulated(s[mt][2 * np + 1], a, b_from(b, 1));
      }
    }
  }
  for (int mt = 0; mt < 2; ++mt)
    for (int nt = 0; nt < kKeys / 8; ++nt)
      for (int lane = 0; lane < kLanes; ++lane)
        for (int i = 0; i < 4; ++i) {
          const Coord c = mma::c_elem(lane, i);
          float want = 0.0f;
          for (int d = 0; d < kD; ++d) want += q.at(16 * mt + c.row, d) * k.at(8 * nt + c.col, d);
          CHECK(s[mt][nt][lane][i] == want);
        }

  // O = S V with S re-packed as P (no softmax: the layout is what is checked).
  FragC o[2][kD / 8] = {};
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    for (int mt = 0; mt < 2; ++mt) {
      FragA a{};
      for (int lane = 0; lane < kLanes; ++lane)
        for (int r = 0; r < 4; ++r)
          for (int e = 0; e < 2; ++e) a[lane][2 * r + e] = s[mt][2 * kk + mma::p_ntile(r)][lane][2 * mma::p_pair(r) + e];
      for (int dp = 0; dp < kD / 16; ++dp) {
        const Regs4 b = ldsm(v, 16 * kk, 16 * dp, mma::v_ldsm, true);
        mma_emulated(o[mt][2 * dp], a, b_from(b, 0));
        mma_emulated(o[mt][2 * dp + 1], a, b_from(b, 1));
      }
    }
  }
  for (int mt = 0; mt < 2; ++mt)
    for (int dt = 0; dt < kD / 8; ++dt)
      for (int lane = 0; lane < kLanes; ++lane)
        for (int i = 0; i < 4; ++i) {
          const Coord c = mma::c_elem(lane, i);
          const int row = 16 * mt + c.row, dim = 8 * dt + c.col;
          float want = 0.0f;
          for (int j = 0; j < kKeys; ++j) {
            float sj = 0.0f;
            for (int d = 0; d < kD; ++d) sj += q.at(row, d) * k.at(j, d);
            want += sj * v.at(j, dim);
          }
          CHECK(o[mt][dt][lane][i] == want);
        }
}

// One warp's m16 x n8 tile over a 32-value block of K as the quantized GEMM
// (mmq_f16.cuh) fills its registers: each lane four consecutive values per
// k-step from gemm_lane_value, A rows g (registers 0, 2) and g + 8 (1, 3),
// B registers 0 and 1 the lane's first and last pair. Two k-steps must give
// every (row, position) its whole 32-value dot product.
TEST_CASE("emulated warp: the quantized GEMM's K order gives each block's dot product") {
  float W[16][32], X[8][32];  // weight rows x block values, positions x block values
  for (int r = 0; r < 16; ++r)
    for (int v = 0; v < 32; ++v) W[r][v] = value(r, v, 5);
  for (int n = 0; n < 8; ++n)
    for (int v = 0; v < 32; ++v) X[n][v] = value(n, v, 6);
  FragC d{};
  for (int s = 0; s < 2; ++s) {
    FragA a{};
    FragB b{};
    for (int lane = 0; lane < kLanes; ++lane) {
      const int g = lane >> 2, v0 = mma::gemm_lane_value(lane, s);
      for (int r = 0; r < 4; ++r)
        for (int e = 0; e < 2; ++e) a[lane][2 * r + e] = W[g + 8 * (r & 1)][v0 + 2 * (r >> 1) + e];
      for (int i = 0; i < 4; ++i) b[lane][i] = X[g][v0 + i];
    }
    // gemm_block_value names the value PTX's (row, k) of each register holds.
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int i = 0; i < 8; ++i) {
        const Coord c = mma::a_elem(lane, i);
        CHECK(a[lane][i] == W[c.row][mma::gemm_block_value(s, c.col)]);
      }
      for (int i = 0; i < 4; ++i) {
        const Coord c = mma::b_elem(lane, i);
        CHECK(b[lane][i] == X[c.col][mma::gemm_block_value(s, c.row)]);
      }
    }
    mma_emulated(d, a, b);
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < 4; ++i) {
      const Coord c = mma::c_elem(lane, i);
      float want = 0.0f;
      for (int v = 0; v < 32; ++v) want += W[c.row][v] * X[c.col][v];
      CHECK(d[lane][i] == want);
    }
  }
  // Each k-step covers 16 distinct values, and the two steps all 32.
  std::vector<int> hits(32, 0);
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 16; ++k) ++hits[static_cast<size_t>(mma::gemm_block_value(s, k))];
  for (int h : hits) CHECK(h == 1);
}
