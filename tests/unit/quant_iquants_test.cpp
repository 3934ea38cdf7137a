// The IQ types' quantizers read back with the test's own layout decoders:
// the stored indices are the nearest codebook points of the stored scales.
// (Their error bounds and dot orders: quant_accuracy_test.cpp.)
#include <cmath>
#include <vector>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "quant_test_util.h"

using namespace strata::core;
using namespace strata::core::testing;

namespace {

// Every index of a group is a nearest codebook point of x / dl.
void require_nearest(const float* x, float dl, const uint8_t* qs) {
  for (int j = 0; j < 32; ++j) {
    INFO("element " << j << " x " << x[j] << " dl " << dl);
    const double v = dl != 0 ? x[j] / static_cast<double>(dl) : 0.0;
    const double err = std::fabs(v - kIq4Codebook[iq4_index(qs, j)]);
    for (int k = 0; k < 16; ++k) REQUIRE(err <= std::fabs(v - kIq4Codebook[k]) + 1e-4);
  }
}

}  // namespace

TEST_CASE("IQ4_NL and IQ4_XS: quantizer output decodes through the layout, nearest codebook points") {
  const uint32_t seed = test_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const auto x = gaussian(rng, 512, 1.0f);
  std::vector<float> y(512);

  std::vector<BlockIQ4_NL> nl(16);
  quantize_row(GgmlType::IQ4_NL, x.data(), nl.data(), 512);
  dequantize_row(GgmlType::IQ4_NL, nl.data(), y.data(), 512);
  int negative_scales = 0;
  for (int i = 0; i < 16; ++i) {
    const float d = fp16_to_f32(nl[i].d);
    negative_scales += d < 0;
    require_nearest(x.data() + 32 * i, d, nl[i].qs);
    for (int j = 0; j < 32; ++j) REQUIRE(y[32 * i + j] == d * static_cast<float>(kIq4Codebook[iq4_index(nl[i].qs, j)]));
  }
  CHECK(negative_scales > 0);  // a group whose largest value is positive maps it to -127
  CHECK(negative_scales < 16);

  BlockIQ4_XS xs[2];
  quantize_row(GgmlType::IQ4_XS, x.data(), xs, 512);
  dequantize_row(GgmlType::IQ4_XS, xs, y.data(), 512);
  int top_scales = 0;
  for (int e = 0; e < 512; e += 32) {
    const BlockIQ4_XS& b = xs[e / 256];
    const int ib = (e % 256) / 32;
    top_scales += iq4_xs_scale(b, ib) == -32;
    const float dl = fp16_to_f32(b.d) * static_cast<float>(iq4_xs_scale(b, ib));
    require_nearest(x.data() + e, dl, b.qs + 16 * ib);
    for (int j = 0; j < 32; ++j) {
      REQUIRE(y[e + j] == dl * static_cast<float>(kIq4Codebook[iq4_index(b.qs + 16 * ib, j)]));
    }
  }
  CHECK(top_scales >= 2);  // a group in each super-block takes the end of the 6-bit range
}
