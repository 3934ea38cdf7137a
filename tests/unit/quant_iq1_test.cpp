// IQ1_S and IQ1_M: their grid as llama.cpp v0.5.0 and QUANT_TYPES.md give it,
// hand-built blocks decoded value by value from layout readers written here
// from QUANT_TYPES.md, the quantizer's output read back through them, and the
// dot's order (quant.h). Error bounds: quant_accuracy_test.cpp; AVX2:
// quant_avx2_test.cpp.
#include <cmath>
#include <random>
#include <set>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/quant/quant_tables_iq1.h"
#include "quant_test_util.h"

using namespace strata::core;
using namespace strata::core::testing;

namespace {

// Element j (0..7) of grid point i, signed.
int grid(int i, int j) { return static_cast<int8_t>((kIq1sGrid[i] >> (8 * j)) & 255); }

// What an element of a block stands for: its grid value g, its delta sign
// (+1 or -1, for +-1/8) and its 3-bit scale s.
struct Element {
  int g, delta, s;
};

// IQ1_S: element e of group ib = e / 32, 8-group l: index qs[4 ib + l] + 256
// bits(qh[ib], 3l, 3); s = bits(qh[ib], 12, 3); bit 15: delta negative.
Element element(const BlockIQ1_S& b, int e) {
  const int ib = e / 32, l = (e % 32) / 8;
  const int qh = b.qh[ib];
  const int idx = b.qs[4 * ib + l] + 256 * ((qh >> (3 * l)) & 7);
  return {grid(idx, e % 8), (qh & 0x8000) ? -1 : 1, (qh >> 12) & 7};
}
float super_scale(const BlockIQ1_S& b) { return fp16_to_f32(b.d); }

// IQ1_M: sc[k] = the u16 at scales + 2k. Index qs[4 ib + l] + 256 * bits 0..2
// of the nibble l % 2 of qh[2 ib + l / 2], whose bit 3 is the delta's sign;
// s = bits(sc[ib / 2], 6 (ib % 2) + 3 (l / 2), 3); d's nibble k is the top
// nibble of sc[k].
int sc(const BlockIQ1_M& b, int k) { return b.scales[2 * k] | b.scales[2 * k + 1] << 8; }
Element element(const BlockIQ1_M& b, int e) {
  const int ib = e / 32, l = (e % 32) / 8;
  const int nib = (b.qh[2 * ib + l / 2] >> (4 * (l % 2))) & 15;
  const int idx = b.qs[4 * ib + l] + 256 * (nib & 7);
  return {grid(idx, e % 8), (nib & 8) ? -1 : 1, (sc(b, ib / 2) >> (6 * (ib % 2) + 3 * (l / 2))) & 7};
}
float super_scale(const BlockIQ1_M& b) {
  int bits = 0;
  for (int k = 0; k < 4; ++k) bits |= (sc(b, k) >> 12) << (4 * k);
  return fp16_to_f32(static_cast<uint16_t>(bits));
}

// llama.cpp's dequantization: y = d (2s + 1) * (g + delta).
template <typename Block>
void check_values(GgmlType type, const Block& b) {
  float y[256];
  dequantize_row(type, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const Element el = element(b, e);
    const float dl = super_scale(b) * static_cast<float>(2 * el.s + 1);
    CHECK(y[e] == dl * (static_cast<float>(el.g) + 0.125f * static_cast<float>(el.delta)));
  }
}

template <typename Block>
Block random_block(std::mt19937& rng) {
  Block b;
  auto* bytes = reinterpret_cast<uint8_t*>(&b);
  for (size_t i = 0; i < sizeof b; ++i) bytes[i] = static_cast<uint8_t>(rng());
  return b;
}

}  // namespace

TEST_CASE("IQ1 grid: 2048 distinct ternary points, llama.cpp's entries at both ends") {
  CHECK(std::set<uint64_t>(std::begin(kIq1sGrid), std::end(kIq1sGrid)).size() == 2048);
  for (int i = 0; i < 2048; ++i) {
    for (int j = 0; j < 8; ++j) CHECK((grid(i, j) >= -1 && grid(i, j) <= 1));
  }
  CHECK(kIq1sGrid[0] == 0xffffffffffffffffull);
  CHECK(kIq1sGrid[1] == 0xffffffffffffff01ull);
  CHECK(kIq1sGrid[2046] == 0x01010101010101ffull);
  CHECK(kIq1sGrid[2047] == 0x0101010101010101ull);
}

TEST_CASE("IQ1_S block: 11-bit indices, s and the delta sign in qh, d (2s + 1) (g +- 1/8)") {
  BlockIQ1_S b{};
  b.d = f32_to_fp16(0.5f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(37 * i + 11);
  for (int ib = 0; ib < 8; ++ib) b.qh[ib] = static_cast<uint16_t>(0x1234 * (ib + 1) ^ (ib % 2 ? 0x8000 : 0));
  check_values(GgmlType::IQ1_S, b);
  // Element 0 of group 1: index qs[4] + 256 * (qh[1] & 7); s = bits 12..14; delta sign bit 15.
  float y[256];
  dequantize_row(GgmlType::IQ1_S, &b, y, 256);
  const int qh = b.qh[1], s = (qh >> 12) & 7;
  const float want = 0.5f * static_cast<float>(2 * s + 1) *
                     (static_cast<float>(grid(b.qs[4] + 256 * (qh & 7), 0)) + ((qh & 0x8000) ? -0.125f : 0.125f));
  CHECK(y[32] == want);
  std::mt19937 rng(7);
  for (int rep = 0; rep < 50; ++rep) {
    BlockIQ1_S r = random_block<BlockIQ1_S>(rng);
    r.d = f32_to_fp16(std::ldexp(1.0f, rep % 9 - 4));
    check_values(GgmlType::IQ1_S, r);
  }
}

TEST_CASE("IQ1_M block: a delta per 8, an s per 16, d in the scales' top nibbles") {
  std::mt19937 rng(11);
  for (int rep = 0; rep < 50; ++rep) {
    BlockIQ1_M b = random_block<BlockIQ1_M>(rng);
    // d = 0.75 * 2^(rep % 9 - 4): its nibbles into the top of sc[0..3].
    const uint16_t d = f32_to_fp16(0.75f * std::ldexp(1.0f, rep % 9 - 4));
    for (int k = 0; k < 4; ++k) {
      b.scales[2 * k + 1] = static_cast<uint8_t>((b.scales[2 * k + 1] & 15) | ((d >> (4 * k)) & 15) << 4);
    }
    CHECK(super_scale(b) == fp16_to_f32(d));
    check_values(GgmlType::IQ1_M, b);
  }
}

TEMPLATE_TEST_CASE("IQ1 quantizer blocks read back through the layout, the dot in the order of quant.h", "",
                   BlockIQ1_S, BlockIQ1_M) {
  const GgmlType type = std::is_same_v<TestType, BlockIQ1_S> ? GgmlType::IQ1_S : GgmlType::IQ1_M;
  const uint32_t seed = test_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const int64_t n = 256 * 16;
  const std::vector<float> x = gaussian(rng, n, 1.0f);
  std::vector<TestType> q(n / 256);
  quantize_row(type, x.data(), q.data(), n);
  std::vector<float> y(n);
  dequantize_row(type, q.data(), y.data(), n);
  // Every element decodes from the layout (the readers above) as dequantize_row gives it.
  for (int64_t s = 0; s < n / 256; ++s) {
    for (int e = 0; e < 256; ++e) {
      const Element el = element(q[s], e);
      const float dl = super_scale(q[s]) * static_cast<float>(2 * el.s + 1);
      REQUIRE(y[s * 256 + e] == dl * (static_cast<float>(el.g) + 0.125f * static_cast<float>(el.delta)));
    }
  }
  // The dot: per 32-group, (2s + 1) times each half's sum of (8 g + delta) * qa,
  // then ((d * 0.125) * a.d) * that integer, in element order.
  std::vector<float> act = gaussian(rng, n, 2.0f);
  std::vector<BlockQ8A> a(n / 32);
  quantize_activations(act.data(), a.data(), n);
  float want = 0.0f;
  double exact = 0.0, scale = 0.0;
  for (int64_t s = 0; s < n / 256; ++s) {
    for (int ib = 0; ib < 8; ++ib) {
      const BlockQ8A& ab = a[8 * s + ib];
      int32_t isum = 0;
      for (int j = 0; j < 32; ++j) {
        const Element el = element(q[s], 32 * ib + j);
        isum += (2 * el.s + 1) * (8 * el.g + el.delta) * ab.qs[j];
        exact += static_cast<double>(y[s * 256 + 32 * ib + j]) * ab.d * ab.qs[j];
        scale += std::fabs(static_cast<double>(y[s * 256 + 32 * ib + j]) * ab.d * ab.qs[j]);
      }
      want += mul(mul(mul(super_scale(q[s]), 0.125f), ab.d), static_cast<float>(isum));
    }
  }
  const float got = vec_dot(type, q.data(), a.data(), n);
  CHECK(got == want);
  // Against dequantize-then-double-dot: only float rounding apart.
  CHECK(std::fabs(got - exact) <= 1e-5 * scale);
}
