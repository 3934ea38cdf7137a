// IEEE half (binary16) and bfloat16 <-> float conversions, written out bit by bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::core {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Exact: every half is a float. NaN payloads are kept (shifted into the top
// of the float mantissa), so a quiet NaN stays quiet.
inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float arithmetic.
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return f32_from_bits(sign | f32_bits(mag));
  }
  return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));  // rebias 15 -> 127
}

// Round to nearest, ties to even; overflow goes to inf, underflow through the
// half subnormals to zero; NaN stays NaN (made quiet, sign kept).
inline uint16_t f32_to_fp16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  // 0x477ff000 is 65520, halfway between 65504 (largest half) and 2^16; the
  // tie goes to the even neighbour, which is 2^16, i.e. inf.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t e = a >> 23;
  if (e < 113) {
    // Result is a half subnormal (or zero, or the smallest normal after
    // rounding up, which the same integer encodes). Units of 2^-24.
    if (e < 102) return sign;  // below 2^-25: rounds to zero
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias, keep 10 mantissa bits, round on the 13 dropped ones. A
  // carry out of the mantissa correctly bumps the exponent.
  uint32_t h = ((e - 112) << 10) | ((a >> 13) & 0x3ffu);
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

// bfloat16 is the top half of a float: round the low 16 bits to nearest even.
// Finite values near FLT_MAX round up to inf as RNE demands; NaN is made
// quiet so that truncation cannot turn it into inf.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace strata::core
