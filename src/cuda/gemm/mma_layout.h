// Register layouts of mma.sync m16n8k16 (F16 in, F32 out) and ldmatrix, the lane addresses the attention kernel gives ldmatrix and the quantized GEMM's K order, as maps a CPU test checks.
//
// Plain C++ (no CUDA header) so that tests/unit can emulate a warp with them.
// Source: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
// type" and "ldmatrix". Notation: lane in [0, 32), g = lane >> 2 (groupID),
// t = lane % 4 (threadID_in_group). Two 16-bit elements share a 32-bit
// register, the lower-numbered one in the low half.
//
//   A (16 x 16, row-major), a0..a7 in 4 registers {a0,a1} {a2,a3} {a4,a5} {a6,a7}:
//     row = g for a0, a1, a4, a5 and g + 8 for a2, a3, a6, a7;
//     col = 2t + (i & 1), plus 8 for a4..a7.
//     So register 0 = A[g][2t..2t+1], 1 = A[g+8][2t..], 2 = A[g][2t+8..], 3 = A[g+8][2t+8..].
//   B (16 x 8, K x N, "col": K contiguous per column), b0..b3 in 2 registers:
//     row (k) = 2t + (i & 1), plus 8 for b2, b3; col (n) = g.
//   C, D (16 x 8, F32), c0..c3 in 4 registers:
//     row = g for c0, c1 and g + 8 for c2, c3; col = 2t + (i & 1).
//   ldmatrix.m8n8.x4.b16: lane l gives the address of row l % 8 of matrix
//     l / 8 (16 bytes = 8 elements each); destination register j holds two
//     elements of matrix j: (row, col) = (l / 4, 2 (l % 4) + e), e = 0 in
//     the low half, 1 in the high half. With .trans it holds the transposed
//     pair (row, col) = (2 (l % 4) + e, l / 4).
#pragma once

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

namespace strata::cuda::mma {

struct Coord {
  int row, col;
};

// Element a_i (i in [0, 8)) of lane's A fragment.
constexpr STRATA_HD Coord a_elem(int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  const bool low_row = i < 2 || (i >= 4 && i < 6);
  return {low_row ? g : g + 8, 2 * t + (i & 1) + (i >= 4 ? 8 : 0)};
}

// Element b_i (i in [0, 4)) of lane's B fragment, as (k, n).
constexpr STRATA_HD Coord b_elem(int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  return {2 * t + (i & 1) + (i >= 2 ? 8 : 0), g};
}

// Element c_i (i in [0, 4)) of lane's C/D fragment.
constexpr STRATA_HD Coord c_elem(int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  return {i < 2 ? g : g + 8, 2 * t + (i & 1)};
}

// Element e (0 low, 1 high) of a register that ldmatrix filled from one 8 x 8
// matrix, as (row, col) of that matrix as stored.
constexpr STRATA_HD Coord ldsm_elem(int lane, int e, bool trans) {
  return trans ? Coord{2 * (lane & 3) + e, lane >> 2} : Coord{lane >> 2, 2 * (lane & 3) + e};
}

// ---- the attention kernel's ldmatrix addresses -------------------------------
//
// Each returns the (row, col) of the stored tile whose address `lane` gives
// one ldmatrix.x4; the comment says which fragments the 4 registers become.

// Q, stored [query row][dim], a 16 x 16 block at (row0, col0): matrices
// (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) are exactly
// A registers 0..3 of the block.
constexpr STRATA_HD Coord q_ldsm(int lane) { return {lane & 15, (lane >> 4) * 8}; }

// K, stored [key][dim], 16 keys x 16 dims at (key0, dim0); S = Q K^T takes
// B[k = dim][n = key] = K[key][dim], K-contiguous per key, so no transpose:
// matrices (keys 0-7, dims 0-7), (keys 0-7, dims 8-15), (keys 8-15, dims
// 0-7), (keys 8-15, dims 8-15) are B registers {0, 1} of the key n-tile
// key0 .. key0 + 7 and B registers {0, 1} of the n-tile key0 + 8 .. key0 + 15.
constexpr STRATA_HD Coord k_ldsm(int lane) { return {(lane & 7) + ((lane >> 4) << 3), ((lane >> 3) & 1) * 8}; }

// V, stored [key][dim], 16 keys x 16 dims at (key0, dim0); O = P V takes
// B[k = key][n = dim] = V[key][dim], which is N-contiguous, hence .trans:
// matrices (keys 0-7, dims 0-7), (keys 8-15, dims 0-7), (keys 0-7, dims
// 8-15), (keys 8-15, dims 8-15) are B registers {0, 1} of the dim n-tile
// dim0 .. dim0 + 7 and B registers {0, 1} of the n-tile dim0 + 8 .. dim0 + 15.
constexpr STRATA_HD Coord v_ldsm(int lane) { return {(lane & 7) + (((lane >> 3) & 1) << 3), (lane >> 4) * 8}; }

// P as the A operand of O = P V, from the C fragments of S = Q K^T: A
// register r (0..3) of the k-step over keys 16 kk .. 16 kk + 15 is the pair
// {c_{2h}, c_{2h+1}} (h = p_pair(r)) of the S n-tile 2 kk + p_ntile(r).
// (C rows g / g + 8 and cols 2t, 2t + 1 are where A registers want them.)
constexpr STRATA_HD int p_ntile(int r) { return r >> 1; }
constexpr STRATA_HD int p_pair(int r) { return r & 1; }

// ---- the quantized GEMM's K order (mmq_f16.cuh) -----------------------------
//
// The GEMM decodes its A fragments (weight rows) from GGUF bytes in
// registers, four consecutive values of a row at a time, so each lane takes
// consecutive values: within a 32-value block of K, lane (g, t) holds values
// 8t .. 8t + 7 of its A rows and of its B column (an activation row), and
// k-step s (0, 1) of the block uses values 8t + 4s .. 8t + 4s + 3 for its
// logical k 2t, 2t + 1 (A registers 0, 1; B register 0) and 2t + 8, 2t + 9
// (A registers 2, 3; B register 1). The MMA sums over k, and A and B share
// the order, so the two k-steps give each block's whole dot product.

// The first of the four values of a block that lane's registers of k-step s
// hold: a multiple of 4 (w4's group k4 = this / 4, activation halves from here).
constexpr STRATA_HD int gemm_lane_value(int lane, int s) { return 8 * (lane & 3) + 4 * s; }

// The block value that logical k (0..15) of k-step s stands for.
constexpr STRATA_HD int gemm_block_value(int s, int k) {
  return gemm_lane_value((k & 7) >> 1, s) + (k & 1) + (k >= 8 ? 2 : 0);
}

}  // namespace strata::cuda::mma
