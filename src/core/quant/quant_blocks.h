// Block layouts of the computable GGUF types, bit for bit as ggml stores them.
//
// Every field has its natural alignment at its offset, so the structs need no
// packing attribute (which would make taking a field's address unsafe); the
// static_asserts pin the sizes and offsets to the GGUF ones. Halves are kept
// as their raw uint16_t bits (fp16.h converts them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/quant/quant_tables.h"

namespace strata::core {

inline constexpr int kQK8_0 = 32;   // elements per Q8_0 block
inline constexpr int kQK_K = 256;   // elements per K-quant super-block
inline constexpr int kKScaleBytes = 12;

// Q8_0: x[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

// The legacy 32-element types. Value j < 16 sits in the low nibble of qs[j],
// value j + 16 in its high nibble (halves, not interleaved pairs); the 5-bit
// types take value j's fifth bit from bit j of qh read as a little-endian u32.
// Q4_0: x = d * (q - 8), q in 0..15.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x = d * q + m, q in 0..15.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x = d * (q - 16), q in 0..31.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22 && offsetof(BlockQ5_0, qs) == 6);

// Q5_1: x = d * q + m, q in 0..31.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24 && offsetof(BlockQ5_1, qh) == 4 && offsetof(BlockQ5_1, qs) == 8);

// The 1- and 2-bit scale-only types span several 32-value chunks, one scale
// for all; chunk c of block i dots with Q8A block kChunks * i + c.
inline constexpr int kQK1_0 = 128;  // elements per Q1_0 block
inline constexpr int kQK2_0 = 64;   // elements per Q2_0 block

// Q1_0: x = +d where bit j % 8 of qs[j / 8] is set (least significant bit
// first), else -d; there is no zero.
struct BlockQ1_0 {
  uint16_t d;
  uint8_t qs[kQK1_0 / 8];
};
static_assert(sizeof(BlockQ1_0) == 18);

// Q2_0: x = d * (q - 1), q in 0..3 at bits 2 (j % 4) and 2 (j % 4) + 1 of
// qs[j / 4]: the levels -d, 0, d, 2d.
struct BlockQ2_0 {
  uint16_t d;
  uint8_t qs[kQK2_0 / 4];
};
static_assert(sizeof(BlockQ2_0) == 18);

// 32-value chunks (Q8A blocks) per block of a one-scale type: 1 for the
// 32-element types, 4 for Q1_0, 2 for Q2_0.
template <typename Block>
inline constexpr int kChunks = 1;
template <>
inline constexpr int kChunks<BlockQ1_0> = kQK1_0 / 32;
template <>
inline constexpr int kChunks<BlockQ2_0> = kQK2_0 / 32;

// Q2_K: 16 sub-blocks of 16; x = d * sc_k * q - dmin * m_k with q in 0..3,
// sc_k the low and m_k the high nibble of scales[k]. Two halves of 128
// values; in half h, for l < 32 and s = 0..3 the value 128h + 32s + l sits
// in qs[32h + l] at bits 2s, 2s+1.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(offsetof(BlockQ2_K, qs) == 16 && offsetof(BlockQ2_K, d) == 80 && offsetof(BlockQ2_K, dmin) == 82);

// Q3_K: 16 sub-blocks of 16; x = d * (sc_k - 32) * q with q in -4..3 and
// 6-bit sc_k (see unpack_scale_q3_k). Value i = 128h + 32s + l (l < 32) has
// its low 2 bits in qs[32h + l] at bits 2s, 2s+1 and its high bit in
// hmask[l] at bit 4h + s; q = low 2 bits - 4 when that bit is 0, else the
// low 2 bits.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kKScaleBytes];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(offsetof(BlockQ3_K, qs) == 32 && offsetof(BlockQ3_K, scales) == 96 && offsetof(BlockQ3_K, d) == 108);

// Q4_K: 8 sub-blocks of 32; x = d * sc_j * q - dmin * m_j with q in 0..15 and
// 6-bit sc_j, m_j packed in `scales` (see unpack_scale_min_k4). The 256
// values form 4 groups of 64; group g uses qs[32g .. 32g+31]: the low nibbles
// hold values 64g .. 64g+31, the high nibbles values 64g+32 .. 64g+63.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(offsetof(BlockQ4_K, scales) == 4 && offsetof(BlockQ4_K, qs) == 16);

// Q5_K: as Q4_K, with a fifth bit per value: value 64g + l (l < 32) takes
// bit 2g of qh[l], value 64g + 32 + l takes bit 2g + 1 of qh[l]. q in 0..31.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48);

// Q6_K: 16 sub-blocks of 16; x = d * scales[e / 16] * (q - 32), q in 0..63.
// Two halves of 128 values; in half h, for l < 32 and k = 0..3 the value
// 128h + 32k + l has its low 4 bits in ql[64h + l + 32 (k & 1)] (low nibble
// for k < 2, high nibble for k >= 2) and its high 2 bits in qh[32h + l] at
// bits 2k, 2k+1.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(offsetof(BlockQ6_K, qh) == 128 && offsetof(BlockQ6_K, scales) == 192 &&
              offsetof(BlockQ6_K, d) == 208);

// The 12 scale bytes of Q4_K/Q5_K hold 8 six-bit scales and 8 six-bit mins.
// For j < 4: sc_j = bytes[j] & 63, m_j = bytes[j+4] & 63. For j >= 4 the low
// 4 bits sit in bytes[j+4] (scale: low nibble, min: high nibble) and the high
// 2 bits in the top bits of bytes[j-4] (scale) and bytes[j] (min).
inline void unpack_scale_min_k4(const uint8_t* bytes, int j, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = bytes[j] & 63;
    m = bytes[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((bytes[j + 4] & 0x0f) | ((bytes[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((bytes[j + 4] >> 4) | ((bytes[j] >> 6) << 4));
  }
}

// Inverse of unpack_scale_min_k4; sc and m must be < 64.
inline void pack_scale_min_k4(const uint8_t sc[8], const uint8_t m[8], uint8_t* bytes) {
  for (int j = 0; j < 4; ++j) {
    bytes[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    bytes[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    bytes[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4));
  }
}

// The 12 scale bytes of Q3_K hold 16 six-bit scales, each the signed scale
// plus 32. Scale k has its low 4 bits in bytes[k] (low nibble) for k < 8 or
// bytes[k - 8] (high nibble) for k >= 8, and its high 2 bits in
// bytes[8 + k % 4] at bits 2 (k / 4), 2 (k / 4) + 1.
inline uint8_t unpack_scale_q3_k(const uint8_t* bytes, int k) {
  const int low = k < 8 ? (bytes[k] & 0x0f) : (bytes[k - 8] >> 4);
  const int high = (bytes[8 + k % 4] >> (2 * (k / 4))) & 3;
  return static_cast<uint8_t>(low | (high << 4));
}

// Inverse of unpack_scale_q3_k; sc must be < 64.
inline void pack_scales_q3_k(const uint8_t sc[16], uint8_t* bytes) {
  for (int k = 0; k < kKScaleBytes; ++k) bytes[k] = 0;
  for (int k = 0; k < 16; ++k) {
    bytes[k % 8] = static_cast<uint8_t>(bytes[k % 8] | ((sc[k] & 0x0f) << (k < 8 ? 0 : 4)));
    bytes[8 + k % 4] = static_cast<uint8_t>(bytes[8 + k % 4] | ((sc[k] >> 4) << (2 * (k / 4))));
  }
}

inline constexpr int kQK4_NL = 32;  // elements per IQ4_NL block

// IQ4_NL: x[j] = d * kIq4nlValues[q_j] (quant_tables.h) with q_j the low
// nibble of qs[j] for j < 16 and the high nibble of qs[j - 16] otherwise.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK4_NL / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// IQ4_XS: eight groups of 32, each laid out like IQ4_NL in qs[16 ib ..] with
// the scale d * (ls_ib - 32); ls_ib is 6 bits: its low nibble is nibble
// ib % 2 of scales_l[ib / 2], its high 2 bits are bits 2 ib, 2 ib + 1 of scales_h.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(offsetof(BlockIQ4_XS, scales_l) == 4 && offsetof(BlockIQ4_XS, qs) == 8);

inline uint8_t unpack_scale_iq4_xs(const BlockIQ4_XS& b, int ib) {
  const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
  const int high = (b.scales_h >> (2 * ib)) & 3;
  return static_cast<uint8_t>(low | (high << 4));
}

// The FP4 types store E2M1 codes, decoded through kFp4Values (the values
// doubled) times a scale decoded halved (quant_tables.h).
inline constexpr int kQKMxfp4 = 32;  // elements per MXFP4 block
inline constexpr int kQKNvfp4 = 64;  // elements per NVFP4 block

// MXFP4: x[j] = kE8m0Half[e] * kFp4Values[q_j], nibbles as IQ4_NL's (value j
// low in qs[j], value j + 16 high). e = 0xff decodes to 2^127, as llama.cpp's
// CPU does (its optional row check refuses it; this reader does not scan rows).
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQKMxfp4 / 2];
};
static_assert(sizeof(BlockMXFP4) == 17);

// NVFP4: four sub-blocks of 16, sub-block s scaled by kUe4m3Half[d[s]]; its
// values j < 8 are the low nibbles of qs[8 s + j], values 8 + j the high ones.
// Scale bytes with bit 7 set decode as llama.cpp's CPU reads them (the table;
// CUDA's FP8 intrinsics would read them signed): no quantizer writes them.
struct BlockNVFP4 {
  uint8_t d[kQKNvfp4 / 16];
  uint8_t qs[kQKNvfp4 / 2];
};
static_assert(sizeof(BlockNVFP4) == 36);

// The grid IQ types store each 8 values as a point of a fixed grid of
// magnitudes (quant_tables.h; one point of 8 or two of 4), their signs, and a
// 4-bit scale s per 32 or per 16 values: x = d * (2s + 1) / factor * grid
// byte, negated where the sign says (factor: 8 for IQ2_*, 4 for IQ3_XXS, 1
// for IQ3_S). GridGroup is one 32-group unpacked; read_grid_group and
// write_grid_group below map it to and from each type's bytes.
struct GridGroup {
  uint16_t idx[8];   // grid points in element order (four or eight used)
  uint8_t signs[4];  // 8-group l: bit j set negates element j
  uint8_t scale[2];  // s of elements 0..15 and 16..31 (equal where one s covers 32)
};

// IQ2_XXS: per 32-group ib, eight bytes at qs + 4 ib: bytes 0..3 index
// kIq2xxsGrid for its four 8-groups; bytes 4..7 are a u32 w whose bits 7l ..
// 7l + 6 are 8-group l's sign code (kSignsIq2xs: the code with its parity as
// bit 7, so an even number of negations) and bits 28..31 the scale s; factor 8.
struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[kQK_K / 8];
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

// IQ2_XS: qs[4 ib + l] holds 8-group l's 9-bit kIq2xsGrid index in bits 0..8
// and its sign code (as IQ2_XXS's) in bits 9..15; scales[ib]'s low nibble is
// the s of 8-groups 0..1, its high nibble that of 2..3; factor 8.
struct BlockIQ2_XS {
  uint16_t d;
  uint16_t qs[kQK_K / 8];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2_XS) == 74 && offsetof(BlockIQ2_XS, scales) == 66);

// IQ2_S: 8-group l of group ib indexes kIq2sGrid at qs[4 ib + l] + 256 *
// bits 2l .. 2l + 1 of qh[ib]; qs[32 + 4 ib + l] is its sign byte (any
// parity); scales as IQ2_XS's; factor 8.
struct BlockIQ2_S {
  uint16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2_S) == 82 && offsetof(BlockIQ2_S, qh) == 66 && offsetof(BlockIQ2_S, scales) == 74);

// IQ3_XXS: qs[8 ib .. 8 ib + 7] index kIq3xxsGrid twice per 8-group (its
// elements 0..3, then 4..7); the u32 at qs + 64 + 4 ib holds the sign codes
// and s as IQ2_XXS's w; factor 4.
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[3 * kQK_K / 8];
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

// IQ3_S: qs[8 ib + k] + 256 * bit k of qh[ib] indexes kIq3sGrid for elements
// 4k .. 4k + 3 of group ib; signs[4 ib + l] is 8-group l's sign byte; s is
// nibble ib % 2 of scales[ib / 2]; factor 1.
struct BlockIQ3_S {
  uint16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t signs[kQK_K / 8];
  uint8_t scales[kQK_K / 64];
};
static_assert(sizeof(BlockIQ3_S) == 110 && offsetof(BlockIQ3_S, qh) == 66 && offsetof(BlockIQ3_S, signs) == 74 &&
              offsetof(BlockIQ3_S, scales) == 106);

// IQ1_S and IQ1_M store each 8 values as a point g of a grid of signed values
// (kIq1sGrid in quant_tables_iq1.h: each -1, 0 or +1; an 11-bit index),
// shifted by a delta of +-1/8: x = d * (2s + 1) * (g + delta) with a 3-bit
// scale s. Iq1Group is one 32-group unpacked (read_iq1_group, write_iq1_group
// below).
struct Iq1Group {
  uint16_t idx[4];   // 8-group l's grid point
  uint8_t neg;       // bit l set: 8-group l's delta is -1/8 (else +1/8)
  uint8_t scale[2];  // s of elements 0..15 and 16..31 (equal in IQ1_S)
};

// IQ1_S: 8-group l of group ib indexes kIq1sGrid at qs[4 ib + l] + 256 * bits
// 3l .. 3l + 2 of qh[ib]; bits 12..14 of qh[ib] are the group's s, bit 15 its
// delta's sign (one delta per 32).
struct BlockIQ1_S {
  uint16_t d;
  uint8_t qs[kQK_K / 8];
  uint16_t qh[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1_S) == 50 && offsetof(BlockIQ1_S, qh) == 34);

// IQ1_M: 8-group l of group ib indexes kIq1sGrid at qs[4 ib + l] + 256 * bits
// 0..2 of nibble l % 2 of qh[2 ib + l / 2], whose bit 3 is its delta's sign (one
// delta per 8). Read as four u16 sc[k], scales holds the s of group ib's first
// half in bits 6 (ib % 2) .. +2 of sc[ib / 2] and of its second half in the next
// three bits; the top nibble of sc[k] is nibble k of the F16 d.
struct BlockIQ1_M {
  uint8_t qs[kQK_K / 8];
  uint8_t qh[kQK_K / 16];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1_M) == 56 && offsetof(BlockIQ1_M, qh) == 32 && offsetof(BlockIQ1_M, scales) == 48);

// Each grid type's constants: a span's scale is d * (2s + 1) / factor; per16:
// a scale per 16 values (else per 32); parity: signs as parity-packed codes
// (each 8-group negates an even number of elements; else a free sign byte).
struct GridShape {
  int factor;
  bool per16;
  bool parity;
};
constexpr GridShape grid_shape(const BlockIQ2_XXS*) { return {8, false, true}; }
constexpr GridShape grid_shape(const BlockIQ2_XS*) { return {8, true, true}; }
constexpr GridShape grid_shape(const BlockIQ2_S*) { return {8, true, false}; }
constexpr GridShape grid_shape(const BlockIQ3_XXS*) { return {4, false, true}; }
constexpr GridShape grid_shape(const BlockIQ3_S*) { return {1, false, false}; }
// IQ1_S, IQ1_M: their values times 8 / (d (2s + 1)), 8 g + 8 delta (odd, |.| <= 9),
// serve the dot kernels as signed magnitudes over factor 8.
constexpr GridShape grid_shape(const BlockIQ1_S*) { return {8, false, false}; }
constexpr GridShape grid_shape(const BlockIQ1_M*) { return {8, true, false}; }
template <typename Block>
inline constexpr GridShape kGridShape = grid_shape(static_cast<const Block*>(nullptr));

// The eight sign bits of a parity-packed 7-bit code (the code, its parity as bit 7).
constexpr uint8_t parity_signs(uint32_t code) {
  return kSignsIq2xs[code & 127];
}

// IQ2_XXS and IQ3_XXS: the sign-and-scale word of group ib, at qs + 8 ib + 4 or qs + 64 + 4 ib.
constexpr int grid_word_offset(const BlockIQ2_XXS*, int ib) { return 8 * ib + 4; }
constexpr int grid_word_offset(const BlockIQ3_XXS*, int ib) { return 64 + 4 * ib; }

template <typename Block>
GridGroup read_xxs_group(const Block& b, int ib, int points) {
  const auto* qs = reinterpret_cast<const uint8_t*>(b.qs);
  uint32_t w;
  std::memcpy(&w, qs + grid_word_offset(&b, ib), 4);
  GridGroup g{};
  for (int k = 0; k < points; ++k) g.idx[k] = qs[8 * ib + k];
  for (int l = 0; l < 4; ++l) g.signs[l] = parity_signs((w >> (7 * l)) & 127);
  g.scale[0] = g.scale[1] = static_cast<uint8_t>(w >> 28);
  return g;
}

// Writes signs' low seven bits: each 8-group must negate an even number of elements.
template <typename Block>
void write_xxs_group(Block& b, int ib, const GridGroup& g, int points) {
  auto* qs = reinterpret_cast<uint8_t*>(b.qs);
  uint32_t w = static_cast<uint32_t>(g.scale[0]) << 28;
  for (int l = 0; l < 4; ++l) w |= static_cast<uint32_t>(g.signs[l] & 127) << (7 * l);
  for (int k = 0; k < points; ++k) qs[8 * ib + k] = static_cast<uint8_t>(g.idx[k]);
  std::memcpy(qs + grid_word_offset(&b, ib), &w, 4);
}

inline GridGroup read_grid_group(const BlockIQ2_XXS& b, int ib) { return read_xxs_group(b, ib, 4); }
inline void write_grid_group(BlockIQ2_XXS& b, int ib, const GridGroup& g) { write_xxs_group(b, ib, g, 4); }
inline GridGroup read_grid_group(const BlockIQ3_XXS& b, int ib) { return read_xxs_group(b, ib, 8); }
inline void write_grid_group(BlockIQ3_XXS& b, int ib, const GridGroup& g) { write_xxs_group(b, ib, g, 8); }

inline GridGroup read_grid_group(const BlockIQ2_XS& b, int ib) {
  GridGroup g{};
  for (int l = 0; l < 4; ++l) {
    g.idx[l] = static_cast<uint16_t>(b.qs[4 * ib + l] & 511);
    g.signs[l] = parity_signs(b.qs[4 * ib + l] >> 9);
  }
  g.scale[0] = b.scales[ib] & 15;
  g.scale[1] = static_cast<uint8_t>(b.scales[ib] >> 4);
  return g;
}
inline void write_grid_group(BlockIQ2_XS& b, int ib, const GridGroup& g) {
  for (int l = 0; l < 4; ++l) b.qs[4 * ib + l] = static_cast<uint16_t>(g.idx[l] | (g.signs[l] & 127) << 9);
  b.scales[ib] = static_cast<uint8_t>(g.scale[0] | g.scale[1] << 4);
}

inline GridGroup read_grid_group(const BlockIQ2_S& b, int ib) {
  GridGroup g{};
  for (int l = 0; l < 4; ++l) {
    g.idx[l] = static_cast<uint16_t>(b.qs[4 * ib + l] | ((b.qh[ib] >> (2 * l)) & 3) << 8);
    g.signs[l] = b.qs[32 + 4 * ib + l];
  }
  g.scale[0] = b.scales[ib] & 15;
  g.scale[1] = static_cast<uint8_t>(b.scales[ib] >> 4);
  return g;
}
inline void write_grid_group(BlockIQ2_S& b, int ib, const GridGroup& g) {
  b.qh[ib] = 0;
  for (int l = 0; l < 4; ++l) {
    b.qs[4 * ib + l] = static_cast<uint8_t>(g.idx[l]);
    b.qs[32 + 4 * ib + l] = g.signs[l];
    b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | (g.idx[l] >> 8) << (2 * l));
  }
  b.scales[ib] = static_cast<uint8_t>(g.scale[0] | g.scale[1] << 4);
}

inline GridGroup read_grid_group(const BlockIQ3_S& b, int ib) {
  GridGroup g{};
  for (int k = 0; k < 8; ++k) g.idx[k] = static_cast<uint16_t>(b.qs[8 * ib + k] | ((b.qh[ib] >> k) & 1) << 8);
  for (int l = 0; l < 4; ++l) g.signs[l] = b.signs[4 * ib + l];
  g.scale[0] = g.scale[1] = static_cast<uint8_t>((b.scales[ib / 2] >> (4 * (ib % 2))) & 15);
  return g;
}
// Writes scale[0] (the type has one s per 32).
inline void write_grid_group(BlockIQ3_S& b, int ib, const GridGroup& g) {
  b.qh[ib] = 0;
  for (int k = 0; k < 8; ++k) {
    b.qs[8 * ib + k] = static_cast<uint8_t>(g.idx[k]);
    b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | (g.idx[k] >> 8) << k);
  }
  for (int l = 0; l < 4; ++l) b.signs[4 * ib + l] = g.signs[l];
  const int shift = 4 * (ib % 2);
  b.scales[ib / 2] = static_cast<uint8_t>((b.scales[ib / 2] & ~(15 << shift)) | g.scale[0] << shift);
}

// The F16 bits of a block's d (IQ1_M keeps it in the scales' top nibbles).
template <typename Block>
uint16_t super_scale_bits(const Block& b) {
  return b.d;
}
inline uint16_t iq1m_scale_word(const BlockIQ1_M& b, int k) {
  return static_cast<uint16_t>(b.scales[2 * k] | b.scales[2 * k + 1] << 8);
}
inline uint16_t super_scale_bits(const BlockIQ1_M& b) {
  uint16_t d = 0;
  for (int k = 0; k < 4; ++k) d = static_cast<uint16_t>(d | (iq1m_scale_word(b, k) >> 12) << (4 * k));
  return d;
}
inline void set_super_scale_bits(BlockIQ1_S& b, uint16_t d) { b.d = d; }
inline void set_super_scale_bits(BlockIQ1_M& b, uint16_t d) {
  for (int k = 0; k < 4; ++k) {
    b.scales[2 * k + 1] = static_cast<uint8_t>((b.scales[2 * k + 1] & 0x0f) | ((d >> (4 * k)) & 15) << 4);
  }
}

inline Iq1Group read_iq1_group(const BlockIQ1_S& b, int ib) {
  Iq1Group g{};
  const int h = b.qh[ib];
  for (int l = 0; l < 4; ++l) g.idx[l] = static_cast<uint16_t>(b.qs[4 * ib + l] | ((h >> (3 * l)) & 7) << 8);
  g.neg = (h & 0x8000) != 0 ? 15 : 0;
  g.scale[0] = g.scale[1] = static_cast<uint8_t>((h >> 12) & 7);
  return g;
}
// Writes scale[0] and bit 0 of neg (the type has one s and one delta per 32).
inline void write_iq1_group(BlockIQ1_S& b, int ib, const Iq1Group& g) {
  int h = (g.scale[0] & 7) << 12 | (g.neg & 1) << 15;
  for (int l = 0; l < 4; ++l) {
    b.qs[4 * ib + l] = static_cast<uint8_t>(g.idx[l]);
    h |= (g.idx[l] >> 8) << (3 * l);
  }
  b.qh[ib] = static_cast<uint16_t>(h);
}

inline Iq1Group read_iq1_group(const BlockIQ1_M& b, int ib) {
  Iq1Group g{};
  for (int l = 0; l < 4; ++l) {
    const int nib = (b.qh[2 * ib + l / 2] >> (4 * (l % 2))) & 15;
    g.idx[l] = static_cast<uint16_t>(b.qs[4 * ib + l] | (nib & 7) << 8);
    g.neg = static_cast<uint8_t>(g.neg | (nib >> 3) << l);
  }
  const int sc = iq1m_scale_word(b, ib / 2) >> (6 * (ib % 2));
  g.scale[0] = static_cast<uint8_t>(sc & 7);
  g.scale[1] = static_cast<uint8_t>((sc >> 3) & 7);
  return g;
}
// Keeps the scales' top nibbles (d: set_super_scale_bits).
inline void write_iq1_group(BlockIQ1_M& b, int ib, const Iq1Group& g) {
  for (int l = 0; l < 4; ++l) b.qs[4 * ib + l] = static_cast<uint8_t>(g.idx[l]);
  for (int p = 0; p < 2; ++p) {
    const int lo = (g.idx[2 * p] >> 8) | (g.neg >> (2 * p) & 1) << 3;
    const int hi = (g.idx[2 * p + 1] >> 8) | (g.neg >> (2 * p + 1) & 1) << 3;
    b.qh[2 * ib + p] = static_cast<uint8_t>(lo | hi << 4);
  }
  const int shift = 6 * (ib % 2);
  int word = iq1m_scale_word(b, ib / 2);
  word = (word & ~(63 << shift)) | ((g.scale[0] & 7) | (g.scale[1] & 7) << 3) << shift;
  b.scales[(ib / 2) * 2] = static_cast<uint8_t>(word);
  b.scales[(ib / 2) * 2 + 1] = static_cast<uint8_t>(word >> 8);
}

// Inverse of unpack_scale_iq4_xs over the eight groups; ls must be < 64.
inline void pack_scales_iq4_xs(const uint8_t ls[8], BlockIQ4_XS& b) {
  b.scales_h = 0;
  for (int ib = 0; ib < 4; ++ib) {
    b.scales_l[ib] = static_cast<uint8_t>((ls[2 * ib] & 0x0f) | ((ls[2 * ib + 1] & 0x0f) << 4));
  }
  for (int ib = 0; ib < 8; ++ib) b.scales_h = static_cast<uint16_t>(b.scales_h | ((ls[ib] >> 4) << (2 * ib)));
}

}  // namespace strata::core
