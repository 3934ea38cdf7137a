// Hand-built Q8_0/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_NL/IQ4_XS blocks: every dequantized value checked against
// the GGUF layout.
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "quant_test_util.h"

using namespace strata::core;
using namespace strata::core::testing;

namespace {

// Chosen so that j >= 4 needs both the low nibble in bytes 8..11 and the two
// high bits in the top of bytes 0..7: sc = {1,2,3,4,17,33,50,63},
// m = {5,6,7,8,21,40,0,63}. Bytes worked out by hand:
//   bytes[0..3]  = sc[0..3] | (sc[4..7] >> 4) << 6 = 1|1<<6, 2|2<<6, 3|3<<6, 4|3<<6
//   bytes[4..7]  = m[0..3]  | (m[4..7]  >> 4) << 6 = 5|1<<6, 6|2<<6, 7|0<<6, 8|3<<6
//   bytes[8..11] = (sc[4..7] & 15) | (m[4..7] & 15) << 4 = 1|5<<4, 1|8<<4, 2|0<<4, 15|15<<4
constexpr uint8_t kScaleBytes[12] = {65, 130, 195, 196, 69, 134, 7, 200, 81, 129, 2, 255};
constexpr uint8_t kSc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
constexpr uint8_t kMin[8] = {5, 6, 7, 8, 21, 40, 0, 63};

}  // namespace

TEST_CASE("Q8_0 block: x = d * qs") {
  BlockQ8_0 b{};
  b.d = 0x3800;  // 0.5
  const int8_t qs[32] = {-128, -127, -1, 0, 1, 2, 3, 127, 64, -64, 5, 6, 7, 8, 9, 10,
                         11,   12,   13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -100};
  std::memcpy(b.qs, qs, 32);
  float y[32];
  dequantize_row(GgmlType::Q8_0, &b, y, 32);
  for (int i = 0; i < 32; ++i) CHECK(y[i] == 0.5f * qs[i]);
  CHECK(y[0] == -64.0f);
  CHECK(y[7] == 63.5f);
}

TEST_CASE("K-quant 6-bit scales and mins unpack for j < 4 and j >= 4") {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(kScaleBytes, j, sc, m);
    INFO("j = " << j);
    CHECK(sc == kSc[j]);
    CHECK(m == kMin[j]);
  }
  uint8_t packed[12];
  pack_scale_min_k4(kSc, kMin, packed);
  CHECK(std::memcmp(packed, kScaleBytes, 12) == 0);
  // Every 6-bit value in every slot survives pack -> unpack.
  for (int v = 0; v < 64; ++v) {
    for (int slot = 0; slot < 8; ++slot) {
      uint8_t sc[8] = {}, m[8] = {};
      sc[slot] = static_cast<uint8_t>(v);
      m[slot] = static_cast<uint8_t>(63 - v);
      pack_scale_min_k4(sc, m, packed);
      for (int j = 0; j < 8; ++j) {
        uint8_t s2, m2;
        unpack_scale_min_k4(packed, j, s2, m2);
        REQUIRE(s2 == sc[j]);
        REQUIRE(m2 == m[j]);
      }
    }
  }
}

TEST_CASE("Q4_K block: nibble order and scale/min per 32-element sub-block") {
  BlockQ4_K b{};
  b.d = 0x3c00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  std::memcpy(b.scales, kScaleBytes, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 11);
  b.qs[0] = 0x2a;    // value 0 gets 10, value 32 gets 2
  b.qs[101] = 0xf0;  // value 192+5 gets 0, value 224+5 gets 15
  float y[256];
  dequantize_row(GgmlType::Q4_K, &b, y, 256);
  // Literal spot checks: y = 1.0 * sc * q - 0.5 * m.
  CHECK(y[0] == 1 * 10 - 2.5f);
  CHECK(y[32] == 2 * 2 - 3.0f);
  CHECK(y[197] == 50 * 0 - 0.0f);
  CHECK(y[229] == 63 * 15 - 31.5f);
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const int j = e / 32;
    CHECK(y[e] == static_cast<float>(kSc[j] * q4k_quant(b, e)) - 0.5f * kMin[j]);
  }
}

TEST_CASE("Q5_K block: fifth bit from byte l of qh, bit 2g (first 32 of a group) and 2g+1 (next 32)") {
  BlockQ5_K b{};
  b.d = 0x3c00;     // 1.0
  b.dmin = 0x3400;  // 0.25
  std::memcpy(b.scales, kScaleBytes, 12);
  for (int l = 0; l < 32; ++l) b.qh[l] = static_cast<uint8_t>(1u << (l % 8));
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 53 + 5);
  b.qs[3] = 0x00;   // values 3 and 35
  b.qs[35] = 0x97;  // values 64+3 (low 7) and 96+3 (high 9)
  float y[256];
  dequantize_row(GgmlType::Q5_K, &b, y, 256);
  // qh[3] = 0x08: only bit 3 = 2*1 + 1, i.e. the second 32 of group 1.
  CHECK(y[3] == 1 * 0 - 0.25f * 5);
  CHECK(y[35] == 2 * 0 - 0.25f * 6);
  CHECK(y[67] == 3 * 7 - 0.25f * 7);
  CHECK(y[99] == 4 * (9 + 16) - 0.25f * 8);
  // qh[4] = 0x10: bit 4 = 2*2, the first 32 of group 2 (value 128 + 4).
  CHECK(q5k_quant(b, 132) >= 16);
  CHECK(q5k_quant(b, 4) < 16);
  CHECK(q5k_quant(b, 164) < 16);
  int high = 0;
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const int j = e / 32;
    high += q5k_quant(b, e) >= 16;
    CHECK(y[e] == static_cast<float>(kSc[j] * q5k_quant(b, e)) - 0.25f * kMin[j]);
  }
  CHECK(high == 32);  // each qh byte has exactly one bit set
}

TEST_CASE("Q6_K block: ql/qh ordering and one int8 scale per 16 elements") {
  BlockQ6_K b{};
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j * 9 - 70);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 29 + 7);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 71 + 3);
  b.ql[0] = 0x21;   // low bits: value 0 -> 1, value 64 -> 2
  b.ql[32] = 0x43;  // value 32 -> 3, value 96 -> 4
  b.qh[0] = 0xe4;   // high bits (2 each, from bit 0): values 0, 32, 64, 96 -> 0, 1, 2, 3
  b.ql[64 + 5] = 0xff;  // second half: values 128+5 and 192+5 low bits 15
  b.qh[32 + 5] = 0x33;  // values 133, 165, 197, 229 high bits 3, 0, 3, 0
  float y[256];
  dequantize_row(GgmlType::Q6_K, &b, y, 256);
  // y = 0.5 * scale[e/16] * (q - 32); scales: e=0 -> -70, 32 -> -52, 64 -> -34, 96 -> -16.
  CHECK(y[0] == 0.5f * -70 * (1 - 32));
  CHECK(y[32] == 0.5f * -52 * ((3 | 1 << 4) - 32));
  CHECK(y[64] == 0.5f * -34 * ((2 | 2 << 4) - 32));
  CHECK(y[96] == 0.5f * -16 * ((4 | 3 << 4) - 32));
  CHECK(q6k_quant(b, 133) == 63 - 32);
  CHECK(q6k_quant(b, 197) == 63 - 32);
  CHECK(y[133] == 0.5f * (8 * 9 - 70) * 31);
  CHECK(y[197] == 0.5f * (12 * 9 - 70) * 31);
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    CHECK(y[e] == 0.5f * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q6k_quant(b, e)));
  }
}

TEST_CASE("Q2_K block: 2-bit planes and a 4-bit scale and min per 16 elements") {
  BlockQ2_K b{};
  b.d = 0x3800;     // 0.5
  b.dmin = 0x3c00;  // 1.0
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<uint8_t>(k | (15 - k) << 4);  // sc = k, m = 15 - k
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 11);
  b.qs[0] = 0xe4;       // bit pairs from bit 0: values 0, 32, 64, 96 -> 0, 1, 2, 3
  b.qs[32 + 5] = 0x1b;  // second half: values 133, 165, 197, 229 -> 3, 2, 1, 0
  float y[256];
  dequantize_row(GgmlType::Q2_K, &b, y, 256);
  // y = 0.5 * sc * q - 1.0 * m with sub-block k = e / 16.
  CHECK(y[0] == -15.0f);    // k 0: 0 - 15
  CHECK(y[32] == -12.0f);   // k 2: 0.5 * 2 * 1 - 13
  CHECK(y[64] == -7.0f);    // k 4: 0.5 * 4 * 2 - 11
  CHECK(y[96] == 0.0f);     // k 6: 0.5 * 6 * 3 - 9
  CHECK(y[133] == 5.0f);    // k 8: 0.5 * 8 * 3 - 7
  CHECK(y[165] == 5.0f);    // k 10: 0.5 * 10 * 2 - 5
  CHECK(y[197] == 3.0f);    // k 12: 0.5 * 12 * 1 - 3
  CHECK(y[229] == -1.0f);   // k 14: 0 - 1
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const int k = e / 16;
    CHECK(y[e] == 0.5f * static_cast<float>(k * q2k_quant(b, e)) - static_cast<float>(15 - k));
  }
}

TEST_CASE("Q3_K block: 2-bit planes, the high-bit mask and 6-bit scales split over 12 bytes") {
  BlockQ3_K b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 12; ++i) b.scales[i] = static_cast<uint8_t>(i * 53 + 17);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 29 + 5);
  for (int i = 0; i < 32; ++i) b.hmask[i] = static_cast<uint8_t>(i * 71 + 3);
  // Scales 0, 4, 8, 12: low nibbles in bytes 0 and 4, high bit pairs in byte 8.
  b.scales[0] = 0x5a;  // scale 0 low 10, scale 8 low 5
  b.scales[4] = 0x3c;  // scale 4 low 12, scale 12 low 3
  b.scales[8] = 0xe4;  // high bits of scales 0, 4, 8, 12: 0, 1, 2, 3
  // -> scales 10, 28, 37, 51, minus 32: -22, -4, 5, 19.
  b.scales[5] = 0x9c;  // scale 13 low: the high nibble, 9
  b.scales[9] = 0x80;  // bits 6-7 (scale 13's high bits): 2; bits 0-5 (scales 1, 5, 9 high): 0
  // -> scale 13 = 9 | 2 << 4 = 41, minus 32: 9; scale 5 = 0xc | 0 = 12, minus 32: -20.
  b.hmask[0] = 0x11;  // high bit set for values 0 (bit 0) and 128 (bit 4), clear for 64 and 192
  b.qs[0] = 0x27;     // values 0, 32, 64, 96 -> low bits 3, 1, 2, 0
  b.qs[32] = 0x31;    // values 128, 160, 192, 224 -> low bits 1, 0, 3, 0
  float y[256];
  dequantize_row(GgmlType::Q3_K, &b, y, 256);
  CHECK(q3k_scale(b, 0) == -22);
  CHECK(q3k_scale(b, 4) == -4);
  CHECK(q3k_scale(b, 8) == 5);
  CHECK(q3k_scale(b, 12) == 19);
  CHECK(q3k_scale(b, 13) == 9);
  CHECK(q3k_scale(b, 5) == -20);
  CHECK(y[0] == 0.5f * -22 * 3);     // high bit set: q = 3
  CHECK(y[64] == 0.5f * -4 * -2);    // high bit clear: q = 2 - 4
  CHECK(y[128] == 0.5f * 5 * 1);     // high bit set: q = 1
  CHECK(y[192] == 0.5f * 19 * -1);   // high bit clear: q = 3 - 4
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    CHECK(y[e] == 0.5f * static_cast<float>(q3k_scale(b, e / 16) * q3k_quant(b, e)));
  }
}

TEST_CASE("IQ4_NL block: 4-bit indices into the non-linear codebook, low nibbles first") {
  const int* kv = kIq4Codebook;
  BlockIQ4_NL b{};
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  float y[32];
  dequantize_row(GgmlType::IQ4_NL, &b, y, 32);
  CHECK(y[0] == -63.5f);   // index 0
  CHECK(y[8] == 0.5f);     // index 8
  CHECK(y[15] == 56.5f);   // index 15
  CHECK(y[16] == 56.5f);   // high nibble of qs[0]: index 15
  CHECK(y[31] == -63.5f);  // high nibble of qs[15]: index 0
  for (int j = 0; j < 16; ++j) {
    INFO("element " << j);
    CHECK(y[j] == 0.5f * static_cast<float>(kv[j]));
    CHECK(y[j + 16] == 0.5f * static_cast<float>(kv[15 - j]));
  }
}

TEST_CASE("IQ4_XS block: eight IQ4_NL groups, 6-bit scales split over scales_l and scales_h") {
  const int* kv = kIq4Codebook;
  BlockIQ4_XS b{};
  b.d = 0x3800;  // 0.5
  // Group ib: low nibble ib + 3 (nibble ib % 2 of scales_l[ib / 2]), high bits ib % 4 (bits 2ib of scales_h).
  for (int ib = 0; ib < 8; ++ib) {
    b.scales_l[ib / 2] = static_cast<uint8_t>(b.scales_l[ib / 2] | ((ib + 3) << (4 * (ib % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((ib % 4) << (2 * ib)));
  }
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 11);
  float y[256];
  dequantize_row(GgmlType::IQ4_XS, &b, y, 256);
  CHECK(y[0] == 0.5f * -29 * kv[11]);    // group 0: ls 3 -> -29; qs[0] = 11
  CHECK(y[16] == 0.5f * -29 * kv[0]);    // its high nibble: 0
  CHECK(y[96] == 0.5f * 22 * kv[11]);     // group 3: ls 6 + 48 = 54 -> 22; qs[48] = 251
  for (int e = 0; e < 256; ++e) {
    INFO("element " << e);
    const int ib = e / 32, j = e % 32;
    const int ls = (ib + 3) + 16 * (ib % 4);
    const uint8_t q = b.qs[16 * ib + j % 16];
    CHECK(y[e] == 0.5f * static_cast<float>((ls - 32) * kv[j < 16 ? q & 15 : q >> 4]));
  }
}

TEST_CASE("multi-block rows dequantize block after block") {
  std::vector<BlockQ8_0> q(3);
  for (int i = 0; i < 3; ++i) {
    q[i].d = f32_to_fp16(static_cast<float>(i + 1));
    for (int l = 0; l < 32; ++l) q[i].qs[l] = static_cast<int8_t>(l - 16);
  }
  std::vector<float> y(96);
  dequantize_row(GgmlType::Q8_0, q.data(), y.data(), 96);
  for (int e = 0; e < 96; ++e) CHECK(y[e] == static_cast<float>((e / 32 + 1) * (e % 32 - 16)));

  std::vector<BlockQ6_K> k(2);
  std::memset(k.data(), 0, 2 * sizeof(BlockQ6_K));
  k[1].d = 0x3c00;
  k[1].scales[15] = 2;
  k[1].ql[127] = 0xf0;  // value 255 of block 1: low 15, high 0 -> 15 - 32
  std::vector<float> z(512);
  dequantize_row(GgmlType::Q6_K, k.data(), z.data(), 512);
  CHECK(z[511] == 2.0f * (15 - 32));
  CHECK(z[255] == 0.0f);
}
