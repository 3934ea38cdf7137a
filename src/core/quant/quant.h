// GGUF tensor types: traits of every id, and reference (de)quantizers and dot products.
//
// This is the CPU oracle: plain loops, F32 accumulation in a written-down
// order, which every CUDA kernel is tested against. Block layouts are in
// quant_blocks.h; they are the GGUF/ggml ones, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::core {

// Ids as stored in GGUF tensor infos. Gaps (4, 5, 31-33, 36-38) are ids ggml
// has retired; a file using them is rejected as unknown.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};

struct TypeTraits {
  const char* name;    // ggml's name, e.g. "q4_K"
  int64_t block_size;  // elements per block
  size_t type_size;    // bytes per block
  bool computable;     // has every CPU kernel: dequantize_row, quantize_row, vec_dot, vec_dot4
};

// nullptr when the id is not a known GGUF type.
const TypeTraits* find_type_traits(uint32_t id);
// Throws Error(STRATA_ERR_UNSUPPORTED) for a value outside the enum's ids.
const TypeTraits& type_traits(GgmlType type);
// Bytes of a row of n elements. Throws STRATA_ERR_INVALID_ARGUMENT if n is
// negative or not a multiple of the block size (or the size overflows).
size_t row_size(GgmlType type, int64_t n);
// Case-insensitive ggml name ("q4_k", "Q4_K", "f16", "bf16", ...) of any known
// type. Throws STRATA_ERR_INVALID_ARGUMENT listing the valid names otherwise.
GgmlType parse_type_name(std::string_view name);

// The functions below throw STRATA_ERR_UNSUPPORTED for a type that is not
// computable and STRATA_ERR_INVALID_ARGUMENT for n not a multiple of the
// block size. src/dst must not overlap.

// dst[0..n) = the values stored in the row src (row_size(type, n) bytes).
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
// Reference quantizer, fast and simple (no search): min/max per sub-block,
// F16 super-block scales rounded up so that nothing clips on their account,
// values rounded to nearest against the stored scales. Q4_0/Q5_0 map the
// value of largest magnitude to -8 / -16 (F16 scale to nearest), Q4_1/Q5_1
// take the block's minimum as m and its range over 15 / 31 as d. Q1_0 keeps
// the signs and the mean magnitude; Q2_0 tries the scales that put the
// largest magnitude at levels 1 to 3 by quarters, each refitted by least
// squares, and keeps the one of least squared error. The codebook types
// (IQ4_NL, IQ4_XS) take the least-squares scale of a first assignment and
// then the nearest codebook point of every value; the grid types (IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) likewise per span of one scale, each
// 8-group's signs those of its values (under parity codes the smallest one
// flipped where the count of negatives is odd) and its magnitudes the grid
// point nearest them rounded to the grid's levels; IQ1_S and IQ1_M try the
// scales that put a span's largest magnitude at 9/8, 1 and 7/8 of a step, each
// refitted, and give each 8-group the grid point nearest its values less the
// delta (rounded to -1, 0, +1) under the delta sign of least squared error
// (IQ1_S: one sign per 32 values). The FP4 types (MXFP4,
// NVFP4) try the two scales around the one that puts the largest magnitude
// at E2M1's largest value and keep the one of smaller squared error; NVFP4
// clips beyond 12 * 224 (its largest scale). Inputs must be finite;
// block scales beyond the F16 range saturate.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

// Activations for dot products with quantized weights, Q8_1-style: one block
// per 32 values. d = amax / 127 (F32), qs[i] = (int8) roundf(x[i] / d)
// (roundf: half away from zero; a division, not a multiply by 1/d), all zero
// with d == 0 when amax == 0 (or amax / 127 underflows to 0); qs clamped to
// +-127, which only bites for a subnormal d; sum = sum of qs. Every quantized weight type dots against this one format,
// so the CPU oracle and the CUDA kernels compute the same integer products.
struct BlockQ8A {
  float d;
  int32_t sum;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8A) == 40);

// n must be a multiple of 32; writes n / 32 blocks. Inputs must be finite.
void quantize_activations(const float* x, BlockQ8A* out, int64_t n);

enum class ActivationKind { F32, Q8A };
// The activation format a weight type's dot products take (a column of its
// row): F32 for the float types, Q8A for the block-quantized ones. A type
// without CPU kernels (not computable) throws STRATA_ERR_UNSUPPORTED.
ActivationKind activation_kind(GgmlType weight);
// Bytes of the activations for a row of n elements: 4 n for F32, 40 n / 32 for
// Q8A (n must then be a multiple of 32).
size_t activation_row_size(ActivationKind kind, int64_t n);

// Dot of one weight row (row_size(w, n) bytes) with activations of the kind
// activation_kind(w): const float* for F32, const BlockQ8A* for Q8A.
//
// Accumulation order (the CUDA kernels are checked against it). All products
// are F32, no fused multiply-add, one F32 accumulator `acc` starting at 0,
// blocks taken in ascending element order:
//   F32/F16/BF16: acc += w[i] * x[i] for i = 0..n-1 (w converted to F32).
//   Q8_0:  per 32-block b: isum = sum qw[i]*qa[i] (int32, exact);
//          acc += (d_w * d_a) * (float)isum.
//   Q4_0, Q5_0: as Q8_0 with qw = q - 8 / q - 16 (the signed values).
//   Q1_0, Q2_0: as Q8_0 per 32-value chunk c of block b (Q8A block 4 b + c
//          or 2 b + c) with the block's d, qw = +-1 / q - 1.
//   Q4_1, Q5_1: per 32-block b: isum = sum q[i]*qa[i] with q in 0..15 / 0..31
//          (int32, exact); acc += (d_w * d_a) * (float)isum + (m_w * d_a) * (float)a.sum.
//   Q4_K, Q5_K: per super-block, per 32-element sub-block j = 0..7 (aligned
//          with one Q8A block a): isum = sum q[i]*qa[i] with q in 0..15 / 0..31
//          (int32, exact); ws = d * (float)sc_j; wm = dmin * (float)m_j;
//          acc += a.d * (ws * (float)isum - wm * (float)a.sum).
//   Q2_K:  per super-block, per Q8A block c = 0..7, which covers the 16-element
//          sub-blocks 2c and 2c+1 (scale sc_k, min m_k): lo, hi = sum q[i]*qa[i]
//          over each half, s_lo, s_hi = sum qa[i] over each half (int32, exact);
//          isum = sc_2c * lo + sc_2c+1 * hi; msum = m_2c * s_lo + m_2c+1 * s_hi;
//          acc += a.d * (d * (float)isum - dmin * (float)msum).
//   Q3_K:  per super-block, per Q8A block c = 0..7 (sub-blocks 2c, 2c+1):
//          isum_lo, isum_hi = sum q[i]*qa[i] over each half with q in -4..3
//          (int32); isum = (sc_2c - 32) * isum_lo + (sc_2c+1 - 32) * isum_hi
//          (int32, exact); acc += (d * a.d) * (float)isum.
//   Q6_K:  per super-block, per Q8A block c = 0..7, which covers the 16-element
//          sub-blocks 2c and 2c+1: isum_lo, isum_hi = sum (q[i]-32)*qa[i] over
//          each half (int32); isum = sc_2c * isum_lo + sc_2c+1 * isum_hi
//          (int32, exact: |isum| < 2^24); acc += (d * a.d) * (float)isum.
//   IQ4_NL: per 32-block: isum = sum v[i]*qa[i] with v the codebook values
//          (int32, exact); acc += (d * a.d) * (float)isum.
//   IQ4_XS: per super-block, per 32-element group j = 0..7 (one Q8A block):
//          isum as IQ4_NL's; acc += (d * a.d) * (float)((ls_j - 32) * isum)
//          (int32, exact: |(ls_j - 32) * isum| <= 32 * 32 * 127 * 127 < 2^24).
//   IQ2_XXS: per super-block, per 32-element group j = 0..7 (one Q8A block):
//          isum = sum m[i]*qa[i] with m the signed grid magnitudes (int32);
//          acc += ((d * 0.125f) * a.d) * (float)((2 s_j + 1) * isum)
//          (exact: |(2 s_j + 1) * isum| <= 31 * 43 * 127 * 32 < 2^24).
//   IQ2_XS, IQ2_S: as IQ2_XXS with a scale per half: the group's integer is
//          (2 s_lo + 1) * isum_lo + (2 s_hi + 1) * isum_hi (elements 0..15, 16..31).
//   IQ3_XXS: as IQ2_XXS with d * 0.25f (|isum| <= 62 * 127 * 32).
//   IQ3_S: as IQ2_XXS with d itself (factor 1; magnitudes <= 15).
//   IQ1_S, IQ1_M: per super-block, per 32-element group (one Q8A block): per
//          half h (elements 0..15, 16..31; one s in IQ1_S) isum_h = sum w[i]*qa[i]
//          with w = 8 g + 8 delta (g the grid value, delta +-1/8: w odd,
//          |w| <= 9); acc += ((d * 0.125f) * a.d) * (float)((2 s_lo + 1) *
//          isum_lo + (2 s_hi + 1) * isum_hi) (exact: |.| <= 15 * 9 * 127 * 32).
//   MXFP4: as IQ4_NL with the doubled E2M1 values and d = kE8m0Half[e].
//   NVFP4: per block, per 16-element sub-block s = 0..3 (the half s % 2 of
//          Q8A block 2 b + s / 2): isum as IQ4_NL's over its 16 values;
//          acc += (kUe4m3Half[d_s] * a.d) * (float)isum.
float vec_dot(GgmlType w, const void* wrow, const void* act, int64_t n);

// out[r] = vec_dot(w, rows[r], act, n) for r = 0..3, bit for bit; faster
// than four calls where the CPU has AVX2 (the rows share the activation
// loads and their sums interleave).
void vec_dot4(GgmlType w, const void* const rows[4], const void* act, int64_t n, float out[4]);

// out[r] = vec_dot(type, row r of w, act, cols) for r in 0..rows-1; rows are
// row_size(type, cols) bytes apart. Single-threaded: the engine adds threads.
void matvec(GgmlType type, const void* w, int64_t rows, int64_t cols, const void* act, float* out);

}  // namespace strata::core
