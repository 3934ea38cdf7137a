// The int8 GEMM's fold (src/cuda/mmq_mma.cuh, fold<T>) replayed on the CPU: magic-biased MMA results and one FMA per product give vec_dot's bits.
//
// The kernel's MMA accumulators start at the bits of 1.5 * 2^23, so an exact
// block dot isum comes back as the float 1.5 * 2^23 + isum, and the kernel
// forms ws * (float)isum as fma(ws, 1.5 * 2^23 + isum, -(ws * 1.5 * 2^23)).
// That equals the CPU's rounded product only because ws * 1.5 * 2^23 is exact
// (ws = F16 d times a 6-bit scale, or an int8 Q6_K scale) and |isum| < 2^22.
// These tests hold the claim to core::vec_dot on random and extreme blocks,
// with every finite F16 scale (negative and subnormal ones too). The GPU
// kernel itself is checked by tests/ops/gemm_test.cpp where a GPU exists.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "catch.hpp"
#include "core/fp16.h"
#include "core/quant.h"
#include "core/quant_blocks.h"
#include "quant_test_util.h"

using namespace strata::core;
using namespace strata::core::testing;

namespace {

constexpr uint32_t kMagicBits = 0x4B400000u;
constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23

// Separately rounded F32 operations (volatile: no contraction into FMAs).
float add(float a, float b) {
  volatile float r = a + b;
  return r;
}
float sub(float a, float b) {
  volatile float r = a - b;
  return r;
}

// What the kernel's MMA returns for the exact dot isum, as a float.
float mma_out(int32_t isum) { return f32_from_bits(kMagicBits + static_cast<uint32_t>(isum)); }

uint16_t random_finite_half(std::mt19937& rng) {
  for (;;) {
    const auto h = static_cast<uint16_t>(rng());
    if (((h >> 10) & 31) != 31) return h;
  }
}

// Q8A blocks with random d (over many binades), qs in [-127, 127] (or all
// at one extreme) and the matching sum.
std::vector<BlockQ8A> random_acts(std::mt19937& rng, int nblocks, int extreme) {
  std::vector<BlockQ8A> a(static_cast<size_t>(nblocks));
  std::uniform_int_distribution<int> q(-127, 127), ex(-30, 10);
  for (BlockQ8A& b : a) {
    b.d = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f, ex(rng));
    b.sum = 0;
    for (int8_t& v : b.qs) {
      v = static_cast<int8_t>(extreme != 0 ? 127 * extreme : q(rng));
      b.sum += v;
    }
  }
  return a;
}

// fold<Q4_K / Q5_K>: a.d * (ws * isum - wm * a.sum), ws * isum as one FMA.
template <typename Block, typename Quant>
float fold_minmax(const Block* w, const BlockQ8A* a, int nb, Quant quant) {
  float acc = 0.0f;
  for (int i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(w[i].d), dmin = fp16_to_f32(w[i].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      unpack_scale_min_k4(w[i].scales, j, sc, m);
      const float ws = mul(d, static_cast<float>(sc)), wm = mul(dmin, static_cast<float>(m));
      const BlockQ8A& b = a[8 * i + j];
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) isum += quant(w[i], 32 * j + l) * b.qs[l];
      const float x = std::fmaf(ws, mma_out(isum), mul(ws, -kMagic));
      acc = add(acc, mul(b.d, sub(x, mul(wm, static_cast<float>(b.sum)))));
    }
  }
  return acc;
}

// fold<Q6_K>: (d * a.d) * (sc_lo * lo + sc_hi * hi), each product one exact FMA.
float fold_q6_k(const BlockQ6_K* w, const BlockQ8A* a, int nb) {
  float acc = 0.0f;
  for (int i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(w[i].d);
    for (int c = 0; c < 8; ++c) {
      const BlockQ8A& b = a[8 * i + c];
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 16; ++l) lo += q6k_quant(w[i], 32 * c + l) * b.qs[l];
      for (int l = 16; l < 32; ++l) hi += q6k_quant(w[i], 32 * c + l) * b.qs[l];
      const float s0 = static_cast<float>(w[i].scales[2 * c]), s1 = static_cast<float>(w[i].scales[2 * c + 1]);
      const float pl = std::fmaf(s0, mma_out(lo), mul(s0, -kMagic));
      const float ph = std::fmaf(s1, mma_out(hi), mul(s1, -kMagic));
      acc = add(acc, mul(mul(d, b.d), add(pl, ph)));
    }
  }
  return acc;
}

// fold<Q8_0>: (d_w * d_a) * (float)isum, the conversion one subtraction.
float fold_q8_0(const BlockQ8_0* w, const BlockQ8A* a, int nb) {
  float acc = 0.0f;
  for (int i = 0; i < nb; ++i) {
    int32_t isum = 0;
    for (int l = 0; l < 32; ++l) isum += w[i].qs[l] * a[i].qs[l];
    acc = add(acc, mul(mul(fp16_to_f32(w[i].d), a[i].d), sub(mma_out(isum), kMagic)));
  }
  return acc;
}

bool same_bits(float a, float b) { return f32_bits(a) == f32_bits(b); }

}  // namespace

TEST_CASE("mmq fold: magic-biased MMA results and one FMA per product equal vec_dot") {
  const uint32_t seed = test_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  constexpr int kSuper = 4;  // super-blocks per row
  int checked = 0;
  for (int it = 0; it < 3000; ++it) {
    // Every 8th row has all activations at +127 or -127 and every weight
    // quant at its largest magnitude: the largest |isum| each type can make.
    const int extreme = it % 8 == 0 ? 1 : (it % 8 == 4 ? -1 : 0);
    const std::vector<BlockQ8A> act = random_acts(rng, 8 * kSuper, extreme);

    std::vector<BlockQ4_K> q4(kSuper);
    std::vector<BlockQ5_K> q5(kSuper);
    std::vector<BlockQ6_K> q6(kSuper);
    std::vector<BlockQ8_0> q8(8 * kSuper);
    auto fill = [&](void* p, size_t n) {
      auto* b = static_cast<uint8_t*>(p);
      for (size_t k = 0; k < n; ++k) b[k] = extreme != 0 ? 0xff : static_cast<uint8_t>(rng());
    };
    for (int i = 0; i < kSuper; ++i) {
      fill(&q4[i], sizeof(BlockQ4_K));
      fill(&q5[i], sizeof(BlockQ5_K));
      fill(&q6[i], sizeof(BlockQ6_K));
      q4[i].d = random_finite_half(rng);
      q4[i].dmin = random_finite_half(rng);
      q5[i].d = random_finite_half(rng);
      q5[i].dmin = random_finite_half(rng);
      q6[i].d = random_finite_half(rng);
      if (extreme != 0) {
        // Q6_K: quants all -32 (stored 0) with scales -128 give the largest |isum|.
        std::memset(q6[i].ql, 0, sizeof q6[i].ql);
        std::memset(q6[i].qh, 0, sizeof q6[i].qh);
        std::memset(q6[i].scales, 0x80, sizeof q6[i].scales);
      }
    }
    for (BlockQ8_0& b : q8) {
      fill(&b, sizeof(BlockQ8_0));
      if (extreme != 0) std::memset(b.qs, 0x80, sizeof b.qs);  // -128
      b.d = random_finite_half(rng);
    }
    const int n = 256 * kSuper;
    const float w4 = vec_dot(GgmlType::Q4_K, q4.data(), act.data(), n);
    const float w5 = vec_dot(GgmlType::Q5_K, q5.data(), act.data(), n);
    const float w6 = vec_dot(GgmlType::Q6_K, q6.data(), act.data(), n);
    const float w8 = vec_dot(GgmlType::Q8_0, q8.data(), act.data(), n);
    const float g4 = fold_minmax(q4.data(), act.data(), kSuper, q4k_quant);
    const float g5 = fold_minmax(q5.data(), act.data(), kSuper, q5k_quant);
    const float g6 = fold_q6_k(q6.data(), act.data(), kSuper);
    const float g8 = fold_q8_0(q8.data(), act.data(), 8 * kSuper);
    INFO("row " << it << ": q4_K " << g4 << " vs " << w4 << ", q5_K " << g5 << " vs " << w5 << ", q6_K " << g6
                << " vs " << w6 << ", q8_0 " << g8 << " vs " << w8);
    REQUIRE(same_bits(g4, w4));
    REQUIRE(same_bits(g5, w5));
    REQUIRE(same_bits(g6, w6));
    REQUIRE(same_bits(g8, w8));
    ++checked;
  }
  CHECK(checked == 3000);
}
