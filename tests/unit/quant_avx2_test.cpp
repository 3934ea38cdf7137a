// The AVX2 dot products against the plain loops: the same bits for every row, extreme quants included.
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_avx2.h"
#include "core/quant/quant_fp4.h"
#include "core/quant/quant_iq1.h"
#include "core/quant/quant_iqgrid.h"
#include "core/quant/quant_iquants.h"
#include "core/quant/quant_kquants.h"
#include "core/quant/quant_legacy.h"
#include "unit/test_random.h"

using namespace strata::core;
using strata::test::Rng;

namespace {

constexpr int64_t kSuper = 8;  // super-blocks a row: 2048 values

// Random bytes for a block, with its F16 scales replaced by finite ones (d, dmin at the given offsets).
template <typename Block>
std::vector<Block> random_blocks(Rng& rng, int64_t n, std::initializer_list<size_t> half_offsets) {
  std::vector<Block> v(static_cast<size_t>(n));
  auto* bytes = reinterpret_cast<uint8_t*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(Block); ++i) bytes[i] = static_cast<uint8_t>(rng.int_in(0, 255));
  for (Block& b : v) {
    for (size_t off : half_offsets) {
      const uint16_t h = f32_to_fp16(static_cast<float>(rng.int_in(-1000, 1000)) / 4096.0f);
      std::memcpy(reinterpret_cast<uint8_t*>(&b) + off, &h, 2);
    }
  }
  return v;
}

// Activations of a row of 32 * n values: quantized random floats, every fourth block at the +-127 extremes.
std::vector<BlockQ8A> random_acts(Rng& rng, int64_t n) {
  const std::vector<float> x = rng.vec(static_cast<size_t>(32 * n), 3.0f);
  std::vector<BlockQ8A> a(static_cast<size_t>(n));
  quantize_activations(x.data(), a.data(), 32 * n);
  for (size_t j = 3; j < a.size(); j += 4) {
    int32_t sum = 0;
    for (int l = 0; l < 32; ++l) sum += a[j].qs[l] = static_cast<int8_t>(l % 2 ? 127 : -127);
    a[j].sum = sum;
  }
  return a;
}

bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <typename Block>
using DotFn = float (*)(const Block*, const BlockQ8A*, int64_t);
template <typename Block>
using Dot4Fn = void (*)(const Block* const[4], const BlockQ8A*, int64_t, float[4]);

// A type's one- and four-row AVX2 forms against its plain loop (Elems values
// a block), over random rows (F16 halves at half_offsets, leading the block)
// and rows of all-ones bytes after them (every nibble and fifth bit set, the
// last grid points, every sign, scales 15: the largest stored quants).
// fix, where given, then makes a block's other scales finite.
template <typename Block, int Elems = 32>
void check_dots(Rng& rng, DotFn<Block> portable, DotFn<Block> avx2, Dot4Fn<Block> avx2x4,
                std::initializer_list<size_t> half_offsets, void (*fix)(Rng&, Block&) = nullptr) {
  const int64_t nb = 256 * kSuper / Elems;
  for (int rep = 0; rep < 50; ++rep) {
    const std::vector<BlockQ8A> a = random_acts(rng, 8 * kSuper);  // 32 values each
    std::vector<Block> rows[4];
    for (auto& r : rows) {
      r = random_blocks<Block>(rng, nb, half_offsets);
      if (rep == 0) {
        for (Block& b : r) std::memset(reinterpret_cast<uint8_t*>(&b) + 2 * half_offsets.size(), 0xff,
                                       sizeof(Block) - 2 * half_offsets.size());
      }
      if (fix != nullptr) {
        for (Block& b : r) fix(rng, b);
      }
    }
    const Block* x[4] = {rows[0].data(), rows[1].data(), rows[2].data(), rows[3].data()};
    float out[4];
    avx2x4(x, a.data(), nb, out);
    for (int r = 0; r < 4; ++r) {
      INFO("rep " << rep << " row " << r);
      const float want = portable(x[r], a.data(), nb);
      CHECK(same(avx2(x[r], a.data(), nb), want));
      CHECK(same(out[r], want));
    }
  }
}

}  // namespace

TEST_CASE("AVX2 dot products of the legacy types equal the plain loops bit for bit") {
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2 (or STRATA_NO_AVX2 is set): nothing to compare");
    return;
  }
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  check_dots<BlockQ4_0>(rng, dot_q4_0_portable, dot_q4_0_avx2, dot4_q4_0_avx2, {0});
  check_dots<BlockQ4_1>(rng, dot_q4_1_portable, dot_q4_1_avx2, dot4_q4_1_avx2, {0, 2});
  check_dots<BlockQ5_0>(rng, dot_q5_0_portable, dot_q5_0_avx2, dot4_q5_0_avx2, {0});
  check_dots<BlockQ5_1>(rng, dot_q5_1_portable, dot_q5_1_avx2, dot4_q5_1_avx2, {0, 2});
  check_dots<BlockQ1_0, 128>(rng, dot_q1_0_portable, dot_q1_0_avx2, dot4_q1_0_avx2, {0});
  check_dots<BlockQ2_0, 64>(rng, dot_q2_0_portable, dot_q2_0_avx2, dot4_q2_0_avx2, {0});
}

TEST_CASE("AVX2 dot products of IQ2_XS/IQ2_S/IQ3_S equal the plain loops bit for bit") {
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2 (or STRATA_NO_AVX2 is set): nothing to compare");
    return;
  }
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  check_dots<BlockIQ2_XS, 256>(rng, dot_iq2_xs_portable, dot_iq2_xs_avx2, dot4_iq2_xs_avx2, {0});
  check_dots<BlockIQ2_S, 256>(rng, dot_iq2_s_portable, dot_iq2_s_avx2, dot4_iq2_s_avx2, {0});
  check_dots<BlockIQ3_S, 256>(rng, dot_iq3_s_portable, dot_iq3_s_avx2, dot4_iq3_s_avx2, {0});
}

TEST_CASE("AVX2 dot products of IQ1_S and IQ1_M equal the plain loops bit for bit") {
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2 (or STRATA_NO_AVX2 is set): nothing to compare");
    return;
  }
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  check_dots<BlockIQ1_S, 256>(rng, dot_iq1_s_portable, dot_iq1_s_avx2, dot4_iq1_s_avx2, {0});
  // IQ1_M's d lives in its scales' top nibbles: made finite after the random bytes.
  check_dots<BlockIQ1_M, 256>(rng, dot_iq1_m_portable, dot_iq1_m_avx2, dot4_iq1_m_avx2, {}, [](Rng& g, BlockIQ1_M& b) {
    set_super_scale_bits(b, f32_to_fp16(static_cast<float>(g.int_in(-1000, 1000)) / 4096.0f));
  });
}

TEST_CASE("AVX2 dot products of MXFP4 and NVFP4 equal the plain loops bit for bit") {
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2 (or STRATA_NO_AVX2 is set): nothing to compare");
    return;
  }
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  // MXFP4's exponents kept near 2^0 so no product overflows; NVFP4's scale
  // bytes are all finite (bit 7 included), so they stay random.
  check_dots<BlockMXFP4>(rng, dot_mxfp4_portable, dot_mxfp4_avx2, dot4_mxfp4_avx2, {},
                         [](Rng& g, BlockMXFP4& b) { b.e = static_cast<uint8_t>(g.int_in(100, 150)); });
  check_dots<BlockNVFP4, 64>(rng, dot_nvfp4_portable, dot_nvfp4_avx2, dot4_nvfp4_avx2, {});
}

TEST_CASE("AVX2 dot products equal the plain loops bit for bit") {
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2 (or STRATA_NO_AVX2 is set): nothing to compare");
    return;
  }
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int row = 0; row < 200; ++row) {
    const std::vector<BlockQ8A> a = random_acts(rng, 8 * kSuper);
    auto q2 = random_blocks<BlockQ2_K>(rng, kSuper, {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)});
    auto q3 = random_blocks<BlockQ3_K>(rng, kSuper, {offsetof(BlockQ3_K, d)});
    auto q4 = random_blocks<BlockQ4_K>(rng, kSuper, {0, 2});
    auto q5 = random_blocks<BlockQ5_K>(rng, kSuper, {0, 2});
    auto q6 = random_blocks<BlockQ6_K>(rng, kSuper, {offsetof(BlockQ6_K, d)});
    auto q8 = random_blocks<BlockQ8_0>(rng, 8 * kSuper, {0});
    auto nl = random_blocks<BlockIQ4_NL>(rng, 8 * kSuper, {0});
    auto xs = random_blocks<BlockIQ4_XS>(rng, kSuper, {0});
    auto g2 = random_blocks<BlockIQ2_XXS>(rng, kSuper, {0});
    auto g3 = random_blocks<BlockIQ3_XXS>(rng, kSuper, {0});
    if (row == 0) {  // extremes: every quant at its largest magnitude
      for (auto& b : q2) std::memset(b.qs, 0xff, sizeof b.qs), std::memset(b.scales, 0xff, sizeof b.scales);
      for (auto& b : q3) std::memset(b.qs, 0, sizeof b.qs), std::memset(b.hmask, 0, sizeof b.hmask);  // q = -4
      for (auto& b : q4) std::memset(b.qs, 0xff, sizeof b.qs);
      for (auto& b : q5) std::memset(b.qs, 0xff, sizeof b.qs), std::memset(b.qh, 0xff, sizeof b.qh);
      for (auto& b : q6) std::memset(b.ql, 0, sizeof b.ql), std::memset(b.qh, 0, sizeof b.qh);  // q = -32
      for (auto& b : q8) std::memset(b.qs, 0x80, sizeof b.qs);                                   // q = -128
      for (auto& b : nl) std::memset(b.qs, 0, sizeof b.qs);                                       // -127
      for (auto& b : xs) std::memset(b.qs, 0, sizeof b.qs), b.scales_h = 0, std::memset(b.scales_l, 0, 4);  // -32, -127
      // Grid indices 255, sign codes 127 (every element negated), scales 15.
      for (auto& b : g2) std::memset(b.qs, 0xff, sizeof b.qs);
      for (auto& b : g3) std::memset(b.qs, 0xff, sizeof b.qs);
    }
    INFO("row " << row);
    CHECK(same(dot_q2_k_avx2(q2.data(), a.data(), kSuper), dot_q2_k_portable(q2.data(), a.data(), kSuper)));
    CHECK(same(dot_q3_k_avx2(q3.data(), a.data(), kSuper), dot_q3_k_portable(q3.data(), a.data(), kSuper)));
    CHECK(same(dot_q4_k_avx2(q4.data(), a.data(), kSuper), dot_q4_k_portable(q4.data(), a.data(), kSuper)));
    CHECK(same(dot_q5_k_avx2(q5.data(), a.data(), kSuper), dot_q5_k_portable(q5.data(), a.data(), kSuper)));
    CHECK(same(dot_q6_k_avx2(q6.data(), a.data(), kSuper), dot_q6_k_portable(q6.data(), a.data(), kSuper)));
    CHECK(same(dot_q8_0_avx2(q8.data(), a.data(), 8 * kSuper), dot_q8_0_portable(q8.data(), a.data(), 8 * kSuper)));
    CHECK(same(dot_iq4_nl_avx2(nl.data(), a.data(), 8 * kSuper), dot_iq4_nl_portable(nl.data(), a.data(), 8 * kSuper)));
    CHECK(same(dot_iq4_xs_avx2(xs.data(), a.data(), kSuper), dot_iq4_xs_portable(xs.data(), a.data(), kSuper)));
    CHECK(same(dot_iq2_xxs_avx2(g2.data(), a.data(), kSuper), dot_iq2_xxs_portable(g2.data(), a.data(), kSuper)));
    CHECK(same(dot_iq3_xxs_avx2(g3.data(), a.data(), kSuper), dot_iq3_xxs_portable(g3.data(), a.data(), kSuper)));
  }
  // vec_dot takes the AVX2 forms here.
  const std::vector<BlockQ8A> a = random_acts(rng, 8 * kSuper);
  const auto q4 = random_blocks<BlockQ4_K>(rng, kSuper, {0, 2});
  CHECK(same(vec_dot(GgmlType::Q4_K, q4.data(), a.data(), 256 * kSuper), dot_q4_k_avx2(q4.data(), a.data(), kSuper)));
}

TEST_CASE("vec_dot4 gives each of its four rows vec_dot's bits, for every weight type") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t n = 256 * kSuper;
  for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0,
                        GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL,
                        GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                        GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::MXFP4,
                        GgmlType::NVFP4, GgmlType::Q1_0, GgmlType::Q2_0, GgmlType::F32, GgmlType::F16,
                        GgmlType::BF16}) {
    INFO(type_traits(type).name);
    const size_t rb = row_size(type, n);
    for (int rep = 0; rep < 20; ++rep) {
      // Four real rows (quantized random values), activations as vec_dot takes them for this type.
      std::vector<uint8_t> w(4 * rb);
      for (int r = 0; r < 4; ++r) quantize_row(type, rng.vec(static_cast<size_t>(n), 2.0f).data(), &w[r * rb], n);
      const std::vector<float> x = rng.vec(static_cast<size_t>(n), 3.0f);
      std::vector<BlockQ8A> xq(static_cast<size_t>(n / 32));
      quantize_activations(x.data(), xq.data(), n);
      const void* act = activation_kind(type) == ActivationKind::Q8A ? static_cast<const void*>(xq.data()) : x.data();
      const void* rows[4] = {&w[0], &w[rb], &w[2 * rb], &w[3 * rb]};
      float out[4];
      vec_dot4(type, rows, act, n, out);
      for (int r = 0; r < 4; ++r) {
        INFO("rep " << rep << " row " << r);
        CHECK(same(out[r], vec_dot(type, rows[r], act, n)));
      }
    }
  }
}

TEST_CASE("The four-row AVX2 dot products equal the plain loops bit for bit") {
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2 (or STRATA_NO_AVX2 is set): nothing to compare");
    return;
  }
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int rep = 0; rep < 50; ++rep) {
    const std::vector<BlockQ8A> a = random_acts(rng, 8 * kSuper);
    std::vector<BlockQ2_K> q2[4];
    std::vector<BlockQ3_K> q3[4];
    std::vector<BlockQ4_K> q4[4];
    std::vector<BlockQ5_K> q5[4];
    std::vector<BlockQ6_K> q6[4];
    std::vector<BlockQ8_0> q8[4];
    std::vector<BlockIQ4_NL> nl[4];
    std::vector<BlockIQ4_XS> xs[4];
    std::vector<BlockIQ2_XXS> g2[4];
    std::vector<BlockIQ3_XXS> g3[4];
    for (int r = 0; r < 4; ++r) {
      q2[r] = random_blocks<BlockQ2_K>(rng, kSuper, {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)});
      q3[r] = random_blocks<BlockQ3_K>(rng, kSuper, {offsetof(BlockQ3_K, d)});
      q4[r] = random_blocks<BlockQ4_K>(rng, kSuper, {0, 2});
      q5[r] = random_blocks<BlockQ5_K>(rng, kSuper, {0, 2});
      q6[r] = random_blocks<BlockQ6_K>(rng, kSuper, {offsetof(BlockQ6_K, d)});
      q8[r] = random_blocks<BlockQ8_0>(rng, 8 * kSuper, {0});
      nl[r] = random_blocks<BlockIQ4_NL>(rng, 8 * kSuper, {0});
      xs[r] = random_blocks<BlockIQ4_XS>(rng, kSuper, {0});
      g2[r] = random_blocks<BlockIQ2_XXS>(rng, kSuper, {0});
      g3[r] = random_blocks<BlockIQ3_XXS>(rng, kSuper, {0});
    }
    const BlockQ2_K* x2[4] = {q2[0].data(), q2[1].data(), q2[2].data(), q2[3].data()};
    const BlockQ3_K* x3[4] = {q3[0].data(), q3[1].data(), q3[2].data(), q3[3].data()};
    const BlockQ4_K* x4[4] = {q4[0].data(), q4[1].data(), q4[2].data(), q4[3].data()};
    const BlockQ5_K* x5[4] = {q5[0].data(), q5[1].data(), q5[2].data(), q5[3].data()};
    const BlockQ6_K* x6[4] = {q6[0].data(), q6[1].data(), q6[2].data(), q6[3].data()};
    const BlockQ8_0* x8[4] = {q8[0].data(), q8[1].data(), q8[2].data(), q8[3].data()};
    const BlockIQ4_NL* xn[4] = {nl[0].data(), nl[1].data(), nl[2].data(), nl[3].data()};
    const BlockIQ4_XS* xx[4] = {xs[0].data(), xs[1].data(), xs[2].data(), xs[3].data()};
    const BlockIQ2_XXS* xg2[4] = {g2[0].data(), g2[1].data(), g2[2].data(), g2[3].data()};
    const BlockIQ3_XXS* xg3[4] = {g3[0].data(), g3[1].data(), g3[2].data(), g3[3].data()};
    float o2[4], o3[4], o4[4], o5[4], o6[4], o8[4], on[4], ox[4], og2[4], og3[4];
    dot4_q2_k_avx2(x2, a.data(), kSuper, o2);
    dot4_q3_k_avx2(x3, a.data(), kSuper, o3);
    dot4_q4_k_avx2(x4, a.data(), kSuper, o4);
    dot4_q5_k_avx2(x5, a.data(), kSuper, o5);
    dot4_q6_k_avx2(x6, a.data(), kSuper, o6);
    dot4_q8_0_avx2(x8, a.data(), 8 * kSuper, o8);
    dot4_iq4_nl_avx2(xn, a.data(), 8 * kSuper, on);
    dot4_iq4_xs_avx2(xx, a.data(), kSuper, ox);
    dot4_iq2_xxs_avx2(xg2, a.data(), kSuper, og2);
    dot4_iq3_xxs_avx2(xg3, a.data(), kSuper, og3);
    for (int r = 0; r < 4; ++r) {
      INFO("rep " << rep << " row " << r);
      CHECK(same(o2[r], dot_q2_k_portable(x2[r], a.data(), kSuper)));
      CHECK(same(o3[r], dot_q3_k_portable(x3[r], a.data(), kSuper)));
      CHECK(same(o4[r], dot_q4_k_portable(x4[r], a.data(), kSuper)));
      CHECK(same(o5[r], dot_q5_k_portable(x5[r], a.data(), kSuper)));
      CHECK(same(o6[r], dot_q6_k_portable(x6[r], a.data(), kSuper)));
      CHECK(same(o8[r], dot_q8_0_portable(x8[r], a.data(), 8 * kSuper)));
      CHECK(same(on[r], dot_iq4_nl_portable(xn[r], a.data(), 8 * kSuper)));
      CHECK(same(ox[r], dot_iq4_xs_portable(xx[r], a.data(), kSuper)));
      CHECK(same(og2[r], dot_iq2_xxs_portable(xg2[r], a.data(), kSuper)));
      CHECK(same(og3[r], dot_iq3_xxs_portable(xg3[r], a.data(), kSuper)));
    }
  }
}
