// Helpers for the quant tests: a seeded RNG and per-element decoders written from the GGUF layout.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "catch.hpp"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/quant/quant_tables.h"

namespace strata::core::testing {

// Catch's --rng-seed when given (v3 always has one), else a fresh one; the
// test INFOs it so a failure can be replayed with --rng-seed.
inline uint32_t test_seed() {
  const uint32_t s = Catch::rngSeed();
  return s != 0 ? s : std::random_device{}();
}

inline std::vector<float> gaussian(std::mt19937& rng, size_t n, float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// a * b rounded to float before it is used: stops the compiler from fusing
// the test's own a * b + c into an FMA (when -march enables FMA), which
// would break bit-exact comparisons with the library's unfused order.
inline float mul(float a, float b) {
  volatile float p = a * b;
  return p;
}

// The integer quant of element e, decoded straight from the description of
// the layout (element -> byte and bit), independently of the library's
// unpackers.
inline int q4k_quant(const BlockQ4_K& b, int e) {
  const int g = e / 64, w = e % 64;
  const uint8_t byte = b.qs[32 * g + w % 32];
  return w < 32 ? (byte & 0x0f) : (byte >> 4);
}

inline int q5k_quant(const BlockQ5_K& b, int e) {
  const int g = e / 64, w = e % 64;
  const uint8_t byte = b.qs[32 * g + w % 32];
  const int low = w < 32 ? (byte & 0x0f) : (byte >> 4);
  const int bit = 2 * g + (w < 32 ? 0 : 1);
  return low | (((b.qh[w % 32] >> bit) & 1) << 4);
}

// Signed: the stored 6-bit value minus 32.
inline int q6k_quant(const BlockQ6_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t lbyte = b.ql[64 * h + l + 32 * (k & 1)];
  const int low = k < 2 ? (lbyte & 0x0f) : (lbyte >> 4);
  const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
  return (low | (high << 4)) - 32;
}

inline int q2k_quant(const BlockQ2_K& b, int e) {
  const int h = e / 128, s = (e % 128) / 32, l = e % 32;
  return (b.qs[32 * h + l] >> (2 * s)) & 3;
}

// Signed: -4..3.
inline int q3k_quant(const BlockQ3_K& b, int e) {
  const int h = e / 128, s = (e % 128) / 32, l = e % 32;
  const int low = (b.qs[32 * h + l] >> (2 * s)) & 3;
  const int high = (b.hmask[l] >> (4 * h + s)) & 1;
  return high ? low : low - 4;
}

// Signed: the 6-bit scale of sub-block k (elements 16k .. 16k+15) minus 32.
inline int q3k_scale(const BlockQ3_K& b, int k) {
  const int low = k < 8 ? (b.scales[k] & 0x0f) : (b.scales[k - 8] >> 4);
  const int high = (b.scales[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// The stored quant of element e (0..31) of a legacy block, from raw bytes:
// the low nibble of qs[e] for e < 16, else the high nibble of qs[e - 16];
// the 5-bit types add 16 where bit e of qh (little-endian u32) is set. Q4_0
// and Q5_0 subtract 8 / 16 (signed); Q4_1 and Q5_1 are unsigned.
template <typename Block>
inline int legacy_quant(const Block& b, int e) {
  const int low = e < 16 ? b.qs[e] & 15 : b.qs[e - 16] >> 4;
  if constexpr (requires { b.qh; }) {
    const uint32_t h = b.qh[0] | b.qh[1] << 8 | b.qh[2] << 16 | static_cast<uint32_t>(b.qh[3]) << 24;
    const int q = low | static_cast<int>((h >> e) & 1) << 4;
    if constexpr (requires { b.m; }) return q;
    return q - 16;
  } else {
    if constexpr (requires { b.m; }) return low;
    return low - 8;
  }
}

// The quant of element e of a Q1_0 block (0..127: +1 where bit e % 8 of
// qs[e / 8] is set, else -1) and of a Q2_0 block (0..63: bits 2 (e % 4),
// 2 (e % 4) + 1 of qs[e / 4], less 1), from raw bytes.
inline int legacy_quant(const BlockQ1_0& b, int e) { return (b.qs[e / 8] >> (e % 8)) & 1 ? 1 : -1; }
inline int legacy_quant(const BlockQ2_0& b, int e) { return ((b.qs[e / 4] >> (2 * (e % 4))) & 3) - 1; }

// The IQ4_NL / IQ4_XS codebook as QUANT_TYPES.md and llama.cpp's kvalues_iq4nl state it.
inline constexpr int kIq4Codebook[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// The codebook index of element j (0..31) of an IQ4 group stored in 16 bytes.
inline int iq4_index(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

// Signed: the 6-bit scale of IQ4_XS group ib minus 32.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int ib) {
  return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((b.scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

// The eight sign bits of a parity-packed 7-bit code, as QUANT_TYPES.md states
// them: the code with bit 7 its parity (bit j set: element j negated).
inline int grid_sign_bits(uint32_t code) { return static_cast<int>(code | ((std::popcount(code) & 1u) << 7)); }

// The sign-and-scale word of a grid type's group ib (IQ2_XXS: bytes 4..7 of
// its eight; IQ3_XXS: the u32 at qs + 64 + 4 ib).
inline uint32_t grid_word(const BlockIQ2_XXS& b, int ib) {
  uint32_t w;
  std::memcpy(&w, b.qs + 4 * ib + 2, 4);
  return w;
}
inline uint32_t grid_word(const BlockIQ3_XXS& b, int ib) {
  uint32_t w;
  std::memcpy(&w, b.qs + 64 + 4 * ib, 4);
  return w;
}

// The signed grid magnitude of element j (0..31) of group ib, as
// QUANT_TYPES.md lays each type out. IQ2_XXS, IQ3_XXS: its 8-group l = j / 8
// takes grid point idx[l] (IQ2_XXS, eight magnitudes) or idx[2l], idx[2l + 1]
// (IQ3_XXS, four each), signed by code l of the word.
inline int grid_value(const BlockIQ2_XXS& b, int ib, int j) {
  const auto* idx = reinterpret_cast<const uint8_t*>(b.qs + 4 * ib);
  const int m = static_cast<int>((kIq2xxsGrid[idx[j / 8]] >> (8 * (j % 8))) & 255);
  return (grid_sign_bits((grid_word(b, ib) >> (7 * (j / 8))) & 127) >> (j % 8)) & 1 ? -m : m;
}
inline int grid_value(const BlockIQ3_XXS& b, int ib, int j) {
  const int m = static_cast<int>((kIq3xxsGrid[b.qs[8 * ib + j / 4]] >> (8 * (j % 4))) & 255);
  return (grid_sign_bits((grid_word(b, ib) >> (7 * (j / 8))) & 127) >> (j % 8)) & 1 ? -m : m;
}

// IQ2_XS: the u16 qs[4 ib + l] of 8-group l: a 9-bit index, a 7-bit sign code.
inline int grid_value(const BlockIQ2_XS& b, int ib, int j) {
  const uint32_t q = b.qs[4 * ib + j / 8];
  const int m = static_cast<int>((kIq2xsGrid[q & 511] >> (8 * (j % 8))) & 255);
  return (grid_sign_bits(q >> 9) >> (j % 8)) & 1 ? -m : m;
}
// IQ2_S: a 10-bit index (qs[4 ib + l], two bits of qh[ib]), a sign byte at qs[32 + 4 ib + l].
inline int grid_value(const BlockIQ2_S& b, int ib, int j) {
  const int l = j / 8, index = b.qs[4 * ib + l] + 256 * ((b.qh[ib] >> (2 * l)) & 3);
  const int m = static_cast<int>((kIq2sGrid[index] >> (8 * (j % 8))) & 255);
  return (b.qs[32 + 4 * ib + l] >> (j % 8)) & 1 ? -m : m;
}
// IQ3_S: a 9-bit index per four values (qs[8 ib + k], bit k of qh[ib]), a sign byte per 8-group.
inline int grid_value(const BlockIQ3_S& b, int ib, int j) {
  const int k = j / 4, index = b.qs[8 * ib + k] + 256 * ((b.qh[ib] >> k) & 1);
  const int m = static_cast<int>((kIq3sGrid[index] >> (8 * (j % 4))) & 255);
  return (b.signs[4 * ib + j / 8] >> (j % 8)) & 1 ? -m : m;
}

// The 4-bit scale s of element j (0..31) of group ib: one per 32 in the
// word (IQ2_XXS, IQ3_XXS) or a nibble of scales (IQ3_S); per 16 (IQ2_XS,
// IQ2_S): the low nibble of scales[ib] for elements 0..15, the high for 16..31.
inline int grid_scale(const BlockIQ2_XXS& b, int ib, int) { return static_cast<int>(grid_word(b, ib) >> 28); }
inline int grid_scale(const BlockIQ3_XXS& b, int ib, int) { return static_cast<int>(grid_word(b, ib) >> 28); }
inline int grid_scale(const BlockIQ2_XS& b, int ib, int j) { return j < 16 ? b.scales[ib] & 15 : b.scales[ib] >> 4; }
inline int grid_scale(const BlockIQ2_S& b, int ib, int j) { return j < 16 ? b.scales[ib] & 15 : b.scales[ib] >> 4; }
inline int grid_scale(const BlockIQ3_S& b, int ib, int) { return (b.scales[ib / 2] >> (4 * (ib % 2))) & 15; }

// The FP4 types, from QUANT_TYPES.md and the OCP formats, not from the
// library's tables. An E2M1 code doubled: bit 3 the sign, bits 1-2 the
// exponent e, bit 0 the mantissa m: m when e = 0, else (2 + m) * 2^(e - 1).
inline int fp4_value(int code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const int v = e == 0 ? m : (2 + m) << (e - 1);
  return code & 8 ? -v : v;
}
// MXFP4's exponent byte, halved: 2^(e - 128).
inline float e8m0_half(uint8_t e) { return std::ldexp(1.0f, e - 128); }
// NVFP4's scale byte, halved, as llama.cpp's CPU reads it: 0x7f is 0 (its
// NaN), bit 7 is otherwise ignored; exponent bits 3-6 (bias 7), mantissa 0-2.
inline float ue4m3_half(uint8_t b) {
  if (b == 0x7f) return 0.0f;
  const int e = (b >> 3) & 15, m = b & 7;
  return e == 0 ? std::ldexp(0.5f * static_cast<float>(m), -9) : std::ldexp(0.5f * (1.0f + m / 8.0f), e - 7);
}
// The code of element j: MXFP4 as IQ4_NL (j < 16 low nibbles); NVFP4 per
// sub-block of 16: its 8 bytes' low nibbles, then their high nibbles.
inline int fp4_code(const BlockMXFP4& b, int j) { return iq4_index(b.qs, j); }
inline int fp4_code(const BlockNVFP4& b, int j) {
  const uint8_t byte = b.qs[8 * (j / 16) + j % 8];
  return j % 16 < 8 ? byte & 15 : byte >> 4;
}

}  // namespace strata::core::testing
