// The grid IQ types (IQ2_XXS, IQ3_XXS): their tables as llama.cpp v0.5.0 and
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

TEST_CASE("grid tables: sign codes by parity, grid points on their levels, llama.cpp's first and last entries") {
  for (uint32_t s = 0; s < 128; ++s) CHECK(kSignsIq2xs[s] == grid_sign_bits(s));
  const std::set<int> levels2 = {8, 25, 43}, levels3 = {4, 12, 20, 28, 36, 44, 52, 62};
  std::set<uint64_t> points2(std::begin(kIq2xxsGrid), std::end(kIq2xxsGrid));
  std::set<uint32_t> points3(std::begin(kIq3xxsGrid), std::end(kIq3xxsGrid));
  CHECK(points2.size() == 256);  // distinct
  CHECK(points3.size() == 256);
  for (int i = 0; i < 256; ++i) {
    for (int k = 0; k < 8; ++k) CHECK(levels2.count(static_cast<int>((kIq2xxsGrid[i] >> (8 * k)) & 255)) == 1);
    for (int k = 0; k < 4; ++k) CHECK(levels3.count(static_cast<int>((kIq3xxsGrid[i] >> (8 * k)) & 255)) == 1);
  }
  CHECK(kIq2xxsGrid[0] == 0x0808080808080808ull);
  CHECK(kIq2xxsGrid[1] == 0x080808080808082bull);
  CHECK(kIq2xxsGrid[255] == 0x2b2b2b1908081908ull);
  CHECK(kIq3xxsGrid[0] == 0x04040404u);
  CHECK(kIq3xxsGrid[1] == 0x04040414u);
  CHECK(kIq3xxsGrid[255] == 0x3e341c04u);
}

namespace {

// Group ib's expected values: d (0.5) * (0.5 + s) * step * magnitude, signed.
template <typename Block>
void check_grid_block(GgmlType type, const Block& b, float step) {
  float y[256];
  dequantize_row(type, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const int ib = e / 32;
    const float db = 0.5f * (0.5f + static_cast<float>(grid_word(b, ib) >> 28)) * step;
    CHECK(y[e] == db * static_cast<float>(grid_value(b, ib, e % 32)));
  }
}

}  // namespace

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

TEST_CASE("grid quantizers: each 8-group keeps its values' signs but for its smallest, scales fit the data") {
  std::mt19937 rng(20261206);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(1024), y(1024);
  for (float& v : x) v = normal(rng);
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ3_XXS}) {
    INFO(type_traits(t).name);
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
    CHECK(flipped > 0);
    CHECK(flipped < 128);  // about half of the 128 8-groups have an odd count
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
