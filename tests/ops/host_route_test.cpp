// f32_to_f16 / f16_to_f32 against core/quant/fp16.h: wide and scalar paths, device memory and mapped host memory.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "cpu/peer_ops.h"
#include "cuda/runtime/host_route.cuh"
#include "ops/ops_util.h"

using namespace strata;
using test::Mem;
using strata::test::test_stream;

namespace {

// One conversion: n values from src + src_off to dst + dst_off, the F16 side
// in device or mapped host memory.
struct RouteCase {
  int64_t n, src_off, dst_off;
  Mem route;
  std::string name() const {
    return "n=" + std::to_string(n) + " src+" + std::to_string(src_off) + " dst+" + std::to_string(dst_off) +
           " route in " + test::mem_name(route);
  }
};

// Counts of whole groups of 8 (the wide path only), with a tail, of fewer
// than 8; each pointer on the 16-byte grid or one element off it (then every
// value goes the scalar path).
std::vector<RouteCase> route_cases() {
  std::vector<RouteCase> cases;
  for (int64_t n : {8 * 1000, 8 * 1000 + 5, 7})
    for (int64_t src_off : {0, 1})
      for (int64_t dst_off : {0, 1})
        for (Mem route : {Mem::Device, Mem::Mapped}) cases.push_back({n, src_off, dst_off, route});
  return cases;
}

// Values past the end that a kernel must leave as they are.
constexpr int64_t kGuard = 8;

// Floats from below the half subnormals to past the half range and inf, led
// by the rounding edges (so they go through the wide path when it is taken).
std::vector<float> f32_inputs(test::Rng& rng, size_t n) {
  const float edges[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.996f, 65520.0f, -65520.0f, 1e6f, 0x1p-14f, 0x1p-24f,
                         0x1p-25f, 3 * 0x1p-25f, 0x1p-26f, 1023 * 0x1p-24f, INFINITY, -INFINITY, 1.0f + 0x1p-11f,
                         1.0f + 3 * 0x1p-11f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i < std::size(edges) ? edges[i] : std::ldexp(rng.nonzero(), rng.int_in(-27, 17));
  return v;
}

// Every half bit pattern but NaN (whose payload the device chooses), led by the edges.
std::vector<uint16_t> f16_inputs(test::Rng& rng, size_t n) {
  const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x8001};
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < std::size(edges)) {
      v[i] = edges[i];
      continue;
    }
    do {
      v[i] = static_cast<uint16_t>(rng.int_in(0, 0xffff));
    } while ((v[i] & 0x7c00) == 0x7c00 && (v[i] & 0x3ff) != 0);
  }
  return v;
}

}  // namespace

// Tolerance: bit-exact (core::f32_to_fp16: round to nearest even, overflow to inf).
TEST_CASE("f32_to_f16 rounds like core::f32_to_fp16, into device or mapped host memory") {
  for (const RouteCase& c : route_cases()) {
    DYNAMIC_SECTION(c.name()) {
      const auto [n, src_off, dst_off, route] = c;
      test::Rng rng = test::rng_for(1100 + n);
      const std::vector<float> in = f32_inputs(rng, src_off + n);
      const size_t total = dst_off + n + kGuard;
      std::vector<uint16_t> want(total, 0xffff);
      for (int64_t i = 0; i < n; ++i) want[dst_off + i] = core::f32_to_fp16(in[src_off + i]);

      cuda::DeviceBuffer src = test::to_device(in);
      test::AnyBuffer dst(total * sizeof(uint16_t), route);
      cuda::f32_to_f16(src.as<float>() + src_off, dst.dev<uint16_t>() + dst_off, n, test_stream().get());
      const std::vector<uint16_t> got = dst.download<uint16_t>(total);
      CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), total * sizeof(uint16_t)));
    }
  }
}

// Tolerance: bit-exact (every half is a float).
TEST_CASE("f16_to_f32 widens like core::fp16_to_f32, from device or mapped host memory") {
  for (const RouteCase& c : route_cases()) {
    DYNAMIC_SECTION(c.name()) {
      const auto [n, src_off, dst_off, route] = c;
      test::Rng rng = test::rng_for(1200 + n);
      const std::vector<uint16_t> in = f16_inputs(rng, src_off + n);
      const size_t total = dst_off + n + kGuard;
      std::vector<float> want(total);
      std::memset(want.data(), 0xff, total * sizeof(float));
      for (int64_t i = 0; i < n; ++i) want[dst_off + i] = core::fp16_to_f32(in[src_off + i]);

      test::AnyBuffer src(in.size() * sizeof(uint16_t), route);
      src.upload(in);
      cuda::DeviceBuffer dst = test::poisoned(total * sizeof(float));
      cuda::f16_to_f32(src.dev<uint16_t>() + src_off, dst.as<float>() + dst_off, n, test_stream().get());
      const std::vector<float> got = test::to_host<float>(dst, total);
      CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), total * sizeof(float)));
    }
  }
}

TEST_CASE("f32_to_f16 and back is cpu::round_to_f16; n == 0 does nothing, n < 0 and the legacy stream throw") {
  test::Rng rng = test::rng_for(1300);
  const int64_t n = 4099;
  const std::vector<float> in = f32_inputs(rng, n);
  std::vector<float> want(n);
  core::cpu::round_to_f16(in.data(), want.data(), n);
  cuda::DeviceBuffer src = test::to_device(in);
  test::AnyBuffer route(n * sizeof(uint16_t), Mem::Mapped);
  cuda::DeviceBuffer back = test::poisoned(n * sizeof(float));
  cuda::f32_to_f16(src.as<float>(), route.dev<uint16_t>(), n, test_stream().get());
  cuda::f16_to_f32(route.dev<uint16_t>(), back.as<float>(), n, test_stream().get());
  const std::vector<float> got = test::to_host<float>(back, n);
  CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), n * sizeof(float)));

  cuda::f32_to_f16(src.as<float>(), route.dev<uint16_t>(), 0, test_stream().get());
  cuda::f16_to_f32(route.dev<uint16_t>(), back.as<float>(), 0, test_stream().get());
  test_stream().synchronize();
  CHECK(test::status_of([&] { cuda::f32_to_f16(src.as<float>(), route.dev<uint16_t>(), -1, test_stream().get()); }) ==
        STRATA_ERR_INVALID_ARGUMENT);
  CHECK(test::status_of([&] { cuda::f16_to_f32(route.dev<uint16_t>(), back.as<float>(), 8, nullptr); }) ==
        STRATA_ERR_INVALID_ARGUMENT);
}
