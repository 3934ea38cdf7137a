// The FP4 types (MXFP4, NVFP4): their tables against the OCP E2M1 / E8M0 /
// UE4M3 rules, hand-built blocks decoded value by value, and the quantizers'
// output read back through the layout. (Error bounds and the dots' order:
// quant_accuracy_test.cpp; AVX2: quant_avx2_test.cpp.)
#include <algorithm>
#include <cmath>
#include <vector>

#include "catch.hpp"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "quant_test_util.h"

using namespace strata::core;
using namespace strata::core::testing;

namespace {

// Squared error of values coded with the nearest E2M1 points under the
// scale d (doubled units), in double; 0 codes everything 0.
double coded_error(const float* x, int n, double d) {
  double e = 0;
  for (int j = 0; j < n; ++j) {
    double best = static_cast<double>(x[j]) * x[j];
    for (int c = 0; c < 16 && d != 0; ++c) best = std::min(best, std::pow(x[j] - d * fp4_value(c), 2));
    e += best;
  }
  return e;
}

// Every code of the n values is an E2M1 point nearest x / d (0 when d is 0).
template <typename Block>
void require_nearest(const Block& b, int first, const float* x, int n, double d) {
  for (int j = 0; j < n; ++j) {
    INFO("element " << first + j << " x " << x[j] << " d " << d);
    const int code = fp4_code(b, first + j);
    if (d == 0) {
      REQUIRE(fp4_value(code) == 0);
      continue;
    }
    const double v = x[j] / d;
    for (int c = 0; c < 16; ++c) REQUIRE(std::abs(v - fp4_value(code)) <= std::abs(v - fp4_value(c)) + 1e-9);
  }
}

// Gaussian blocks of block_len values, each scaled by a power of two in 2^-8 .. 2^8.
std::vector<float> scaled_blocks(std::mt19937& rng, size_t n, int block_len) {
  auto x = gaussian(rng, n, 1.0f);
  std::uniform_int_distribution<int> shift(-8, 8);
  for (size_t b = 0; b < n; b += static_cast<size_t>(block_len)) {
    const float f = std::ldexp(1.0f, shift(rng));
    for (int j = 0; j < block_len; ++j) x[b + static_cast<size_t>(j)] *= f;
  }
  return x;
}

}  // namespace

TEST_CASE("FP4 tables: the doubled E2M1 values and the halved E8M0 and UE4M3 scales") {
  for (int c = 0; c < 16; ++c) CHECK(kFp4Values[c] == fp4_value(c));
  for (int e = 0; e < 256; ++e) {
    INFO("e " << e);
    CHECK(kE8m0Half[e] == e8m0_half(static_cast<uint8_t>(e)));
  }
  for (int b = 0; b < 256; ++b) {
    INFO("byte " << b);
    CHECK(kUe4m3Half[b] == ue4m3_half(static_cast<uint8_t>(b)));
    if (b >= 1 && b <= 0x7e) CHECK(kUe4m3Half[b] > kUe4m3Half[b - 1]);  // the quantizer's search needs this
  }
  CHECK(kE8m0Half[0] == std::ldexp(1.0f, -128));  // subnormal, exact
  CHECK(kE8m0Half[127] == 0.5f);
  CHECK(kUe4m3Half[0x01] == std::ldexp(1.0f, -10));
  CHECK(kUe4m3Half[0x38] == 0.5f);
  CHECK(kUe4m3Half[0x7e] == 224.0f);
  CHECK(kUe4m3Half[0x7f] == 0.0f);
  CHECK(kUe4m3Half[0xff] == 240.0f);  // llama.cpp's CPU: bit 7 ignored except on 0x7f
}

TEST_CASE("MXFP4: a hand-built block decodes value by value") {
  BlockMXFP4 b{};
  b.e = 130;  // 2^(130 - 128) = 4 per doubled unit: E2M1 value times 8
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  float y[32];
  dequantize_row(GgmlType::MXFP4, &b, y, 32);
  CHECK(y[0] == 0.0f);
  CHECK(y[5] == 24.0f);    // code 5: E2M1 3.0
  CHECK(y[7] == 48.0f);    // code 7: E2M1 6.0
  CHECK(y[9] == -4.0f);    // code 9: E2M1 -0.5
  CHECK(y[16] == -48.0f);  // high nibble of qs[0]: code 15
  CHECK(y[31] == 0.0f);    // code 8, the negative zero
  for (int j = 0; j < 32; ++j) {
    INFO("element " << j);
    CHECK(y[j] == 4.0f * static_cast<float>(fp4_value(j < 16 ? j : 31 - j)));
  }
  // The exponent's ends: 2^-128 is subnormal and exact; 0xff (2^127) overflows code 7 to inf.
  b.e = 0;
  dequantize_row(GgmlType::MXFP4, &b, y, 32);
  CHECK(y[7] == 12.0f * std::ldexp(1.0f, -128));
  b.e = 255;
  dequantize_row(GgmlType::MXFP4, &b, y, 32);
  CHECK(y[1] == std::ldexp(1.0f, 127));
  CHECK(std::isinf(y[7]));
}

TEST_CASE("NVFP4: a hand-built block decodes value by value") {
  BlockNVFP4 b{};
  const uint8_t scales[4] = {0x38, 0x7e, 0x01, 0x80};  // 0.5, 224, 2^-10 and (bit 7 alone) 0
  std::copy(scales, scales + 4, b.d);
  // Byte 8 s + j: code j low, code j + 8 high, so element 16 s + k has code k.
  for (int s = 0; s < 4; ++s) {
    for (int j = 0; j < 8; ++j) b.qs[8 * s + j] = static_cast<uint8_t>(j | (j + 8) << 4);
  }
  float y[64];
  dequantize_row(GgmlType::NVFP4, &b, y, 64);
  CHECK(y[7] == 6.0f);         // 12 * 0.5
  CHECK(y[10] == -1.0f);       // code 10: -2 * 0.5
  CHECK(y[16 + 7] == 2688.0f);  // 12 * 224, NVFP4's largest magnitude
  CHECK(y[32 + 1] == std::ldexp(1.0f, -10));
  for (int e = 0; e < 64; ++e) {
    INFO("element " << e);
    CHECK(fp4_code(b, e) == e % 16);
    CHECK(y[e] == ue4m3_half(scales[e / 16]) * static_cast<float>(fp4_value(e % 16)));
  }
}

TEST_CASE("MXFP4 quantizer: nearest codes under the better of the two exponents around the range") {
  const uint32_t seed = test_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const int nb = 64;
  auto x = scaled_blocks(rng, 32 * nb, 32);
  std::fill_n(x.begin(), 32, 0.0f);                    // a zero block
  std::fill_n(x.begin() + 32, 32, 1e-37f);             // near the smallest exponent (2^-128 is 2.9e-39)
  for (int j = 0; j < 32; ++j) x[64 + j] = (j - 16) * 1e37f;  // near the float range
  std::vector<BlockMXFP4> q(nb);
  quantize_row(GgmlType::MXFP4, x.data(), q.data(), 32 * nb);
  std::vector<float> y(x.size());
  dequantize_row(GgmlType::MXFP4, q.data(), y.data(), 32 * nb);
  CHECK(q[0].e == 0);
  for (int i = 0; i < nb; ++i) {
    INFO("block " << i << " e " << int(q[i].e));
    const float* xb = x.data() + 32 * i;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::abs(xb[j]));
    const double d = e8m0_half(q[i].e);
    require_nearest(q[i], 0, xb, 32, d);
    for (int j = 0; j < 32; ++j) REQUIRE(y[32 * i + j] == static_cast<float>(d * fp4_value(fp4_code(q[i], j))));
    if (amax == 0) continue;
    // The fine exponent puts amax in [8, 16) doubled units (the top may clip to 12), the coarse one in [4, 8).
    const int fine = std::clamp(std::ilogb(amax) + 125, 0, 254);
    REQUIRE((q[i].e == fine || q[i].e == std::min(fine + 1, 254)));
    const int other = q[i].e == fine ? std::min(fine + 1, 254) : fine;
    CHECK(coded_error(xb, 32, d) <= coded_error(xb, 32, e8m0_half(static_cast<uint8_t>(other))) * (1 + 1e-5));
    for (int j = 0; j < 32; ++j) REQUIRE(std::abs(y[32 * i + j] - xb[j]) <= 0.25 * amax);
  }
}

TEST_CASE("NVFP4 quantizer: nearest codes under the better of the two scales around the range, clipping at 2688") {
  const uint32_t seed = test_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const int nb = 32;
  auto x = scaled_blocks(rng, 64 * nb, 16);
  std::fill_n(x.begin(), 16, 0.0f);                           // a zero sub-block
  for (int j = 0; j < 16; ++j) x[16 + j] = (j - 8) * 1000.0f;  // past the largest scale: clips
  std::vector<BlockNVFP4> q(nb);
  quantize_row(GgmlType::NVFP4, x.data(), q.data(), 64 * nb);
  std::vector<float> y(x.size());
  dequantize_row(GgmlType::NVFP4, q.data(), y.data(), 64 * nb);
  CHECK(q[0].d[0] == 0);
  CHECK(q[0].d[1] == 0x7e);
  CHECK(y[16] == -2688.0f);  // -8000 clipped
  CHECK(y[31] == 2688.0f);
  for (int e = 0; e < 64 * nb; e += 16) {
    const BlockNVFP4& b = q[e / 64];
    const int s = (e % 64) / 16;
    INFO("sub-block " << e / 16 << " scale byte " << int(b.d[s]));
    REQUIRE(b.d[s] <= 0x7e);
    const double d = ue4m3_half(b.d[s]);
    require_nearest(b, 16 * s, x.data() + e, 16, d);
    for (int j = 0; j < 16; ++j) REQUIRE(y[e + j] == static_cast<float>(d * fp4_value(fp4_code(b, 16 * s + j))));
    float amax = 0;
    for (int j = 0; j < 16; ++j) amax = std::max(amax, std::abs(x[e + j]));
    if (amax == 0) continue;
    // The smallest scale with 12 * scale >= amax (0x7e when none), or the one below it.
    int hi = 1;
    while (hi < 0x7e && 12.0 * ue4m3_half(static_cast<uint8_t>(hi)) < amax) ++hi;
    REQUIRE((b.d[s] == hi || b.d[s] == hi - 1));
    const int other = b.d[s] == hi ? hi - 1 : hi;
    CHECK(coded_error(x.data() + e, 16, d) <=
          coded_error(x.data() + e, 16, ue4m3_half(static_cast<uint8_t>(other))) * (1 + 1e-5));
  }
}
