// The warpgroup GEMM's per-type quant reads (QuantTraits::quant_pairs) on the CPU: each lane's quants of each instruction from real GGUF bytes, in the type's chunk order (kChunkDelta), for every type on the wgmma list.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "cuda/gemm/type_paths.h"
#include "cuda/gemm/wgmma_layout.h"
#include "ops/gemm_ref.h"
#include "unit/quant_pairs_host.h"

namespace core = strata::core;
namespace cuda = strata::cuda;
namespace wg = strata::cuda::wgmma;
using core::GgmlType;

namespace {

// The one-scale types: blocks of a half d (and m), quants read by host-callable w4.
constexpr GgmlType kScaleTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                    GgmlType::Q5_1, GgmlType::Q1_0, GgmlType::Q2_0};

// A grid type's group (core/quant/quant_blocks.h): random grid indices and
// signs, d = the type's factor and every 4-bit scale s 0, so each weight,
// d * (2s + 1) / factor times a signed magnitude, is that magnitude.
template <class Block, class RandomBytes>
std::vector<uint8_t> unit_scale_grid_group(RandomBytes& random_bytes) {
  std::vector<uint8_t> g(sizeof(Block));
  random_bytes(g.data(), static_cast<int>(g.size()));
  const uint16_t d = strata::core::f32_to_fp16(static_cast<float>(core::kGridShape<Block>.factor));
  std::memcpy(g.data(), &d, 2);
  auto* b = reinterpret_cast<Block*>(g.data());
  if constexpr (std::is_same_v<Block, core::BlockIQ2_XXS> || std::is_same_v<Block, core::BlockIQ3_XXS>) {
    // s is the top nibble of each group's sign-and-scale word.
    for (int j = 0; j < 8; ++j) g[offsetof(Block, qs) + core::grid_word_offset(b, j) + 3] &= 0x0f;
  } else {
    std::memset(b->scales, 0, sizeof(b->scales));
  }
  return g;
}

// One 256-value group of `type` with random quants and unit scales (d = 1,
// every sub-block scale 1, every min 0), so its F16 weights are its quants
// (q - 4 for Q3_K, q - 32 for Q6_K, the codebook values of the IQ4 types,
// the one-scale types' q or signed q - offset).
std::vector<uint8_t> unit_scale_group(GgmlType type, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  const uint16_t one = strata::core::f32_to_fp16(1.0f);
  auto random_bytes = [&](uint8_t* p, int n) {
    for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(byte(rng));
  };
  switch (type) {
    case GgmlType::IQ2_XXS: return unit_scale_grid_group<core::BlockIQ2_XXS>(random_bytes);
    case GgmlType::IQ2_XS: return unit_scale_grid_group<core::BlockIQ2_XS>(random_bytes);
    case GgmlType::IQ2_S: return unit_scale_grid_group<core::BlockIQ2_S>(random_bytes);
    case GgmlType::IQ3_XXS: return unit_scale_grid_group<core::BlockIQ3_XXS>(random_bytes);
    case GgmlType::IQ3_S: return unit_scale_grid_group<core::BlockIQ3_S>(random_bytes);
    default: break;
  }
  std::vector<uint8_t> g;
  const core::TypeTraits& tr = core::type_traits(type);
  if (std::find(std::begin(kScaleTypes), std::end(kScaleTypes), type) != std::end(kScaleTypes)) {
    // Blocks of d = 1 (and m = 0 for Q4_1, Q5_1: the half after d).
    g.resize(256 / tr.block_size * tr.type_size);
    random_bytes(g.data(), static_cast<int>(g.size()));
    for (size_t b = 0; b < g.size(); b += tr.type_size) {
      std::memcpy(g.data() + b, &one, 2);
      if (type == GgmlType::Q4_1 || type == GgmlType::Q5_1) std::memset(g.data() + b + 2, 0, 2);
    }
  } else if (type == GgmlType::Q4_K || type == GgmlType::Q5_K) {
    g.resize(type == GgmlType::Q4_K ? 144 : 176);
    random_bytes(g.data(), static_cast<int>(g.size()));
    std::memcpy(g.data(), &one, 2);
    std::memset(g.data() + 2, 0, 2);  // dmin
    // unpack_scale_min_k4: sc_j = scales[j] & 63 and m_j = scales[j + 4] & 63
    // for j < 4; for j >= 4 the low nibbles of scales[j + 4] (sc) and its
    // high nibbles (m), plus the top bits of scales[j - 4] / scales[j].
    uint8_t* sc = g.data() + 4;
    for (int j = 0; j < 4; ++j) sc[j] = 1, sc[j + 4] = 0, sc[j + 8] = 0x01;
  } else if (type == GgmlType::Q2_K) {
    g.resize(84);
    random_bytes(g.data() + 16, 64);  // qs
    for (int k = 0; k < 16; ++k) g[k] = 0x01;  // scale 1 (low nibble), min 0
    std::memcpy(g.data() + 80, &one, 2);
    std::memset(g.data() + 82, 0, 2);  // dmin
  } else if (type == GgmlType::Q3_K) {
    g.resize(110);
    random_bytes(g.data(), 96);  // hmask, qs
    // unpack_scale_q3_k: scale k is (low nibble | 2 high bits << 4) - 32, so
    // 33 = low 1 (bytes 96..103: 0x11), high 2 (bytes 104..107: 0xaa).
    for (int k = 0; k < 8; ++k) g[96 + k] = 0x11;
    for (int k = 0; k < 4; ++k) g[104 + k] = 0xaa;
    std::memcpy(g.data() + 108, &one, 2);
  } else if (type == GgmlType::Q6_K) {
    g.resize(210);
    random_bytes(g.data(), 192);  // ql, qh
    for (int i = 0; i < 16; ++i) g[192 + i] = 1;
    std::memcpy(g.data() + 208, &one, 2);
  } else if (type == GgmlType::IQ4_NL) {
    g.resize(8 * 18);
    random_bytes(g.data(), static_cast<int>(g.size()));
    for (int b = 0; b < 8; ++b) std::memcpy(g.data() + 18 * b, &one, 2);
  } else if (type == GgmlType::IQ4_XS) {
    g.resize(136);
    random_bytes(g.data() + 8, 128);  // qs
    std::memcpy(g.data(), &one, 2);
    // unpack_scale_iq4_xs: ls_j - 32 = 1 is low nibble 1 (scales_l: 0x11)
    // and high bits 2 (scales_h: 0b10 per group).
    g[2] = g[3] = 0xaa;
    for (int k = 0; k < 4; ++k) g[4 + k] = 0x11;
  } else {
    REQUIRE(type == GgmlType::Q8_0);  // a new wgmma type needs its group here
    g.resize(8 * 34);
    random_bytes(g.data(), static_cast<int>(g.size()));
    for (int b = 0; b < 8; ++b) std::memcpy(g.data() + 34 * b, &one, 2);
  }
  return g;
}

}  // namespace

TEST_CASE("wgmma: quant_pairs reads each lane's quants from real GGUF bytes", "[wgmma]") {
  std::mt19937 rng(20261201);
  for (GgmlType t : cuda::path_types<cuda::KernelPath::Wgmma>()) {
    INFO(core::type_traits(t).name);
    const int delta = strata::test::wgmma_chunk_delta(t);
    for (int rep = 0; rep < 8; ++rep) {
      const std::vector<uint8_t> group = unit_scale_group(t, rng);
      const std::vector<float> w = strata::test::gemm_weights(t, group.data(), 256);
      for (int i = 0; i < wg::kSteps; ++i) {
        for (int tq = 0; tq < 4; ++tq) {
          const uint32_t q = strata::test::wgmma_quant_pairs(t, group.data(), i, tq);
          for (int m = 0; m < 2; ++m) {
            for (int e = 0; e < 2; ++e) {
              const uint8_t b = static_cast<uint8_t>(q >> (8 * (2 * m + e)));
              const int got = strata::test::wgmma_signed(t) ? static_cast<int8_t>(b) : b;
              const int v = 8 * wg::chunk_of(delta, i, m) + 2 * tq + e;
              INFO("instruction " << i << " lane t " << tq << " value " << v);
              REQUIRE(static_cast<float>(got) == w[static_cast<size_t>(v)]);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("mmvq, mma.sync, F16 decode: w4 reads the one-scale types' quants from real GGUF bytes", "[wgmma]") {
  std::mt19937 rng(20261207);
  for (GgmlType t : kScaleTypes) {
    INFO(core::type_traits(t).name);
    for (int rep = 0; rep < 8; ++rep) {
      const std::vector<uint8_t> group = unit_scale_group(t, rng);
      const std::vector<float> w = strata::test::gemm_weights(t, group.data(), 256);
      for (int j = 0; j < 8; ++j) {
        for (int k4 = 0; k4 < 8; ++k4) {
          const auto q = static_cast<uint32_t>(strata::test::scale_type_w4(t, group.data(), j, k4));
          for (int b = 0; b < 4; ++b) {
            const uint8_t byte = static_cast<uint8_t>(q >> (8 * b));
            const int got = strata::test::wgmma_signed(t) ? static_cast<int8_t>(byte) : byte;
            INFO("block " << j << " word " << k4 << " byte " << b);
            REQUIRE(static_cast<float>(got) == w[static_cast<size_t>(32 * j + 4 * k4 + b)]);
          }
        }
      }
    }
  }
}
