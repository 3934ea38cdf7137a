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

// IQ2_XXS: per 32-group ib, eight bytes at qs + 4 ib: bytes 0..3 index
// kIq2xxsGrid for its four 8-groups; bytes 4..7 are a u32 w whose bits 7l ..
// 7l + 6 are 8-group l's sign code (kSignsIq2xs) and bits 28..31 the scale
// s: x = d * (0.5 + s) * 0.25 * grid byte, negated where the sign says.
struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[kQK_K / 8];
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

// IQ3_XXS: qs[8 ib .. 8 ib + 7] index kIq3xxsGrid twice per 8-group (its
// elements 0..3, then 4..7); the u32 at qs + 64 + 4 ib holds the sign codes
// and scale as IQ2_XXS's w: x = d * (0.5 + s) * 0.5 * grid byte, signed.
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[3 * kQK_K / 8];
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

// Group ib of a grid type (IQ2_XXS, IQ3_XXS) within qs, the bytes after d:
// its grid indices at 8 ib, its sign-and-scale word at iq_grid_word_offset.
constexpr int iq_grid_word_offset(const BlockIQ2_XXS*, int ib) { return 8 * ib + 4; }
constexpr int iq_grid_word_offset(const BlockIQ3_XXS*, int ib) { return 64 + 4 * ib; }
template <typename Block>
const uint8_t* iq_grid_indices(const Block& b, int ib) {
  return reinterpret_cast<const uint8_t*>(b.qs) + 8 * ib;
}
template <typename Block>
uint32_t iq_grid_word(const Block& b, int ib) {
  uint32_t w;
  std::memcpy(&w, reinterpret_cast<const uint8_t*>(b.qs) + iq_grid_word_offset(&b, ib), 4);
  return w;
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
