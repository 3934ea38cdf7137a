// AVX2 dot products of the quantized rows with Q8A activations; see quant_avx2.h.
//
// Each sub-block's integer dot is exact whatever the order of its partial
// sums: pmaddubsw multiplies unsigned weight quants (Q4_K/Q5_K 0..31, Q6_K
// stored 0..63, Q8_0 |q| <= 128) by signed activation quants (|a| <= 127)
// and adds adjacent pairs into int16 without saturating (at most 2 * 128 *
// 127 = 32512), pmaddwd widens to int32. The F32 fold then runs exactly as
// the portable code writes it.
#include "core/quant_avx2.h"

#include <cstdlib>

#include "core/fp16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define STRATA_AVX2 1
#define STRATA_TARGET_AVX2 __attribute__((target("avx2")))
#endif

namespace strata::core {

#ifdef STRATA_AVX2

bool cpu_has_avx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && std::getenv("STRATA_NO_AVX2") == nullptr;
  }();
  return have;
}

namespace {

STRATA_TARGET_AVX2 inline int32_t hsum(__m128i v) {
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
  return _mm_cvtsi128_si32(v);
}

STRATA_TARGET_AVX2 inline int32_t hsum(__m256i v) {
  return hsum(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

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

// Eight aligned int32 as floats (exact below 2^24).
STRATA_TARGET_AVX2 inline __m256 as_float(const int32_t* v) {
  return _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(v)));
}

// acc + t[0] + t[1] + ... + t[7], added one at a time in that order.
STRATA_TARGET_AVX2 inline float add_in_order(float acc, __m256 t) {
  alignas(32) float v[8];
  _mm256_store_ps(v, t);
  for (float x : v) acc += x;
  return acc;
}

// Q4_K and Q5_K after the integer dots (lane j: sub-block j): the portable
// dot_minmax_superblock's fold. Its terms a.d * (ws * isum - wm * a.sum), ws =
// d * sc and wm = dmin * m, are each rounded lane by lane exactly as the scalar
// code rounds them (the conversions are exact: |isum| < 2^24); only their sum
// into acc is ordered, and it stays sequential.
STRATA_TARGET_AVX2 inline float fold_minmax(uint16_t d16, uint16_t dmin16, const uint8_t* scales, __m256i isum,
                                            const BlockQ8A* a, float acc) {
  alignas(32) int32_t sc[8], m[8], sum[8];
  alignas(32) float ad[8];
  for (int j = 0; j < 8; ++j) {
    uint8_t s, mm;
    unpack_scale_min_k4(scales, j, s, mm);
    sc[j] = s;
    m[j] = mm;
    sum[j] = a[j].sum;
    ad[j] = a[j].d;
  }
  const __m256 ws = _mm256_mul_ps(_mm256_set1_ps(fp16_to_f32(d16)), as_float(sc));
  const __m256 wm = _mm256_mul_ps(_mm256_set1_ps(fp16_to_f32(dmin16)), as_float(m));
  const __m256 dot = _mm256_sub_ps(_mm256_mul_ps(ws, _mm256_cvtepi32_ps(isum)), _mm256_mul_ps(wm, as_float(sum)));
  const __m256 t = _mm256_mul_ps(_mm256_load_ps(ad), dot);
  return add_in_order(acc, t);
}

}  // namespace

STRATA_TARGET_AVX2 float dot_q8_0_avx2(const BlockQ8_0* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i q = load32(x[i].qs), s = load32(a[i].qs);
    // |q| as unsigned bytes times a with q's sign: q * a in each product.
    const int32_t isum = hsum(dot_bytes(_mm256_sign_epi8(q, q), _mm256_sign_epi8(s, q)));
    acc += (fp16_to_f32(x[i].d) * a[i].d) * static_cast<float>(isum);
  }
  return acc;
}

STRATA_TARGET_AVX2 float dot_q4_k_avx2(const BlockQ4_K* x, const BlockQ8A* a, int64_t nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    __m256i part[8];
    for (int g = 0; g < 4; ++g) {  // sub-blocks 2g (low nibbles) and 2g + 1 (high nibbles)
      const __m256i q = load32(x[i].qs + 32 * g);
      part[2 * g] = dot_bytes(_mm256_and_si256(q, m4), load32(ab[2 * g].qs));
      part[2 * g + 1] = dot_bytes(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), load32(ab[2 * g + 1].qs));
    }
    acc = fold_minmax(x[i].d, x[i].dmin, x[i].scales, totals(part), ab, acc);
  }
  return acc;
}

STRATA_TARGET_AVX2 float dot_q5_k_avx2(const BlockQ5_K* x, const BlockQ8A* a, int64_t nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ8A* ab = a + 8 * i;
    const __m256i qh = load32(x[i].qh);  // value 64g + l: bit 2g of qh[l]; 64g + 32 + l: bit 2g + 1
    __m256i part[8];
    for (int g = 0; g < 4; ++g) {
      const __m256i q = load32(x[i].qs + 32 * g);
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h0);
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h1);
      part[2 * g] = dot_bytes(lo, load32(ab[2 * g].qs));
      part[2 * g + 1] = dot_bytes(hi, load32(ab[2 * g + 1].qs));
    }
    acc = fold_minmax(x[i].d, x[i].dmin, x[i].scales, totals(part), ab, acc);
  }
  return acc;
}

STRATA_TARGET_AVX2 float dot_q6_k_avx2(const BlockQ6_K* x, const BlockQ8A* a, int64_t nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3), ones = _mm256_set1_epi8(1);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const BlockQ6_K& b = x[i];
    const BlockQ8A* ab = a + 8 * i;
    __m256i part[8];
    alignas(32) float ad[8];
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
      ad[c] = ab[c].d;
    }
    // Lane c: (d * a.d) * isum, rounded as the portable code rounds it.
    const __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(fp16_to_f32(b.d)), _mm256_load_ps(ad)),
                                   _mm256_cvtepi32_ps(totals(part)));
    acc = add_in_order(acc, t);
  }
  return acc;
}

#else

bool cpu_has_avx2() { return false; }

// Never called where cpu_has_avx2() is false.
float dot_q8_0_avx2(const BlockQ8_0*, const BlockQ8A*, int64_t) { return 0.0f; }
float dot_q4_k_avx2(const BlockQ4_K*, const BlockQ8A*, int64_t) { return 0.0f; }
float dot_q5_k_avx2(const BlockQ5_K*, const BlockQ8A*, int64_t) { return 0.0f; }
float dot_q6_k_avx2(const BlockQ6_K*, const BlockQ8A*, int64_t) { return 0.0f; }

#endif

}  // namespace strata::core
