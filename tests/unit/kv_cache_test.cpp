// KvCache: F16 exactness, INT8 round-trip bound, layout independence, positions, clear, sizes, errors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/runtime/kv_cache.h"
#include "test_random.h"

// AddressSanitizer aborts on an allocation it cannot serve instead of throwing
// (GCC and clang announce it differently).
#if defined(__SANITIZE_ADDRESS__)
#define STRATA_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_TEST_ASAN 1
#endif
#endif
#ifndef STRATA_TEST_ASAN
#define STRATA_TEST_ASAN 0
#endif

using namespace strata::core;
using strata::test::poison;
using strata::test::Rng;

namespace {

// A random finite half value, as float (every half is exactly a float).
float random_half(Rng& rng) {
  for (;;) {
    const uint16_t h = static_cast<uint16_t>(rng.int_in(0, 0xffff));
    if (((h >> 10) & 0x1f) != 0x1f && (h & 0x7fff) != 0) return fp16_to_f32(h);  // finite, nonzero
  }
}

bool bits_equal(const float* a, const float* b, int n) { return std::memcmp(a, b, sizeof(float) * n) == 0; }

}  // namespace

TEST_CASE("kv cache F16: representable values come back bit-exact, others within half an ulp") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int n_head_kv = 3, dk = 64, dv = 40;
  KvCache cache(KvType::F16, 2, 16, n_head_kv, dk, dv);
  std::vector<float> k(n_head_kv * dk), v(n_head_kv * dv);
  for (float& x : k) x = random_half(rng);  // covers subnormals and the full exponent range
  for (float& x : v) x = random_half(rng);
  cache.write(1, 5, k.data(), v.data());
  std::vector<float> out(std::max(dk, dv));
  for (int h = 0; h < n_head_kv; ++h) {
    poison(out);
    cache.read_k(1, 5, h, out.data());
    CHECK(bits_equal(out.data(), k.data() + h * dk, dk));
    poison(out);
    cache.read_v(1, 5, h, out.data());
    CHECK(bits_equal(out.data(), v.data() + h * dv, dv));
  }
  // Values in the normal half range round to nearest: relative error <= 2^-11.
  const auto k2 = rng.vec(n_head_kv * dk, 100.0f), v2 = rng.vec(n_head_kv * dv, 0.01f);
  cache.write(0, 0, k2.data(), v2.data());
  for (int h = 0; h < n_head_kv; ++h) {
    cache.read_k(0, 0, h, out.data());
    for (int i = 0; i < dk; ++i) CHECK(std::fabs(out[i] - k2[h * dk + i]) <= std::fabs(k2[h * dk + i]) * 0x1p-11);
    cache.read_v(0, 0, h, out.data());
    for (int i = 0; i < dv; ++i) CHECK(std::fabs(out[i] - v2[h * dv + i]) <= std::fabs(v2[h * dv + i]) * 0x1p-11);
  }
}

TEST_CASE("kv cache INT8: every element within scale/2 of what was written") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int n_head_kv = 4, dk = 128, dv = 96;
  KvCache cache(KvType::Int8, 1, 8, n_head_kv, dk, dv);
  std::vector<float> out(dk);
  for (int pos = 0; pos < 8; ++pos) {
    // Rows with very different magnitudes, so a shared scale would fail.
    std::vector<float> k, v;
    for (int h = 0; h < n_head_kv; ++h) {
      const float mag = std::ldexp(1.0f, rng.int_in(-8, 8));
      const auto kh = rng.vec(dk, mag), vh = rng.vec(dv, mag * 3);
      k.insert(k.end(), kh.begin(), kh.end());
      v.insert(v.end(), vh.begin(), vh.end());
    }
    cache.write(0, pos, k.data(), v.data());
    for (int h = 0; h < n_head_kv; ++h) {
      for (bool is_k : {true, false}) {
        const int d = is_k ? dk : dv;
        const float* src = (is_k ? k.data() : v.data()) + h * d;
        poison(out);
        (is_k ? cache.read_k(0, pos, h, out.data()) : cache.read_v(0, pos, h, out.data()));
        float amax = 0;
        for (int i = 0; i < d; ++i) amax = std::max(amax, std::fabs(src[i]));
        const double scale = amax / 127.0;
        // scale / 2 from rounding to the nearest step; the F32 divide and
        // product add a relative 2^-23 of |x| <= amax = 127 scale.
        const double bound = scale / 2 + 127 * scale * 0x1p-23;
        INFO("pos=" << pos << " head=" << h << " k=" << is_k << " scale=" << scale);
        int worst = 0;
        for (int i = 0; i < d; ++i) {
          const double err = std::fabs(double(out[i]) - src[i]);
          if (!(err <= bound)) {
            INFO("element " << i << " wrote " << src[i] << " read " << out[i]);
            CHECK(err <= bound);
          }
          // Every read value is an integer multiple (|q| <= 127) of one scale.
          const double q = out[i] / (scale);
          worst = std::max(worst, int(std::fabs(std::round(q))));
        }
        CHECK(worst == 127);  // the largest element maps to +-127
      }
    }
  }
  // An all-zero row: scale 0, reads back as zeros (not NaN from 0/0).
  const std::vector<float> zk(n_head_kv * dk, 0.0f), zv(n_head_kv * dv, 0.0f);
  cache.write(0, 3, zk.data(), zv.data());
  poison(out);
  cache.read_k(0, 3, 2, out.data());
  CHECK(std::all_of(out.begin(), out.end(), [](float x) { return x == 0.0f; }));
}

TEST_CASE("kv cache: layers, positions and heads do not alias") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (KvType type : {KvType::F16, KvType::Int8}) {
    const int n_layer = 3, n_ctx = 6, n_head_kv = 2, dk = 32, dv = 16;
    KvCache cache(type, n_layer, n_ctx, n_head_kv, dk, dv);
    // Expected reads, taken from a single-position cache that sees only that row.
    std::vector<std::vector<float>> want_k(n_layer * n_ctx * n_head_kv), want_v(want_k.size());
    for (int l = 0; l < n_layer; ++l) {
      for (int p = 0; p < n_ctx; ++p) {
        const auto k = rng.vec(n_head_kv * dk), v = rng.vec(n_head_kv * dv);
        cache.write(l, p, k.data(), v.data());
        KvCache solo(type, 1, 1, n_head_kv, dk, dv);
        solo.write(0, 0, k.data(), v.data());
        for (int h = 0; h < n_head_kv; ++h) {
          auto& wk = want_k[(l * n_ctx + p) * n_head_kv + h];
          auto& wv = want_v[(l * n_ctx + p) * n_head_kv + h];
          wk.resize(dk);
          wv.resize(dv);
          solo.read_k(0, 0, h, wk.data());
          solo.read_v(0, 0, h, wv.data());
        }
      }
    }
    std::vector<float> out(dk);
    for (int l = 0; l < n_layer; ++l)
      for (int p = 0; p < n_ctx; ++p)
        for (int h = 0; h < n_head_kv; ++h) {
          INFO("type=" << int(type) << " layer=" << l << " pos=" << p << " head=" << h);
          cache.read_k(l, p, h, out.data());
          CHECK(bits_equal(out.data(), want_k[(l * n_ctx + p) * n_head_kv + h].data(), dk));
          cache.read_v(l, p, h, out.data());
          CHECK(bits_equal(out.data(), want_v[(l * n_ctx + p) * n_head_kv + h].data(), dv));
        }
    // The views hand out the same rows.
    const KvView kv = cache.k_view(2);
    CHECK(kv.n_ctx == n_ctx);
    CHECK(kv.head_dim == dk);
    CHECK(cache.v_view(2).head_dim == dv);
    kv.read(4, 1, out.data());
    CHECK(bits_equal(out.data(), want_k[(2 * n_ctx + 4) * n_head_kv + 1].data(), dk));
  }
}

TEST_CASE("kv cache: context bounds, unwritten positions, clear") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  KvCache cache(KvType::F16, 2, 4, 1, 8, 8);
  const auto k = rng.vec(8), v = rng.vec(8);
  std::vector<float> out(8);
  auto status_of = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.status();
    }
    return STRATA_OK;
  };
  CHECK(status_of([&] { cache.write(0, 4, k.data(), v.data()); }) == STRATA_ERR_CONTEXT_FULL);
  CHECK(status_of([&] { cache.write(0, -1, k.data(), v.data()); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { cache.write(2, 0, k.data(), v.data()); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { cache.read_k(0, 0, 0, out.data()); }) == STRATA_ERR_STATE);  // never written
  cache.write(0, 3, k.data(), v.data());
  CHECK(status_of([&] { cache.read_k(0, 3, 0, out.data()); }) == STRATA_OK);
  CHECK(status_of([&] { cache.read_k(1, 3, 0, out.data()); }) == STRATA_ERR_STATE);  // other layer
  CHECK(status_of([&] { cache.read_k(0, 3, 1, out.data()); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { cache.read_v(0, 4, 0, out.data()); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(cache.k_view(0).is_written(3));
  CHECK_FALSE(cache.k_view(0).is_written(2));
  cache.clear();
  CHECK(status_of([&] { cache.read_k(0, 3, 0, out.data()); }) == STRATA_ERR_STATE);
  cache.write(0, 3, v.data(), k.data());  // rewritten after clear: the new row
  cache.read_k(0, 3, 0, out.data());
  for (int i = 0; i < 8; ++i) CHECK(out[i] == fp16_to_f32(f32_to_fp16(v[i])));
}

TEST_CASE("kv cache: bytes(), bad dimensions, and allocations that cannot succeed") {
  KvCache f16(KvType::F16, 4, 100, 8, 128, 64);
  const size_t rows = size_t(4) * 100 * 8;
  CHECK(f16.bytes() == rows * (128 + 64) * 2 + 4 * 100);
  KvCache i8(KvType::Int8, 4, 100, 8, 128, 64);
  CHECK(i8.bytes() == rows * (128 + 64) + rows * 2 * sizeof(float) + 4 * 100);
  CHECK(i8.type() == KvType::Int8);

  CHECK_THROWS_AS(KvCache(KvType::F16, 0, 100, 8, 128, 128), Error);
  CHECK_THROWS_AS(KvCache(KvType::F16, 1, 100, 8, 128, 0), Error);

  auto oom_message = [](int n_layer, int n_ctx, int n_head_kv, int dk) -> std::string {
    try {
      KvCache c(KvType::F16, n_layer, n_ctx, n_head_kv, dk, dk);
    } catch (const Error& e) {
      if (e.status() == STRATA_ERR_OUT_OF_MEMORY) return e.what();
    }
    return "no out-of-memory error";
  };
  // 2^14 layers x 2^20 positions x 64 heads x 256 dims x 2 bytes = 2^49 bytes.
  const std::string big = oom_message(1 << 14, 1 << 20, 64, 128);
  CHECK(big.find("562967133290496 bytes") != std::string::npos);  // 2^49 + the 2^34 written flags
  // Past 2^64 bytes: the size itself does not fit, and the message says so.
  const std::string huge = oom_message(1 << 30, 1 << 30, 1 << 10, 1 << 12);
  CHECK(huge.find("2^64") != std::string::npos);
#if !STRATA_TEST_ASAN
  // 2^47 bytes: addressable, but no host has it, so the allocator refuses.
  const std::string refused = oom_message(1 << 12, 1 << 20, 64, 128);
  CHECK(refused.find("bytes") != std::string::npos);
  CHECK(refused.find("host memory") != std::string::npos);
#endif
}
