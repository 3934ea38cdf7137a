// The decoded dense path: decode_f16_weights against the GEMMs' F16 weights (gemm_ref.h), DenseGemm against the F16 reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "cuda/gemm/dense_gemm.h"
#include "cuda/gemm/f16_weights.cuh"
#include "cuda/gemm/type_paths.h"
#include "ops/gemm_ref.h"
#include "ops/ops_util.h"

using namespace strata;
using core::GgmlType;
using strata::test::test_stream;

namespace {

// Every type of the F16-decode path (cuda/gemm/type_paths.h).
const std::vector<GgmlType> kQuantTypes = cuda::path_types<cuda::KernelPath::F16Decode>();

// rows x n quantized values whose 32-value blocks differ in scale (2^-3 .. 2^2)
// and some in offset, so every sub-block scale and min matters.
std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t n, test::Rng& rng) {
  std::vector<float> v(static_cast<size_t>(rows * n));
  for (size_t b = 0; b < v.size() / 32; ++b) {
    const float scale = std::ldexp(1.0f, rng.int_in(-3, 2)), shift = rng.int_in(0, 3) == 0 ? rng.nonzero(scale) : 0.0f;
    for (size_t l = 0; l < 32; ++l) v[32 * b + l] = rng.nonzero(scale) + shift;
  }
  const size_t rb = core::row_size(type, n);
  std::vector<uint8_t> q(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) core::quantize_row(type, &v[static_cast<size_t>(r * n)], &q[rb * r], n);
  return q;
}

std::vector<uint16_t> f16_rows(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = core::f32_to_fp16(x[i]);
  return h;
}

}  // namespace

// Tolerance: bit-exact. The kernel makes each weight with the F16 operations
// of the tensor-core GEMMs' decode (f16_decode.cuh), which gemm_weights
// rebuilds on the CPU.
TEST_CASE("decode_f16_weights gives the GEMMs' F16 weights bit for bit", "[gpu][dense_gemm]") {
  for (GgmlType type : kQuantTypes) {
    DYNAMIC_SECTION(core::type_traits(type).name) {
      test::Rng rng = test::rng_for(3100 + static_cast<uint64_t>(type));
      const int64_t n_in = 768, n_out = 37;
      const std::vector<uint8_t> w = random_matrix(type, n_out, n_in, rng);
      std::vector<uint16_t> want(static_cast<size_t>(n_in * n_out));
      const size_t rb = core::row_size(type, n_in);
      for (int64_t r = 0; r < n_out; ++r) {
        const std::vector<float> row = test::gemm_weights(type, &w[rb * r], n_in);
        for (int64_t i = 0; i < n_in; ++i) want[r * n_in + i] = core::f32_to_fp16(row[i]);
      }
      cuda::DeviceBuffer dw = test::to_device(w), out = test::poisoned(want.size() * 2);
      cuda::decode_f16_weights(type, dw.data(), n_in, n_out, out.as<uint16_t>(), test_stream().get());
      const std::vector<uint16_t> got = test::to_host<uint16_t>(out, want.size());
      CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), want.size() * 2));
    }
  }
  cuda::DeviceBuffer buf = test::poisoned(4096);
  CHECK(test::status_of([&] {
          cuda::decode_f16_weights(GgmlType::F16, buf.data(), 256, 1, buf.as<uint16_t>(), test_stream().get());
        }) == STRATA_ERR_UNSUPPORTED);  // a type outside the path's list (cuda/gemm/type_paths.h)
  CHECK(test::status_of([&] {
          cuda::decode_f16_weights(GgmlType::Q4_K, buf.data(), 200, 1, buf.as<uint16_t>(), test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);
}

// Tolerance: gemm_ref.h's bound around the exact sum of the products of the
// GEMMs' F16 weights and the F16 activations, (n / 16 + 8) 2^-22 sum |p|;
// cuBLAS sums in its own order (splits of K included) within it. Epilogue Add:
// that bound plus one rounding of the sum with the residual.
TEST_CASE("DenseGemm: the F16 reference within its bound, Store and Add, repeatable", "[gpu][dense_gemm]") {
  const int64_t n_in = 1024, n_out = 200;
  cuda::DenseGemm g(test::kDevice, n_in * n_out);
  // A few positions past the minimum (cuBLAS may split K there) and a few hundred.
  for (const int64_t T : {cuda::kDenseGemmMinRows + 44, int64_t{300}}) {
    for (GgmlType type : kQuantTypes) {
      DYNAMIC_SECTION(core::type_traits(type).name << " T=" << T) {
        test::Rng rng = test::rng_for(3200 + static_cast<uint64_t>(type));
        const std::vector<uint8_t> w = random_matrix(type, n_out, n_in, rng);
        const std::vector<uint16_t> xh = f16_rows(rng.vec(static_cast<size_t>(T * n_in), 2.0f));
        const std::vector<float> residual = rng.vec(static_cast<size_t>(T * n_out), 4.0f);
        cuda::DeviceBuffer dw = test::to_device(w), dx = test::to_device(xh), dres = test::to_device(residual);
        cuda::DeviceBuffer y = test::poisoned(residual.size() * 4);
        cudaStream_t s = test_stream().get();
        g.run(type, dw.data(), n_in, n_out, dx.as<uint16_t>(), T, y.as<float>(), cuda::Epilogue::Store, s);
        g.run(type, dw.data(), n_in, n_out, dx.as<uint16_t>(), T, dres.as<float>(), cuda::Epilogue::Add, s);
        const std::vector<float> got = test::to_host<float>(y, residual.size());
        const std::vector<float> added = test::to_host<float>(dres, residual.size());

        std::vector<float> x(xh.size());
        for (size_t i = 0; i < x.size(); ++i) x[i] = core::fp16_to_f32(xh[i]);
        const size_t rb = core::row_size(type, n_in);
        int bad = 0, bad_add = 0;
        std::string first;
        for (int64_t r = 0; r < n_out; ++r) {
          const std::vector<float> wr = test::gemm_weights(type, &w[rb * r], n_in);
          for (int64_t t = 0; t < T; ++t) {
            const test::RefDot ref = test::gemm_ref(wr.data(), &x[t * n_in], n_in);
            const size_t i = static_cast<size_t>(t * n_out + r);
            if (!(std::fabs(got[i] - ref.value) <= ref.bound)) {
              if (bad++ == 0) first = "store row " + std::to_string(t) + " col " + std::to_string(r);
            }
            const double sum = residual[i] + ref.value;
            if (!(std::fabs(added[i] - sum) <= ref.bound + std::fabs(sum) * std::ldexp(1.0, -23))) {
              if (bad_add++ == 0) first += " add row " + std::to_string(t) + " col " + std::to_string(r);
            }
          }
        }
        INFO("seed=" << test::ops_seed() << " " << core::type_traits(type).name << ": " << bad << " store and "
                     << bad_add << " add mismatches, first " << first);
        CHECK(bad == 0);
        CHECK(bad_add == 0);

        test::poison(y);
        g.run(type, dw.data(), n_in, n_out, dx.as<uint16_t>(), T, y.as<float>(), cuda::Epilogue::Store, s);
        INFO("a second run gave other bits");
        CHECK(test::bit_equal(got, test::to_host<float>(y, residual.size())));
      }
    }
  }
}

TEST_CASE("DenseGemm takes quantized matrices that fit, from the minimum rows, and refuses the rest", "[gpu][dense_gemm]") {
  cuda::DenseGemm g(test::kDevice, 512 * 256);
  const int64_t T = cuda::kDenseGemmMinRows;
  CHECK(g.takes(GgmlType::Q4_K, 512, 256, T));
  CHECK(g.takes(GgmlType::Q8_0, 256, 512, T));
  CHECK_FALSE(g.takes(GgmlType::Q4_K, 512, 256, T - 1));   // too few positions
  CHECK_FALSE(g.takes(GgmlType::Q4_K, 512, 257, T));       // larger than the F16 copy
  CHECK_FALSE(g.takes(GgmlType::F16, 512, 256, T));        // float weights keep the exact kernel
  CHECK_FALSE(g.takes(GgmlType::Q6_K, 384, 128, T));       // n_in not a multiple of 256
  cuda::DeviceBuffer buf = test::poisoned(1 << 20);
  std::string msg;
  CHECK(test::status_of(
            [&] {
              g.run(GgmlType::Q4_K, buf.data(), 512, 257, buf.as<uint16_t>(), T, buf.as<float>(),
                    cuda::Epilogue::Store, test_stream().get());
            },
            &msg) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(msg.find("dense_gemm") != std::string::npos);
  CHECK(test::status_of([&] {
          g.run(GgmlType::Q4_K, buf.data(), 512, 256, buf.as<uint16_t>(), T, buf.as<float>(),
                cuda::Epilogue::SwigluMul, test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);
}

namespace {

// Values over many binades (2^-20 .. 2^10), a few below F16's normal range,
// so hi, lo and their order all show.
std::vector<float> wide_values(size_t n, test::Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = rng.nonzero(std::ldexp(1.0f, rng.int_in(-20, 10)));
  return v;
}

// Positive F16 values over many binades, each then moved up by 3 * 2^-14 of
// itself (under half an F16 ulp, which is at least 2^-12 of a value): rounded
// to F16 (the hi alone) every one falls back the same way, so products
// without the lo terms miss their sums by ~3.7e-4.
std::vector<float> biased_values(size_t n, test::Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) {
    const float f16 = core::fp16_to_f32(core::f32_to_fp16(std::fabs(rng.nonzero(std::ldexp(1.0f, rng.int_in(-8, 8))))));
    x = f16 * (1.0f + 3.0f * std::ldexp(1.0f, -14));
  }
  return v;
}

}  // namespace

// Tolerance: bit-exact against the CPU's F16 rounding of v and of
// (v - hi) * 2^11.
TEST_CASE("split_f16_rows gives the F16 pairs bit for bit, in either order", "[gpu][dense_gemm]") {
  test::Rng rng = test::rng_for(3300);
  const int64_t rows = 37, n = 132;
  const std::vector<float> x = wide_values(static_cast<size_t>(rows * n), rng);
  cuda::DeviceBuffer dx = test::to_device(x);
  for (const bool hi_first : {true, false}) {
    DYNAMIC_SECTION("hi_first=" << hi_first) {
      std::vector<uint16_t> want(x.size() * 2);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[r * n + i];
          const uint16_t hi = core::f32_to_fp16(v);
          const uint16_t lo = core::f32_to_fp16((v - core::fp16_to_f32(hi)) * cuda::kSplitLoScale);
          want[2 * r * n + (hi_first ? 0 : n) + i] = hi;
          want[2 * r * n + (hi_first ? n : 0) + i] = lo;
        }
      cuda::DeviceBuffer out = test::poisoned(want.size() * 2);
      cuda::split_f16_rows(dx.as<float>(), rows, n, hi_first, out.as<uint16_t>(), test_stream().get());
      CHECK_REPORT(test::byte_mismatches(test::to_host<uint16_t>(out, want.size()).data(), want.data(),
                                         want.size() * 2));
    }
  }
  CHECK(test::status_of([&] {
          cuda::split_f16_rows(dx.as<float>(), rows, 130, true, dx.as<uint16_t>(), test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);
}

// Tolerance: run_f32's bound around the exact dot product (in double):
// gemm_ref.h's for the tensor cores' F32 sums, (n / 16 + 8) 2^-22 sum |w x|,
// plus 2^-20 sum |w x| for the pairs. Signed values over many binades (sums
// that cancel, tiny and F16-subnormal values), and positive values all off
// the F16 grid the same way: without the lo terms those would miss by ~3.7e-4
// of sum |w x|, ~11 times the bound. Epilogue Add: plus one rounding of the
// sum with the residual.
TEST_CASE("DenseGemm::run_f32: F32 weights and activations within the bound of the exact sums, repeatable",
          "[gpu][dense_gemm]") {
  const int64_t n_in = 2048, n_out = 128;
  cuda::DenseGemm g(test::kDevice, 2 * n_in * n_out);
  for (const int64_t T : {cuda::kDenseGemmMinRows + 5, int64_t{520}}) {
    for (const bool biased : {false, true}) {
      DYNAMIC_SECTION("T=" << T << (biased ? " positive, off the F16 grid" : " signed, wide")) {
        test::Rng rng = test::rng_for(3400 + static_cast<uint64_t>(T) + biased);
        const std::vector<float> w = biased ? biased_values(static_cast<size_t>(n_in * n_out), rng)
                                            : rng.vec(static_cast<size_t>(n_in * n_out), 0.05f);
        const std::vector<float> x = biased ? biased_values(static_cast<size_t>(T * n_in), rng)
                                            : wide_values(static_cast<size_t>(T * n_in), rng);
        const std::vector<float> residual = rng.vec(static_cast<size_t>(T * n_out), 4.0f);
        cuda::DeviceBuffer dw = test::to_device(w), dx = test::to_device(x), dres = test::to_device(residual);
        cuda::DeviceBuffer y = test::poisoned(residual.size() * 4);
        const size_t scratch_bytes = cuda::DenseGemm::f32_scratch_bytes(n_in, T);
        cuda::DeviceBuffer scratch = test::poisoned(scratch_bytes);
        cudaStream_t s = test_stream().get();
        g.run_f32(dw.as<float>(), n_in, n_out, dx.as<float>(), T, y.as<float>(), cuda::Epilogue::Store,
                  scratch.data(), scratch_bytes, s);
        g.run_f32(dw.as<float>(), n_in, n_out, dx.as<float>(), T, dres.as<float>(), cuda::Epilogue::Add,
                  scratch.data(), scratch_bytes, s);
        const std::vector<float> got = test::to_host<float>(y, residual.size());
        const std::vector<float> added = test::to_host<float>(dres, residual.size());
        int bad = 0, bad_add = 0;
        double worst = 0;
        for (int64_t t = 0; t < T; ++t)
          for (int64_t r = 0; r < n_out; ++r) {
            const test::RefDot ref = test::gemm_ref(&w[r * n_in], &x[t * n_in], n_in);
            double mag = 0;
            for (int64_t i = 0; i < n_in; ++i) mag += std::fabs(static_cast<double>(w[r * n_in + i]) * x[t * n_in + i]);
            const double bound = ref.bound + std::ldexp(mag, -20);
            const size_t i = static_cast<size_t>(t * n_out + r);
            worst = std::max(worst, std::fabs(got[i] - ref.value) / mag);
            bad += !(std::fabs(got[i] - ref.value) <= bound);
            const double sum = residual[i] + ref.value;
            bad_add += !(std::fabs(added[i] - sum) <= bound + std::fabs(sum) * std::ldexp(1.0, -23));
          }
        INFO("seed=" << test::ops_seed() << ": " << bad << " store and " << bad_add
                     << " add mismatches; largest error " << worst << " of sum |w x|");
        CHECK(bad == 0);
        CHECK(bad_add == 0);

        test::poison(y);
        g.run_f32(dw.as<float>(), n_in, n_out, dx.as<float>(), T, y.as<float>(), cuda::Epilogue::Store,
                  scratch.data(), scratch_bytes, s);
        INFO("a second run gave other bits");
        CHECK(test::bit_equal(got, test::to_host<float>(y, residual.size())));
      }
    }
  }
}

TEST_CASE("DenseGemm takes F32 matrices whose pairs and scratch fit, and refuses the rest", "[gpu][dense_gemm]") {
  cuda::DenseGemm g(test::kDevice, 2 * 512 * 128);
  const int64_t T = cuda::kDenseGemmMinRows;
  const size_t scratch = cuda::DenseGemm::f32_scratch_bytes(512, T);
  CHECK(g.takes_f32(512, 128, T, scratch));
  CHECK_FALSE(g.takes_f32(512, 128, T - 1, scratch));   // too few positions
  CHECK_FALSE(g.takes_f32(512, 129, T, scratch));       // pairs larger than the F16 copy
  CHECK_FALSE(g.takes_f32(512, 128, T, scratch - 1));   // scratch too small
  CHECK_FALSE(g.takes_f32(510, 128, T, scratch));       // n_in not a multiple of 4
  cuda::DeviceBuffer buf = test::poisoned(1 << 20);
  std::string msg;
  CHECK(test::status_of(
            [&] {
              g.run_f32(buf.as<float>(), 512, 128, buf.as<float>(), T, buf.as<float>(), cuda::Epilogue::Store,
                        buf.data(), scratch - 1, test_stream().get());
            },
            &msg) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(msg.find("dense_gemm_f32") != std::string::npos);
}
