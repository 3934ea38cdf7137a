// AVX2 dot products of the quantized rows with Q8A activations; see quant_avx2.h.
//
// Each sub-block's integer dot is exact whatever the order of its partial
// sums: pmaddubsw multiplies unsigned weight quants (Q2_K 0..3, Q3_K stored
// 0..7, Q4_K/Q5_K 0..31, Q6_K stored 0..63, Q8_0 |q| <= 128, the legacy types
// |q| <= 31, the IQ4 codebook's |v| <= 127, the grid magnitudes <= 62, IQ1's
// |8 g + 8 delta| <= 9) by signed activation quants (|a| <= 127) and adds adjacent pairs into int16
// without saturating (at most 2 * 128 * 127 = 32512), pmaddwd widens to
// int32. The F32 fold then runs exactly as the portable code writes it.
#include "core/quant/quant_avx2.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/base/env.h"
#include "core/quant/fp16.h"
#include "core/quant/quant_tables.h"
#include "core/quant/quant_tables_iq1.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define STRATA_AVX2 1
#define STRATA_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#endif

namespace strata::core {

// Every type with AVX2 dots, as X(type, its block, its rows kernel): the
// entry points below (or, without AVX2, their never-called stubs).
#define STRATA_AVX2_DOT_TYPES(X)                                                                                 \
  X(q8_0, BlockQ8_0, dot_block32_rows)                                                                          \
  X(q4_0, BlockQ4_0, dot_block32_rows)                                                                          \
  X(q4_1, BlockQ4_1, dot_block32_rows)                                                                          \
  X(q5_0, BlockQ5_0, dot_block32_rows)                                                                          \
  X(q5_1, BlockQ5_1, dot_block32_rows)                                                                          \
  X(q1_0, BlockQ1_0, dot_block32_rows)                                                                          \
  X(q2_0, BlockQ2_0, dot_block32_rows)                                                                          \
  X(q2_k, BlockQ2_K, dot_q2_k_rows)                                                                             \
  X(q3_k, BlockQ3_K, dot_q3_k_rows)                                                                             \
  X(q4_k, BlockQ4_K, dot_minmax_rows)                                                                           \
  X(q5_k, BlockQ5_K, dot_minmax_rows)                                                                           \
  X(q6_k, BlockQ6_K, dot_q6_k_rows)                                                                             \
  X(iq4_nl, BlockIQ4_NL, dot_block32_rows)                                                                      \
  X(mxfp4, BlockMXFP4, dot_block32_rows)                                                                        \
  X(nvfp4, BlockNVFP4, dot_nvfp4_rows)                                                                          \
  X(iq4_xs, BlockIQ4_XS, dot_iq4_xs_rows)                                                                       \
  X(iq2_xxs, BlockIQ2_XXS, dot_grid_rows)                                                                       \
  X(iq2_xs, BlockIQ2_XS, dot_grid_rows)                                                                         \
  X(iq2_s, BlockIQ2_S, dot_grid_rows)                                                                           \
  X(iq3_xxs, BlockIQ3_XXS, dot_grid_rows)                                                                       \
  X(iq3_s, BlockIQ3_S, dot_grid_rows)                                                                           \
  X(iq1_s, BlockIQ1_S, dot_grid_rows)                                                                           \
  X(iq1_m, BlockIQ1_M, dot_grid_rows)

#ifdef STRATA_AVX2

bool cpu_has_avx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    // F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not name it.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") != 0 && f16c && !env_flag(EnvVar::NoAvx2);
  }();
  return have;
}

namespace {

// The 8 int32 partial sums of unsigned bytes u times signed bytes s: lanes 0-3 hold bytes 0-15, lanes 4-7 bytes 16-31.
STRATA_TARGET_AVX2 inline __m256i dot_bytes(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

STRATA_TARGET_AVX2 inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The totals of eight vectors of int32 partial sums, one a lane: lane j = the sum of v[j]'s lanes.
STRATA_TARGET_AVX2 inline __m256i totals(const __m256i (&v)[8]) {
  const __m256i s0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i s1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0, s1, 0x20), _mm256_permute2x128_si256(s0, s1, 0x31));
}

// An F16 scale as F32 by the F16C instruction (exact, as fp16_to_f32; every
// AVX2 CPU has F16C, and cpu_has_avx2 asks for both).
STRATA_TARGET_AVX2 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// Eight int32 as floats (exact below 2^24).
STRATA_TARGET_AVX2 inline __m256 as_float(__m256i v) { return _mm256_cvtepi32_ps(v); }

// The activation blocks' scales d and sums (as floats) of a super-block: lane j = block j.
STRATA_TARGET_AVX2 inline __m256 act_d(const BlockQ8A* a) {
  return _mm256_setr_ps(a[0].d, a[1].d, a[2].d, a[3].d, a[4].d, a[5].d, a[6].d, a[7].d);
}
STRATA_TARGET_AVX2 inline __m256 act_sum(const BlockQ8A* a) {
  return as_float(_mm256_setr_epi32(a[0].sum, a[1].sum, a[2].sum, a[3].sum, a[4].sum, a[5].sum, a[6].sum, a[7].sum));
}

// A K-quant's 12 scale bytes as sc_j and m_j, j = 0..7, in 8 int32 lanes
// each: unpack_scale_min_k4 for every j at once. For j < 4, sc and m are the
// low 6 bits of bytes j and j + 4; for j >= 4, the nibbles of byte j + 4
// below the top 2 bits of bytes j - 4 (sc) and j (m).
STRATA_TARGET_AVX2 inline void scales_min(const uint8_t* s, __m256i& sc, __m256i& m) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  const uint32_t sc_hi = (w2 & 0x0F0F0F0Fu) | (((w0 >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | (((w1 >> 6) & 0x03030303u) << 4);
  sc = _mm256_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(w0 & 0x3F3F3F3Fu), static_cast<int>(sc_hi), 0, 0));
  m = _mm256_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(w1 & 0x3F3F3F3Fu), static_cast<int>(m_hi), 0, 0));
}

// Q4_K and Q5_K after the integer dots (lane j: sub-block j): the terms of
// the portable dot_minmax_superblock, a.d * (ws * isum - wm * a.sum) with
// ws = d * sc and wm = dmin * m, each rounded lane by lane exactly as the
// scalar code rounds them (the conversions are exact: |isum| < 2^24).
STRATA_TARGET_AVX2 inline __m256 terms_minmax(uint16_t d16, uint16_t dmin16, const uint8_t* scales, __m256i isum,
                                              __m256 ad, __m256 asum) {
  __m256i sc, m;
  scales_min(scales, sc, m);
  const __m256 ws = _mm256_mul_ps(_mm256_set1_ps(half_to_float(d16)), as_float(sc));
  const __m256 wm = _mm256_mul_ps(_mm256_set1_ps(half_to_float(dmin16)), as_float(m));
  return _mm256_mul_ps(ad, _mm256_sub_ps(_mm256_mul_ps(ws, as_float(isum)), _mm256_mul_ps(wm, asum)));
}

// Row r's accumulator (lane r of acc) plus t[r]'s lanes 0, 1, ..., 7, added
// one at a time in that order: the portable code's sequential sum, for R = 1
// or 4 rows at once (the 4 x 8 terms transposed so each add serves 4 rows).
template <int R>
STRATA_TARGET_AVX2 inline void add_terms(__m128& acc, const __m256 (&t)[R]) {
  static_assert(R == 1 || R == 4, "add_terms: 1 or 4 rows");
  if constexpr (R == 1) {
    alignas(32) float v[8];
    _mm256_store_ps(v, t[0]);
    float a = _mm_cvtss_f32(acc);
    for (float x : v) a += x;
    acc = _mm_set_ss(a);
  } else {
    const __m256 u0 = _mm256_unpacklo_ps(t[0], t[1]), u1 = _mm256_unpackhi_ps(t[0], t[1]);
    const __m256 u2 = _mm256_unpacklo_ps(t[2], t[3]), u3 = _mm256_unpackhi_ps(t[2], t[3]);
    // c[j] lane r (in 128-bit half h) = t[r][j + 4h]
    const __m256 c[4] = {_mm256_shuffle_ps(u0, u2, 0x44), _mm256_shuffle_ps(u0, u2, 0xEE),
                         _mm256_shuffle_ps(u1, u3, 0x44), _mm256_shuffle_ps(u1, u3, 0xEE)};
    for (int j = 0; j < 4; ++j) acc = _mm_add_ps(acc, _mm256_castps256_ps128(c[j]));
    for (int j = 0; j < 4; ++j) acc = _mm_add_ps(acc, _mm256_extractf128_ps(c[j], 1));
  }
}

template <int R>
STRATA_TARGET_AVX2 inline void store_rows(__m128 acc, float* out) {
  alignas(16) float v[4];
  _mm_store_ps(v, acc);
  for (int r = 0; r < R; ++r) out[r] = v[r];
}

// Rows stream from memory faster with the super-block after next asked for
// ahead of use (measured: Q4_K rows from DRAM, one thread, 4.7 -> 7.0 GB/s);
// a prefetch past a row's end is harmless (it never faults).
inline constexpr int64_t kPrefetchBlocks = 2;

template <typename Block>
STRATA_TARGET_AVX2 inline void prefetch_block(const Block* b) {
  const char* p = reinterpret_cast<const char*>(b);
  for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
}

// The integer dots of a Q4_K or Q5_K super-block with its activations: lane j = sub-block j.
template <typename Block>
STRATA_TARGET_AVX2 inline __m256i isums_minmax(const Block& b, const BlockQ8A* ab) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256i part[8];
  if constexpr (std::is_same_v<Block, BlockQ4_K>) {
    for (int g = 0; g < 4; ++g) {  // sub-blocks 2g (low nibbles) and 2g + 1 (high nibbles)
      const __m256i q = load32(b.qs + 32 * g);
      part[2 * g] = dot_bytes(_mm256_and_si256(q, m4), load32(ab[2 * g].qs));
      part[2 * g + 1] = dot_bytes(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), load32(ab[2 * g + 1].qs));
    }
  } else {
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i qh = load32(b.qh);  // value 64g + l: bit 2g of qh[l]; 64g + 32 + l: bit 2g + 1
    for (int g = 0; g < 4; ++g) {
      const __m256i q = load32(b.qs + 32 * g);
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h0);
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h1);
      part[2 * g] = dot_bytes(lo, load32(ab[2 * g].qs));
      part[2 * g + 1] = dot_bytes(hi, load32(ab[2 * g + 1].qs));
    }
  }
  return totals(part);
}

// R rows of Q4_K or Q5_K against one activation row.
template <int R, typename Block>
STRATA_TARGET_AVX2 void dot_minmax_rows(const Block* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256 ad = act_d(ab), asum = act_sum(ab);
    __m256 t[R];
    for (int r = 0; r < R; ++r) {
      const Block& b = x[r][i];
      prefetch_block(&x[r][i + kPrefetchBlocks]);
      t[r] = terms_minmax(b.d, b.dmin, b.scales, isums_minmax(b, ab), ad, asum);
    }
    add_terms<R>(acc, t);
  }
  store_rows<R>(acc, out);
}

// R rows of Q6_K against one activation row.
template <int R>
STRATA_TARGET_AVX2 void dot_q6_k_rows(const BlockQ6_K* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3), ones = _mm256_set1_epi8(1);
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256 ad = act_d(ab);
    __m256 t[R];
    for (int r = 0; r < R; ++r) {
      const BlockQ6_K& b = x[r][i];
      prefetch_block(&x[r][i + kPrefetchBlocks]);
      __m256i part[8];
      for (int c = 0; c < 8; ++c) {  // sub-block c = 4h + k: half h, quarter k of 32 values
        const int h = c / 4, k = c % 4;
        const __m256i ql = load32(b.ql + 64 * h + 32 * (k & 1));
        const __m256i lo4 = _mm256_and_si256(k >> 1 ? _mm256_srli_epi16(ql, 4) : ql, m4);
        const __m256i hi2 = _mm256_and_si256(_mm256_srli_epi16(load32(b.qh + 32 * h), 2 * k), m2);
        const __m256i q = _mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4));  // stored value: q - 32 is the quant
        const __m256i s = load32(ab[c].qs);
        // Sum (q - 32) s over each half = sum q s - 32 sum s, exactly; lanes 0-3 the first 16 values, 4-7 the
        // next, each times its 16-value scale: the lanes then add up to the portable code's isum.
        const __m256i v = _mm256_sub_epi32(dot_bytes(q, s), _mm256_slli_epi32(dot_bytes(ones, s), 5));
        const int32_t s0 = b.scales[2 * c], s1 = b.scales[2 * c + 1];
        part[c] = _mm256_mullo_epi32(v, _mm256_setr_epi32(s0, s0, s0, s0, s1, s1, s1, s1));
      }
      // Lane c: (d * a.d) * isum, rounded as the portable code rounds it.
      t[r] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half_to_float(b.d)), ad), as_float(totals(part)));
    }
    add_terms<R>(acc, t);
  }
  store_rows<R>(acc, out);
}

// The activations' adjacent pairs summed, as int16, per block of a super-block
// (|sum| <= 254): rows share them.
STRATA_TARGET_AVX2 inline void act_pairs(const BlockQ8A* ab, __m256i (&pairs)[8]) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (int c = 0; c < 8; ++c) pairs[c] = _mm256_maddubs_epi16(ones, load32(ab[c].qs));
}

// The sixteen 16-value scales of a super-block (bytes, signed, in both 128-bit
// lanes) as block c's int16 multipliers: scale 2c in lanes 0-7 (values 0-15),
// scale 2c + 1 in lanes 8-15 (values 16-31). Each byte lands in both bytes of
// its int16, and the arithmetic shift keeps the top copy with its sign.
STRATA_TARGET_AVX2 inline __m256i block_scales(__m256i scales, int c) {
  const __m256i pick =
      _mm256_add_epi8(_mm256_set_m128i(_mm_set1_epi8(1), _mm_setzero_si128()), _mm256_set1_epi8(2 * c));
  return _mm256_srai_epi16(_mm256_shuffle_epi8(scales, pick), 8);
}

// 16 bytes of q in both 128-bit lanes.
STRATA_TARGET_AVX2 inline __m256i both_lanes(__m128i q) { return _mm256_broadcastsi128_si256(q); }

// R rows of Q2_K against one activation row. Sub-block c = 4h + k (32 values)
// takes bits 2k, 2k + 1 of qs[32h..32h+31]; its two 16-value halves have their
// own 4-bit scale and min (scales[2c], scales[2c + 1]). Lane c: the portable
// term a.d * (d * isum - dmin * msum), rounded as it rounds; the integer sums
// are exact (pair products <= 2 * 3 * 127, half sums <= 2032, times 15 in int16).
template <int R>
STRATA_TARGET_AVX2 void dot_q2_k_rows(const BlockQ2_K* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  const __m256i m2 = _mm256_set1_epi8(3);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  // Even scale bytes, then odd: the mins of each block's first halves, then its second halves.
  const __m128i evens_odds = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256 ad = act_d(ab);
    __m256i pairs[8], half[8];
    act_pairs(ab, pairs);
    for (int c = 0; c < 8; ++c) half[c] = _mm256_madd_epi16(pairs[c], _mm256_set1_epi16(1));
    // int16 lanes 0-7: block c's first-half activation sum, lanes 8-15: its second half's.
    const __m256i halves = _mm256_packs_epi32(
        _mm256_hadd_epi32(_mm256_hadd_epi32(half[0], half[1]), _mm256_hadd_epi32(half[2], half[3])),
        _mm256_hadd_epi32(_mm256_hadd_epi32(half[4], half[5]), _mm256_hadd_epi32(half[6], half[7])));
    __m256 t[R];
    for (int r = 0; r < R; ++r) {
      const BlockQ2_K& b = x[r][i];
      prefetch_block(&x[r][i + kPrefetchBlocks]);
      const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
      const __m256i sc = both_lanes(_mm_and_si128(sm, m4));
      __m256i part[8];
      for (int c = 0; c < 8; ++c) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(load32(b.qs + 32 * (c / 4)), 2 * (c % 4)), m2);
        part[c] = _mm256_madd_epi16(_mm256_maddubs_epi16(q, load32(ab[c].qs)), block_scales(sc, c));
      }
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(_mm_and_si128(_mm_srli_epi16(sm, 4), m4), evens_odds));
      const __m256i mh = _mm256_mullo_epi16(mins, halves);
      const __m256i msum = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(mh)),
                                            _mm256_cvtepi16_epi32(_mm256_extracti128_si256(mh, 1)));
      const __m256 dq = _mm256_mul_ps(_mm256_set1_ps(half_to_float(b.d)), as_float(totals(part)));
      const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(half_to_float(b.dmin)), as_float(msum));
      t[r] = _mm256_mul_ps(ad, _mm256_sub_ps(dq, dm));
    }
    add_terms<R>(acc, t);
  }
  store_rows<R>(acc, out);
}

// Q3_K's 16 scales less 32 (-32..31) as bytes: unpack_scale_q3_k for every k
// at once. Scale k has its low 4 bits in byte k & 7 (the high nibble for
// k >= 8) and its high 2 bits at bit 2(k >> 2) of byte 8 + (k & 3).
STRATA_TARGET_AVX2 inline __m128i scales_q3_k(const uint8_t* s) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  const uint32_t lo = 0x0F0F0F0Fu, hi = 0x03030303u;
  const __m128i v = _mm_setr_epi32(static_cast<int>((w0 & lo) | ((w2 & hi) << 4)),
                                   static_cast<int>((w1 & lo) | (((w2 >> 2) & hi) << 4)),
                                   static_cast<int>(((w0 >> 4) & lo) | (((w2 >> 4) & hi) << 4)),
                                   static_cast<int>(((w1 >> 4) & lo) | (((w2 >> 6) & hi) << 4)));
  return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

// R rows of Q3_K against one activation row: stored values u = low 2 bits |
// hmask bit << 2, quant q = u - 4; value 32c + l of sub-block c = 4h + k has its
// hmask bit at bit c of hmask[l]. Pair sums (u - 4) s = u s - 4 s stay within
// int16 (|.| <= 2 * 4 * 127). Lane c: (d * a.d) * isum, rounded as the portable
// code rounds it.
template <int R>
STRATA_TARGET_AVX2 void dot_q3_k_rows(const BlockQ3_K* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  const __m256i m2 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256 ad = act_d(ab);
    __m256i pairs[8];
    act_pairs(ab, pairs);
    __m256 t[R];
    for (int r = 0; r < R; ++r) {
      const BlockQ3_K& b = x[r][i];
      prefetch_block(&x[r][i + kPrefetchBlocks]);
      const __m256i hm = load32(b.hmask), sc = both_lanes(scales_q3_k(b.scales));
      __m256i part[8];
      for (int c = 0; c < 8; ++c) {
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(load32(b.qs + 32 * (c / 4)), 2 * (c % 4)), m2);
        const __m256i high = _mm256_and_si256(c < 2 ? _mm256_slli_epi16(hm, 2 - c) : _mm256_srli_epi16(hm, c - 2), m4);
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(_mm256_or_si256(low, high), load32(ab[c].qs)),
                                           _mm256_slli_epi16(pairs[c], 2));
        part[c] = _mm256_madd_epi16(p, block_scales(sc, c));
      }
      t[r] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half_to_float(b.d)), ad), as_float(totals(part)));
    }
    add_terms<R>(acc, t);
  }
  store_rows<R>(acc, out);
}

// ---- the one-scale types: Q8_0, the legacy types, Q1_0, Q2_0, IQ4_NL, MXFP4 ---------

// The 32 nibbles of 16 bytes (value j in the low nibble of qs[j], value j + 16
// in the high one) as bytes in element order.
STRATA_TARGET_AVX2 inline __m256i nibbles(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
}

// -1 in the bytes of v that have every bit of mask set, else 0.
STRATA_TARGET_AVX2 inline __m256i bits_set(__m256i v, __m256i mask) {
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, mask), mask);
}

// Byte j = -1 where bit j of the 32 bits at p (a little-endian u32) is set, else 0.
STRATA_TARGET_AVX2 inline __m256i bit_bytes(const uint8_t* p) {
  uint32_t h;
  std::memcpy(&h, p, 4);
  // Byte j takes byte j / 8 of h (the shuffle picks within each 128-bit lane, and both lanes hold h's 4 bytes).
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(h)),
      _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  return bits_set(spread, _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201)));
}

// The 5-bit types' fifth bits: byte j = 16 where bit j of qh (a little-endian u32) is set, else 0.
STRATA_TARGET_AVX2 inline __m256i fifth_bits(const uint8_t* qh) {
  return _mm256_and_si256(bit_bytes(qh), _mm256_set1_epi8(16));
}

// The 32 weights of a group stored in 16 bytes (value j in the low nibble of
// qs[j], value j + 16 in the high one) as int8 codebook values, in element order.
STRATA_TARGET_AVX2 inline __m256i codebook_values(const uint8_t* qs, __m256i codebook) {
  return _mm256_shuffle_epi8(codebook, nibbles(qs));
}

// A 16-entry int8 codebook in both lanes: kFp4Values for the FP4 types, else IQ4's.
template <typename Block>
STRATA_TARGET_AVX2 inline __m256i codebook() {
  constexpr bool kFp4 = std::is_same_v<Block, BlockMXFP4> || std::is_same_v<Block, BlockNVFP4>;
  return both_lanes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kFp4 ? kFp4Values : kIq4nlValues)));
}

// The integer dot of 32 signed weights w with an activation block: |w| as
// unsigned bytes times a with w's sign, 8 int32 partial sums.
STRATA_TARGET_AVX2 inline __m256i dot_signed(__m256i w, const BlockQ8A& ab) {
  const __m256i s = load32(ab.qs);
  return dot_bytes(_mm256_sign_epi8(w, w), _mm256_sign_epi8(s, w));
}

// Chunk c's 32 weights as int8 (legacy_quants' values; c is 0 but for Q1_0
// and Q2_0): Q8_0's stored quants, the legacy types' nibbles (and fifth bits;
// less 8 or 16 for the signed ones), the codebook types' values, Q1_0's signs
// as +-1 and Q2_0's 2-bit codes less 1.
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ8_0& b, int, __m256i) { return load32(b.qs); }
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ4_0& b, int, __m256i) {
  return _mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8));
}
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ4_1& b, int, __m256i) { return nibbles(b.qs); }
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ5_0& b, int, __m256i) {
  return _mm256_sub_epi8(_mm256_or_si256(nibbles(b.qs), fifth_bits(b.qh)), _mm256_set1_epi8(16));
}
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ5_1& b, int, __m256i) {
  return _mm256_or_si256(nibbles(b.qs), fifth_bits(b.qh));
}
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockIQ4_NL& b, int, __m256i codebook) {
  return codebook_values(b.qs, codebook);
}
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockMXFP4& b, int, __m256i codebook) {
  return codebook_values(b.qs, codebook);
}
// Q1_0: +1 where bit j of qs[4c..4c+4) is set, else -1.
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ1_0& b, int c, __m256i) {
  return _mm256_sub_epi8(_mm256_and_si256(bit_bytes(b.qs + 4 * c), _mm256_set1_epi8(2)), _mm256_set1_epi8(1));
}
// Q2_0: byte j takes byte j / 4 of qs[8c..8c+8) and its bits 2 (j % 4) (low l) and 2 (j % 4) + 1 (high h), each
// as -1 or 0: q - 1 = -1 - l - 2 h.
STRATA_TARGET_AVX2 inline __m256i block_values(const BlockQ2_0& b, int c, __m256i) {
  uint64_t w;
  std::memcpy(&w, b.qs + 8 * c, sizeof(w));
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi64x(static_cast<int64_t>(w)),
                                            _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,  //
                                                             4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7));
  const __m256i l = bits_set(bytes, _mm256_set1_epi32(0x40100401));
  const __m256i h = bits_set(bytes, _mm256_set1_epi32(static_cast<int>(0x80200802u)));
  return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_set1_epi8(-1), l), _mm256_add_epi8(h, h));
}

// A 32-element block's decoded scale: its F16 d, or MXFP4's exponent halved.
template <typename Block>
STRATA_TARGET_AVX2 inline float block_scale(const Block& b) {
  if constexpr (std::is_same_v<Block, BlockMXFP4>) {
    return kE8m0Half[b.e];
  } else {
    return half_to_float(b.d);
  }
}

// R rows of a type with one scale per block (Q8_0, Q4_0, Q5_0, IQ4_NL,
// MXFP4; Q1_0 and Q2_0 over their 4 and 2 chunks): acc += (d_w * d_a) *
// (float)isum chunk by chunk, row r in lane r; with a min m as well (Q4_1,
// Q5_1, whose values are unsigned): acc += (d_w * d_a) * (float)isum +
// (m_w * d_a) * (float)a.sum.
template <int R, typename Block>
STRATA_TARGET_AVX2 void dot_block32_rows(const Block* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  constexpr bool kMin = requires(const Block& b) { b.m; };
  constexpr int kC = kChunks<Block>;
  const __m256i values = codebook<Block>();
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    float d[4] = {}, m[4] = {};
    for (int r = 0; r < R; ++r) {
      d[r] = block_scale(x[r][i]);
      if constexpr (kMin) m[r] = half_to_float(x[r][i].m);
    }
    const __m128 dw = _mm_setr_ps(d[0], d[1], d[2], d[3]);
    for (int c = 0; c < kC; ++c) {
      const BlockQ8A& ab = a[kC * i + c];
      __m256i p[4] = {};
      for (int r = 0; r < R; ++r) {
        const __m256i w = block_values(x[r][i], c, values);
        p[r] = kMin ? dot_bytes(w, load32(ab.qs)) : dot_signed(w, ab);
      }
      // Lane r of the 128-bit sum: row r's isum (exact: the order of integer adds is free).
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
      const __m128i isum = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
      const __m128 ad = _mm_set1_ps(ab.d);
      __m128 t = _mm_mul_ps(_mm_mul_ps(dw, ad), _mm_cvtepi32_ps(isum));
      if constexpr (kMin) {
        const __m128 mw = _mm_setr_ps(m[0], m[1], m[2], m[3]);
        t = _mm_add_ps(t, _mm_mul_ps(_mm_mul_ps(mw, ad), _mm_set1_ps(static_cast<float>(ab.sum))));
      }
      acc = _mm_add_ps(acc, t);
    }
  }
  store_rows<R>(acc, out);
}

// IQ4_XS's eight group scales less 32 in 8 int32 lanes: lane g takes nibble
// g % 2 of scales_l[g / 2] (bits 4g of the 32-bit word) and bits 2g, 2g + 1 of scales_h.
STRATA_TARGET_AVX2 inline __m256i scales_iq4_xs(const BlockIQ4_XS& b) {
  uint32_t low;
  std::memcpy(&low, b.scales_l, 4);
  const __m256i l = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)),
                                                       _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                     _mm256_set1_epi32(15));
  const __m256i h = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
      _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(l, _mm256_slli_epi32(h, 4)), _mm256_set1_epi32(32));
}

// R rows of IQ4_XS, as the K-quants': per super-block the eight groups' isums
// in lanes, times their scales (exact in int32), then (d * a.d) * (float)
// each, added group by group.
template <int R>
STRATA_TARGET_AVX2 void dot_iq4_xs_rows(const BlockIQ4_XS* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  const __m256i values = codebook<BlockIQ4_XS>();
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256 ad = act_d(ab);
    __m256 t[R];
    for (int r = 0; r < R; ++r) {
      const BlockIQ4_XS& b = x[r][i];
      prefetch_block(&x[r][i + kPrefetchBlocks]);
      __m256i part[8];
      for (int g = 0; g < 8; ++g) part[g] = dot_signed(codebook_values(b.qs + 16 * g, values), ab[g]);
      const __m256i isum = _mm256_mullo_epi32(totals(part), scales_iq4_xs(b));
      t[r] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(half_to_float(b.d)), ad), as_float(isum));
    }
    add_terms<R>(acc, t);
  }
  store_rows<R>(acc, out);
}

// ---- NVFP4: 64 values, an FP8 scale per 16 ------------------------------

// The 32 values of sub-blocks 2c, 2c + 1 (the 16 bytes at qs + 16 c: each
// sub-block's low nibbles, then its high ones) as int8 in element order.
STRATA_TARGET_AVX2 inline __m256i nvfp4_values(const uint8_t* qs, __m256i values) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(q, m4), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
  return _mm256_shuffle_epi8(values, _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi)));
}

// R rows of NVFP4: per block the four sub-blocks' isums of each row (exact),
// then acc += (scale_s * a.d) * (float)isum_s for s = 0..3, row r in lane r.
template <int R>
STRATA_TARGET_AVX2 void dot_nvfp4_rows(const BlockNVFP4* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  const __m256i values = codebook<BlockNVFP4>();
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 2 * i;
    __m128 sums[4] = {};  // row r's isums of sub-blocks 0..3
    alignas(16) float sc[4][4] = {};  // sc[s][r]: row r's scale of sub-block s
    for (int r = 0; r < R; ++r) {
      const BlockNVFP4& b = x[r][i];
      const __m256i p0 = dot_signed(nvfp4_values(b.qs, values), ab[0]);
      const __m256i p1 = dot_signed(nvfp4_values(b.qs + 16, values), ab[1]);
      // Low lane: sub-blocks 0 and 2 (lanes 0-3 of p0, p1), high lane: 1 and 3.
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_setzero_si256());
      sums[r] = _mm_cvtepi32_ps(_mm_unpacklo_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
      for (int s = 0; s < 4; ++s) sc[s][r] = kUe4m3Half[b.d[s]];
    }
    _MM_TRANSPOSE4_PS(sums[0], sums[1], sums[2], sums[3]);  // now sums[s] holds sub-block s of every row
    for (int s = 0; s < 4; ++s) {
      const __m128 w = _mm_mul_ps(_mm_load_ps(sc[s]), _mm_set1_ps(ab[s / 2].d));
      acc = _mm_add_ps(acc, _mm_mul_ps(w, sums[s]));
    }
  }
  store_rows<R>(acc, out);
}

// ---- The grid types: grid points, signs, a scale per 32 or 16 -----------
//
// Straight from each type's bytes (quant_blocks.h's layouts; the plain loops
// read them through GridGroup): a 32-group's magnitudes as unsigned bytes in
// element order, its signs as bytes +1 / -1, its scales.

// Each sign byte's eight signs as bytes, +1 or -1 (0xff) where bit j negates
// element j; and the same by 7-bit parity code (kSignsIq2xs).
constexpr uint64_t sign_bytes(int bits) {
  uint64_t v = 0;
  for (int j = 0; j < 8; ++j) v |= static_cast<uint64_t>((bits >> j) & 1 ? 0xff : 0x01) << (8 * j);
  return v;
}
template <int N, typename F>
constexpr std::array<uint64_t, N> make_sign_bytes(F bits_of) {
  std::array<uint64_t, N> t{};
  for (int c = 0; c < N; ++c) t[c] = sign_bytes(bits_of(c));
  return t;
}
constexpr auto kSignBytes = make_sign_bytes<256>([](int c) { return c; });
constexpr auto kCodeSignBytes = make_sign_bytes<128>([](int c) { return static_cast<int>(kSignsIq2xs[c]); });

STRATA_TARGET_AVX2 inline __m256i signs_of(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) {
  return _mm256_setr_epi64x(static_cast<int64_t>(s0), static_cast<int64_t>(s1), static_cast<int64_t>(s2),
                            static_cast<int64_t>(s3));
}
STRATA_TARGET_AVX2 inline __m256i points8(const uint64_t* grid, int i0, int i1, int i2, int i3) {
  return _mm256_setr_epi64x(static_cast<int64_t>(grid[i0]), static_cast<int64_t>(grid[i1]),
                            static_cast<int64_t>(grid[i2]), static_cast<int64_t>(grid[i3]));
}
// Four-magnitude points k = 0..7 of a group, index(k) each, paired into 64-bit lanes.
template <typename Index>
STRATA_TARGET_AVX2 inline __m256i points4(const uint32_t* grid, Index index) {
  auto pair = [&](int k) { return static_cast<int64_t>(grid[index(k)] | uint64_t{grid[index(k + 1)]} << 32); };
  return _mm256_setr_epi64x(pair(0), pair(2), pair(4), pair(6));
}

// A parity-coded group's word (IQ2_XXS, IQ3_XXS): the codes' signs.
STRATA_TARGET_AVX2 inline __m256i code_signs(uint32_t w) {
  return signs_of(kCodeSignBytes[w & 127], kCodeSignBytes[(w >> 7) & 127], kCodeSignBytes[(w >> 14) & 127],
                  kCodeSignBytes[(w >> 21) & 127]);
}
template <typename Block>
uint32_t xxs_word(const Block& b, int g) {
  uint32_t w;
  std::memcpy(&w, reinterpret_cast<const uint8_t*>(b.qs) + grid_word_offset(&b, g), 4);
  return w;
}

// One group's operands: mag (magnitudes), sign (+1 / -1), and its 2s + 1: odd
// (one per 32) or odd_lo, odd_hi (per 16).
struct GroupOperands {
  __m256i mag, sign;
  int odd_lo, odd_hi;
};
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ2_XXS& b, int g) {
  const auto* idx = reinterpret_cast<const uint8_t*>(b.qs) + 8 * g;
  const uint32_t w = xxs_word(b, g);
  const int odd = static_cast<int>(2 * (w >> 28) + 1);
  return {points8(kIq2xxsGrid, idx[0], idx[1], idx[2], idx[3]), code_signs(w), odd, odd};
}
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ3_XXS& b, int g) {
  const uint8_t* idx = b.qs + 8 * g;
  const uint32_t w = xxs_word(b, g);
  const int odd = static_cast<int>(2 * (w >> 28) + 1);
  return {points4(kIq3xxsGrid, [&](int k) { return idx[k]; }), code_signs(w), odd, odd};
}
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ2_XS& b, int g) {
  const uint16_t* q = b.qs + 4 * g;
  return {points8(kIq2xsGrid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511),
          signs_of(kCodeSignBytes[q[0] >> 9], kCodeSignBytes[q[1] >> 9], kCodeSignBytes[q[2] >> 9],
                   kCodeSignBytes[q[3] >> 9]),
          2 * (b.scales[g] & 15) + 1, 2 * (b.scales[g] >> 4) + 1};
}
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ2_S& b, int g) {
  const uint8_t* q = b.qs + 4 * g;
  const uint8_t* s = b.qs + 32 + 4 * g;
  const int h = b.qh[g];
  return {points8(kIq2sGrid, q[0] | (h & 3) << 8, q[1] | (h & 12) << 6, q[2] | (h & 48) << 4, q[3] | (h & 192) << 2),
          signs_of(kSignBytes[s[0]], kSignBytes[s[1]], kSignBytes[s[2]], kSignBytes[s[3]]),
          2 * (b.scales[g] & 15) + 1, 2 * (b.scales[g] >> 4) + 1};
}
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ3_S& b, int g) {
  const uint8_t* q = b.qs + 8 * g;
  const uint8_t* s = b.signs + 4 * g;
  const int h = b.qh[g];
  const int odd = 2 * ((b.scales[g / 2] >> (4 * (g % 2))) & 15) + 1;
  return {points4(kIq3sGrid, [&](int k) { return q[k] | ((h >> k) & 1) << 8; }),
          signs_of(kSignBytes[s[0]], kSignBytes[s[1]], kSignBytes[s[2]], kSignBytes[s[3]]), odd, odd};
}
// IQ1_S, IQ1_M: the values w = 8 g + 8 delta of a group's four points (odd,
// |w| <= 9; kIq1Delta[neg]: 8-group l's 8 delta, -1 where bit l of neg is
// set, else +1), their magnitudes and signs.
constexpr auto kIq1Delta = [] {
  std::array<std::array<uint64_t, 4>, 16> t{};
  for (int neg = 0; neg < 16; ++neg) {
    for (int l = 0; l < 4; ++l) t[neg][l] = ((neg >> l) & 1) != 0 ? ~uint64_t{0} : 0x0101010101010101ull;
  }
  return t;
}();
STRATA_TARGET_AVX2 inline GroupOperands iq1_operands(const Iq1Group& g) {
  const __m256i grid = points8(kIq1sGrid, g.idx[0], g.idx[1], g.idx[2], g.idx[3]);
  const __m256i delta = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kIq1Delta[g.neg].data()));
  const __m256i w = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), grid), delta);
  return {_mm256_abs_epi8(w), w, 2 * g.scale[0] + 1, 2 * g.scale[1] + 1};
}
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ1_S& b, int g) {
  return iq1_operands(read_iq1_group(b, g));
}
STRATA_TARGET_AVX2 inline GroupOperands grid_operands(const BlockIQ1_M& b, int g) {
  return iq1_operands(read_iq1_group(b, g));
}

// R rows of a grid type, as IQ4_XS's: per super-block the eight groups'
// isums in lanes (magnitudes times the signed activations; per16: each int16
// pair sum times the 2s + 1 of its half by pmaddwd, else all eight isums
// times their 2s + 1 at once; exact in int32), then ((d / factor) * a.d) *
// (float) each, added group by group.
template <int R, typename Block>
STRATA_TARGET_AVX2 void dot_grid_rows(const Block* const* x, const BlockQ8A* a, int64_t nb, float* out) {
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256 ad = act_d(ab);
    __m256 t[R];
    for (int r = 0; r < R; ++r) {
      const Block& b = x[r][i];
      prefetch_block(&x[r][i + kPrefetchBlocks]);
      __m256i part[8];
      alignas(32) int odd[8];
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        const GroupOperands op = grid_operands(b, g);
        const __m256i pairs = _mm256_maddubs_epi16(op.mag, _mm256_sign_epi8(load32(ab[g].qs), op.sign));
        if constexpr (kGridShape<Block>.per16) {
          part[g] = _mm256_madd_epi16(pairs, _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(op.odd_lo)),
                                                               _mm_set1_epi16(static_cast<int16_t>(op.odd_hi))));
        } else {
          part[g] = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
          odd[g] = op.odd_lo;
        }
      }
      __m256i isum = totals(part);
      if constexpr (!kGridShape<Block>.per16) {
        isum = _mm256_mullo_epi32(isum, _mm256_load_si256(reinterpret_cast<const __m256i*>(odd)));
      }
      const float dw = half_to_float(super_scale_bits(b)) * (1.0f / static_cast<float>(kGridShape<Block>.factor));
      t[r] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(dw), ad), as_float(isum));
    }
    add_terms<R>(acc, t);
  }
  store_rows<R>(acc, out);
}

}  // namespace

STRATA_TARGET_AVX2 void f16_to_f32_avx2(const uint16_t* h, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  }
  for (; i < n; ++i) out[i] = half_to_float(h[i]);
}

// The one- and four-row entry points of a type over its rows kernel (R = 1 and 4).
#define STRATA_AVX2_DOTS(type, Block, rows)                                                                      \
  STRATA_TARGET_AVX2 float dot_##type##_avx2(const Block* x, const BlockQ8A* a, int64_t nb) {                   \
    float out;                                                                                                  \
    rows<1>(&x, a, nb, &out);                                                                                   \
    return out;                                                                                                 \
  }                                                                                                             \
  STRATA_TARGET_AVX2 void dot4_##type##_avx2(const Block* const x[4], const BlockQ8A* a, int64_t nb, float out[4]) { \
    rows<4>(x, a, nb, out);                                                                                     \
  }
STRATA_AVX2_DOT_TYPES(STRATA_AVX2_DOTS)
#undef STRATA_AVX2_DOTS

#else

bool cpu_has_avx2() { return false; }

// Never called where cpu_has_avx2() is false.
void f16_to_f32_avx2(const uint16_t*, float*, int64_t) {}
#define STRATA_AVX2_STUBS(type, Block, rows)                                      \
  float dot_##type##_avx2(const Block*, const BlockQ8A*, int64_t) { return 0.0f; } \
  void dot4_##type##_avx2(const Block* const[4], const BlockQ8A*, int64_t, float[4]) {}
STRATA_AVX2_DOT_TYPES(STRATA_AVX2_STUBS)
#undef STRATA_AVX2_STUBS

#endif

}  // namespace strata::core
