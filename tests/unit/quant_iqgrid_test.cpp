// The grid IQ types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): their tables as llama.cpp v0.5.0 and
// QUANT_TYPES.md give them, hand-built blocks decoded value by value, and the
// quantizer's output read back through the layout. (Error bounds and the
// dot's order: quant_accuracy_test.cpp; AVX2: quant_avx2_test.cpp.)
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "quant_test_util.h"

using namespace strata::core;
using namespace strata::core::testing;

namespace {

// A grid table: its points distinct, each of its `dims` magnitudes one of the levels.
template <typename Point, size_t N>
void check_grid(const Point (&grid)[N], int dims, const std::set<int>& levels) {
  CHECK(std::set<Point>(std::begin(grid), std::end(grid)).size() == N);
  for (Point p : grid) {
    for (int k = 0; k < dims; ++k) CHECK(levels.count(static_cast<int>((p >> (8 * k)) & 255)) == 1);
  }
}

// Group ib's expected values: d (0.5) * (0.5 + s) * step * magnitude, signed
// (llama.cpp's IQ3_S form d * (1 + 2s) is the same float for step 2).
template <typename Block>
void check_grid_block(GgmlType type, const Block& b, float step) {
  float y[256];
  dequantize_row(type, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const int ib = e / 32;
    const float db = 0.5f * (0.5f + static_cast<float>(grid_scale(b, ib, e % 32))) * step;
    CHECK(y[e] == db * static_cast<float>(grid_value(b, ib, e % 32)));
  }
}

}  // namespace

TEST_CASE("grid tables: sign codes by parity, grid points on their levels, llama.cpp's first and last entries") {
  for (uint32_t s = 0; s < 128; ++s) CHECK(kSignsIq2xs[s] == grid_sign_bits(s));
  const std::set<int> levels2 = {8, 25, 43};
  check_grid(kIq2xxsGrid, 8, levels2);
  check_grid(kIq2xsGrid, 8, levels2);
  check_grid(kIq2sGrid, 8, levels2);
  check_grid(kIq3xxsGrid, 4, {4, 12, 20, 28, 36, 44, 52, 62});
  check_grid(kIq3sGrid, 4, {1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(kIq2xxsGrid[0] == 0x0808080808080808ull);
  CHECK(kIq2xxsGrid[1] == 0x080808080808082bull);
  CHECK(kIq2xxsGrid[255] == 0x2b2b2b1908081908ull);
  CHECK(kIq2xsGrid[1] == 0x080808080808082bull);
  CHECK(kIq2xsGrid[511] == 0x2b2b2b2b2b2b2b2bull);
  CHECK(kIq2sGrid[1] == 0x080808080808082bull);
  CHECK(kIq2sGrid[1023] == 0x2b2b2b2b2b2b2b2bull);
  CHECK(kIq3xxsGrid[0] == 0x04040404u);
  CHECK(kIq3xxsGrid[1] == 0x04040414u);
  CHECK(kIq3xxsGrid[255] == 0x3e341c04u);
  CHECK(kIq3sGrid[1] == 0x01010103u);
  CHECK(kIq3sGrid[511] == 0x0f0f0101u);
}

TEST_CASE("IQ2_XXS block: four grid indices and a sign-and-scale word per 32 values") {
  BlockIQ2_XXS b{};
  b.d = 0x3800;  // 0.5
  auto* bytes = reinterpret_cast<uint8_t*>(b.qs);
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) bytes[8 * ib + l] = static_cast<uint8_t>(ib * 37 + l * 11 + 3);
    uint32_t w = static_cast<uint32_t>(2 * ib) << 28;  // s = 0, 2, .., 14
    for (int l = 0; l < 4; ++l) w |= static_cast<uint32_t>((ib * 13 + l * 29 + 1) & 127) << (7 * l);
    std::memcpy(bytes + 8 * ib + 4, &w, 4);
  }
  float y[256];
  dequantize_row(GgmlType::IQ2_XXS, &b, y, 256);
  // Group 0: s 0 (scale 0.5 * 0.5 * 0.25), index 3 = 0x0808080808082b08, code 1 -> signs 0x81.
  CHECK(y[0] == -0.0625f * 8);
  CHECK(y[1] == 0.0625f * 43);
  CHECK(y[7] == -0.0625f * 8);
  check_grid_block(GgmlType::IQ2_XXS, b, 0.25f);
}

TEST_CASE("IQ3_XXS block: two grid indices per 8 values, the words after the indices") {
  BlockIQ3_XXS b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 53 + 7);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t w = static_cast<uint32_t>(15 - ib) << 28;
    for (int l = 0; l < 4; ++l) w |= static_cast<uint32_t>((ib * 19 + l * 41 + 2) & 127) << (7 * l);
    std::memcpy(b.qs + 64 + 4 * ib, &w, 4);
  }
  check_grid_block(GgmlType::IQ3_XXS, b, 0.5f);
  float y[256];
  dequantize_row(GgmlType::IQ3_XXS, &b, y, 256);
  // Group 0: s 15 (scale 0.5 * 15.5 * 0.5), indices 7 (0x04041414) and 60, code 2 -> signs 0x82.
  CHECK(y[0] == 3.875f * 20);
  CHECK(y[1] == -3.875f * 20);
  CHECK(y[2] == 3.875f * 4);
}

TEST_CASE("IQ2_XS block: a 9-bit index and a sign code per 8 values, a scale per 16") {
  BlockIQ2_XS b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint16_t>((i * 97 + 300) % 512 | ((i * 23 + 1) & 127) << 9);
  for (int ib = 0; ib < 8; ++ib) b.scales[ib] = static_cast<uint8_t>(ib | (15 - 2 * ib) << 4);
  check_grid_block(GgmlType::IQ2_XS, b, 0.25f);
  float y[256];
  dequantize_row(GgmlType::IQ2_XS, &b, y, 256);
  // Group 0: s 0 then 15; 8-group 0: index 300, code 1 -> signs 0x81; 8-group 2: index 494, code 47 -> 0xaf.
  const int m0 = static_cast<int>(kIq2xsGrid[300] & 255), m2 = static_cast<int>((kIq2xsGrid[494] >> 8) & 255);
  CHECK(y[0] == -0.0625f * static_cast<float>(m0));
  CHECK(y[17] == -(0.5f * 15.5f * 0.25f) * static_cast<float>(m2));
}

TEST_CASE("IQ2_S block: a 10-bit index and a free sign byte per 8 values, a scale per 16") {
  BlockIQ2_S b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 41 + 5);
  for (int i = 0; i < 32; ++i) b.qs[32 + i] = static_cast<uint8_t>(i * 59 + 1);  // odd counts too
  for (int ib = 0; ib < 8; ++ib) b.qh[ib] = static_cast<uint8_t>(ib * 29 + 0xb4);
  for (int ib = 0; ib < 8; ++ib) b.scales[ib] = static_cast<uint8_t>((2 * ib) | (ib + 3) << 4);
  check_grid_block(GgmlType::IQ2_S, b, 0.25f);
  float y[256];
  dequantize_row(GgmlType::IQ2_S, &b, y, 256);
  // Group 0: qh 0xb4 -> high bits 0, 1, 3, 2; 8-group 0: index 5, signs 0x01 (one negation).
  const int m = static_cast<int>(kIq2sGrid[5] & 255);
  CHECK(y[0] == -0.0625f * static_cast<float>(m));
  const int m1 = static_cast<int>(kIq2sGrid[46 + 256] & 255);  // 8-group 1: qs 46, high bits 1
  CHECK(std::fabs(y[8]) == 0.0625f * static_cast<float>(m1));
}

TEST_CASE("IQ3_S block: 9-bit indices per 4 values, a sign byte per 8, scales in nibbles, d * (1 + 2s)") {
  BlockIQ3_S b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 53 + 7);
  for (int ib = 0; ib < 8; ++ib) b.qh[ib] = static_cast<uint8_t>(ib * 37 + 0x96);
  for (int i = 0; i < 32; ++i) b.signs[i] = static_cast<uint8_t>(i * 73 + 3);
  for (int i = 0; i < 4; ++i) b.scales[i] = static_cast<uint8_t>((4 * i + 1) | (15 - i) << 4);
  check_grid_block(GgmlType::IQ3_S, b, 2.0f);
  float y[256];
  dequantize_row(GgmlType::IQ3_S, &b, y, 256);
  // Group 0: s 1 (0.5 * 3), qh 0x96: element 0..3 index 7, 4..7 index 60 + 256; signs 0x03.
  CHECK(y[0] == -1.5f * static_cast<float>(kIq3sGrid[7] & 255));
  CHECK(y[1] == -1.5f * static_cast<float>((kIq3sGrid[7] >> 8) & 255));
  CHECK(y[4] == 1.5f * static_cast<float>(kIq3sGrid[60 + 256] & 255));
  // Group 1: s 15 (0.5 * 31).
  CHECK(std::fabs(y[32]) == 15.5f * static_cast<float>(kIq3sGrid[b.qs[8] + 256 * (b.qh[1] & 1)] & 255));
}

TEST_CASE("grid quantizers: 8-groups keep their values' signs (parity codes: but the smallest), scales fit the data") {
  std::mt19937 rng(20261206);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(1024), y(1024);
  for (float& v : x) v = normal(rng);
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S}) {
    INFO(type_traits(t).name);
    const bool parity = t == GgmlType::IQ2_XXS || t == GgmlType::IQ2_XS || t == GgmlType::IQ3_XXS;
    std::vector<uint8_t> q(row_size(t, 1024));
    quantize_row(t, x.data(), q.data(), 1024);
    dequantize_row(t, q.data(), y.data(), 1024);
    int flipped = 0;
    for (size_t g = 0; g < 1024; g += 8) {
      const auto smallest = std::min_element(x.begin() + g, x.begin() + g + 8,
                                             [](float a, float b) { return std::fabs(a) < std::fabs(b); });
      for (size_t j = g; j < g + 8; ++j) {
        REQUIRE(y[j] != 0.0f);  // no grid magnitude is 0
        if ((y[j] < 0) != (x[j] < 0)) {
          CHECK(x.begin() + j == smallest);
          ++flipped;
        }
      }
    }
    if (parity) {
      CHECK(flipped > 0);
      CHECK(flipped < 128);  // about half of the 128 8-groups have an odd count
    } else {
      CHECK(flipped == 0);  // free sign bytes
    }
    // The stored scales follow the data: a group scaled by 4 decodes about 4 times larger.
    std::vector<float> x4(x);
    for (size_t j = 0; j < 32; ++j) x4[j] *= 4.0f;
    std::vector<float> y4(1024);
    quantize_row(t, x4.data(), q.data(), 1024);
    dequantize_row(t, q.data(), y4.data(), 1024);
    double r0 = 0, r4 = 0;
    for (size_t j = 0; j < 32; ++j) r0 += std::fabs(y[j]), r4 += std::fabs(y4[j]);
    CHECK(r4 / r0 > 3.0);
    CHECK(r4 / r0 < 5.0);
  }
}
