// F16 and BF16 conversions: special values, subnormals, and round-to-nearest-even checked exhaustively.
#include <cmath>
#include <cstring>
#include <limits>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"

using namespace strata::core;

namespace {

bool is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

}  // namespace

TEST_CASE("fp16 -> f32: known values, subnormals, inf, nan") {
  CHECK(fp16_to_f32(0x0000) == 0.0f);
  CHECK(std::signbit(fp16_to_f32(0x8000)));
  CHECK(fp16_to_f32(0x8000) == 0.0f);
  CHECK(fp16_to_f32(0x3c00) == 1.0f);
  CHECK(fp16_to_f32(0xc000) == -2.0f);
  CHECK(fp16_to_f32(0x3555) == 0x1.554p-2f);   // 0.333251953125
  CHECK(fp16_to_f32(0x7bff) == 65504.0f);      // largest finite
  CHECK(fp16_to_f32(0x0400) == 0x1p-14f);      // smallest normal
  CHECK(fp16_to_f32(0x0001) == 0x1p-24f);      // smallest subnormal
  CHECK(fp16_to_f32(0x03ff) == 1023 * 0x1p-24f);  // largest subnormal
  CHECK(fp16_to_f32(0x8001) == -0x1p-24f);
  CHECK(fp16_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(fp16_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(fp16_to_f32(0x7e00)));
  CHECK(std::isnan(fp16_to_f32(0x7c01)));  // signalling pattern is still NaN
  CHECK(std::isnan(fp16_to_f32(0xfe00)));
}

TEST_CASE("f32 -> fp16: rounding at the edges") {
  CHECK(f32_to_fp16(0.0f) == 0x0000);
  CHECK(f32_to_fp16(-0.0f) == 0x8000);
  CHECK(f32_to_fp16(1.0f) == 0x3c00);
  CHECK(f32_to_fp16(-2.0f) == 0xc000);
  CHECK(f32_to_fp16(65504.0f) == 0x7bff);
  CHECK(f32_to_fp16(65519.996f) == 0x7bff);  // just under the midpoint to inf
  CHECK(f32_to_fp16(65520.0f) == 0x7c00);    // midpoint: ties to even = inf
  CHECK(f32_to_fp16(1e6f) == 0x7c00);
  CHECK(f32_to_fp16(-1e30f) == 0xfc00);
  CHECK(f32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(f32_to_fp16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(is_nan_half(f32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low 13 bits must not become inf.
  CHECK(is_nan_half(f32_to_fp16(f32_from_bits(0x7f800001u))));
  CHECK(is_nan_half(f32_to_fp16(f32_from_bits(0xff800001u))));
  CHECK((f32_to_fp16(f32_from_bits(0xff800001u)) & 0x8000) != 0);
  // Ties to even in the normal range: 1 + 2^-11 lies halfway between 1 and
  // 1 + 2^-10; 1 + 3*2^-11 halfway between 1 + 2^-10 and 1 + 2^-9.
  CHECK(f32_to_fp16(1.0f + 0x1p-11f) == 0x3c00);
  CHECK(f32_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(f32_to_fp16(std::nextafter(1.0f + 0x1p-11f, 2.0f)) == 0x3c01);
  // Subnormals: units of 2^-24; 2^-25 is a tie between 0 and 1 (-> 0),
  // 3 * 2^-25 a tie between 1 and 2 (-> 2).
  CHECK(f32_to_fp16(0x1p-24f) == 0x0001);
  CHECK(f32_to_fp16(0x1p-25f) == 0x0000);
  CHECK(f32_to_fp16(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(f32_to_fp16(3 * 0x1p-25f) == 0x0002);
  CHECK(f32_to_fp16(5 * 0x1p-25f) == 0x0002);
  CHECK(f32_to_fp16(0x1p-30f) == 0x0000);
  CHECK(f32_to_fp16(-0x1p-30f) == 0x8000);
  CHECK(f32_to_fp16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  // Largest subnormal + half a unit is a tie with the smallest normal (even).
  CHECK(f32_to_fp16(1023 * 0x1p-24f + 0x1p-25f) == 0x0400);
  CHECK(f32_to_fp16(0x1p-14f) == 0x0400);
  CHECK(f32_to_fp16(1023 * 0x1p-24f) == 0x03ff);
}

// Every half round-trips, and for every pair of neighbouring finite halves
// the exact midpoint goes to the even one and the floats either side of it
// go to the nearer one: this is round-to-nearest-even, everywhere.
TEST_CASE("fp16: exhaustive round trip and midpoints") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto hh = static_cast<uint16_t>(h);
    const float f = fp16_to_f32(hh);
    if (is_nan_half(hh)) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_nan_half(f32_to_fp16(f)));
      continue;
    }
    REQUIRE(f32_to_fp16(f) == hh);
    if ((h & 0x7fff) >= 0x7c00) continue;  // inf has no upper neighbour
    const uint16_t up = static_cast<uint16_t>(h + 1);
    const float hi = (h & 0x7fff) == 0x7bff ? std::copysign(65536.0f, f) : fp16_to_f32(up);
    const float mid = f + (hi - f) / 2;  // exact: halves have 11 significant bits
    const uint16_t even = (h & 1) ? up : hh;
    INFO("half 0x" << std::hex << h);
    REQUIRE(f32_to_fp16(mid) == even);
    REQUIRE(f32_to_fp16(std::nextafter(mid, f)) == hh);
    REQUIRE(f32_to_fp16(std::nextafter(mid, hi)) == up);
  }
}

TEST_CASE("bf16: known values, exhaustive round trip, ties to even, nan") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc040) == -3.0f);
  CHECK(bf16_to_f32(0x0001) == 0x1p-133f);  // smallest bf16 subnormal
  CHECK(bf16_to_f32(0x7f80) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(bf16_to_f32(0x7fc0)));
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);      // tie -> even
  CHECK(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);  // tie -> even
  CHECK(f32_to_bf16(std::nextafter(1.0f + 0x1p-8f, 2.0f)) == 0x3f81);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(f32_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  // NaNs whose payload is only in the low half must stay NaN.
  for (uint32_t bits : {0x7f800001u, 0xff800001u, 0x7fc00000u}) {
    const uint16_t b = f32_to_bf16(f32_from_bits(bits));
    CHECK((b & 0x7f80) == 0x7f80);
    CHECK((b & 0x007f) != 0);
    CHECK((b & 0x8000) == ((bits >> 16) & 0x8000));
  }
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto bb = static_cast<uint16_t>(b);
    if ((b & 0x7f80) == 0x7f80) continue;  // inf and nan: covered above
    REQUIRE(f32_to_bf16(bf16_to_f32(bb)) == bb);
    // bits | 0x8000 is the exact midpoint to the next bf16 away from zero.
    const float mid = f32_from_bits((b << 16) | 0x8000u);
    const uint16_t up = static_cast<uint16_t>(b + 1);
    INFO("bf16 0x" << std::hex << b);
    REQUIRE(f32_to_bf16(mid) == ((b & 1) ? up : bb));
    REQUIRE(f32_to_bf16(f32_from_bits((b << 16) | 0x7fffu)) == bb);
    REQUIRE(f32_to_bf16(f32_from_bits((b << 16) | 0x8001u)) == up);
  }
}

TEST_CASE("F16 and BF16 rows convert through quantize_row / dequantize_row") {
  const float src[4] = {1.0f, -0.5f, 65520.0f, 0x1p-25f};
  uint16_t h[4], b[4];
  quantize_row(GgmlType::F16, src, h, 4);
  CHECK(h[0] == 0x3c00);
  CHECK(h[1] == 0xb800);
  CHECK(h[2] == 0x7c00);
  CHECK(h[3] == 0x0000);
  quantize_row(GgmlType::BF16, src, b, 4);
  CHECK(b[0] == 0x3f80);
  CHECK(b[1] == 0xbf00);
  float back[4];
  dequantize_row(GgmlType::F16, h, back, 4);
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == -0.5f);
  CHECK(std::isinf(back[2]));
  dequantize_row(GgmlType::BF16, b, back, 4);
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == -0.5f);
  CHECK(back[2] == 65536.0f);  // bf16 keeps f32's range: 65520 rounds to 2^16
  CHECK(back[3] == 0x1p-25f);
}
