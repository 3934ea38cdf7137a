// rmsnorm and rope kernels against cpu::rmsnorm and cpu::rope_neox / rope_norm.
#include <cmath>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "cpu/ops.h"
#include "cuda/moe/moe.cuh"
#include "cuda/norm/norm.cuh"
#include "cuda/norm/quantize.cuh"
#include "cuda/norm/rope.cuh"
#include "ops/ops_util.h"

using namespace strata;
using strata::test::test_stream;

namespace {

struct NormCase {
  int64_t rows, n;
  bool weights, in_place;
};

// F32 values rounded to F16 (nearest even), as bits.
std::vector<uint16_t> f16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = core::f32_to_fp16(v[i]);
  return h;
}

}  // namespace

// Tolerance: relative 1e-5 (+1e-6 absolute): the GPU sums squares in a tree,
// the CPU in ascending order, so the scale differs by a few F32 ulps.
TEST_CASE("rmsnorm matches cpu::rmsnorm and is deterministic") {
  const NormCase cases[] = {
      {7, 2048, true, false},      // hidden rows, warp per row
      {5 * 32, 128, true, true},   // per-head Q norm: rows = T * n_head, in place
      {3, 4099, true, false},      // long odd rows: block per row
      {9, 1, false, false},        // n = 1, no weights
      {1, 1024, false, true},      // largest warp-per-row size
      {2, 1025, true, true},       // smallest block-per-row size
  };
  for (const NormCase& c : cases) {
    DYNAMIC_SECTION("rows=" << c.rows << " n=" << c.n << (c.weights ? " w" : " no-w") << (c.in_place ? " in-place" : "")) {
      test::Rng rng = test::rng_for(100 + c.n);
      const float eps = 1e-6f;
      const std::vector<float> x = rng.vec(c.rows * c.n, 3.0f);
      const std::vector<float> w = rng.vec(c.n);
      std::vector<float> want(x.size());
      for (int64_t r = 0; r < c.rows; ++r)
        core::cpu::rmsnorm(&x[r * c.n], c.weights ? w.data() : nullptr, &want[r * c.n], c.n, eps);

      cuda::DeviceBuffer dx = test::to_device(x), dw = test::to_device(w);
      cuda::DeviceBuffer dy = test::poisoned(x.size() * sizeof(float));
      auto run = [&] {
        if (c.in_place) {
          cuda::copy_async(dy.data(), dx.data(), dx.size(), test_stream().get());
          cuda::rmsnorm(dy.as<float>(), c.weights ? dw.as<float>() : nullptr, dy.as<float>(), c.rows, c.n, eps,
                        test_stream().get());
        } else {
          cuda::rmsnorm(dx.as<float>(), c.weights ? dw.as<float>() : nullptr, dy.as<float>(), c.rows, c.n, eps,
                        test_stream().get());
        }
        return test::to_host<float>(dy, x.size());
      };
      const std::vector<float> got = run();
      const int64_t n = c.n;
      CHECK_REPORT(test::mismatches(got.data(), want.data(), got.size(), {1e-6, 1e-5},
                                    [n](size_t i) { return "row " + std::to_string(i / n) + " col " + std::to_string(i % n); }));
      test::poison(dy);
      CHECK(test::bit_equal(run(), got));
    }
  }
}

// The fused norm + quantization must equal rmsnorm then quantize_q8a bit for
// bit, with either reduction order (warp per row up to 1024 values, block per
// row above), on the wide block and (64 rows or more, up to 4096 values) the
// block holding its row in registers; so must the F16 form equal rmsnorm's
// rows rounded to F16.
TEST_CASE("rmsnorm_q8a and rmsnorm_f16 equal rmsnorm then quantize_q8a or F16 rounding bit for bit") {
  const NormCase cases[] = {
      {1, 2048, true, false},    // decode hidden row, block order
      {7, 2048, true, false},    // prompt rows
      {3, 256, true, false},     // warp order
      {2, 1024, false, false},   // largest warp-order row, no weights
      {5, 4096, true, false},
      {70, 2048, true, false},   // many rows: values in registers
      {64, 1056, false, false},  // the fewest rows there, a length not a multiple of 256
      {65, 4096, true, false},   // the longest rows there
      {66, 4128, true, false},   // longer: the wide block again
      {80, 512, true, false},    // many short rows: warp order
  };
  for (const NormCase& c : cases) {
    DYNAMIC_SECTION("rows=" << c.rows << " n=" << c.n << (c.weights ? " w" : " no-w")) {
      test::Rng rng = test::rng_for(150 + c.n + c.rows);
      const float eps = 1e-6f;
      std::vector<float> x = rng.vec(c.rows * c.n, 3.0f);
      x[5] = 0.0f;
      const std::vector<float> w = rng.vec(c.n);
      const cuda::DeviceBuffer dx = test::to_device(x), dw = test::to_device(w);
      const float* wp = c.weights ? dw.as<float>() : nullptr;
      const size_t blocks = static_cast<size_t>(c.rows * c.n / 32);
      cuda::DeviceBuffer ry = test::poisoned(x.size() * sizeof(float)), rq = test::poisoned(blocks * sizeof(core::BlockQ8A));
      cuda::DeviceBuffer fy = test::poisoned(x.size() * sizeof(float)), fq = test::poisoned(blocks * sizeof(core::BlockQ8A));
      cudaStream_t s = test_stream().get();
      cuda::rmsnorm(dx.as<float>(), wp, ry.as<float>(), c.rows, c.n, eps, s);
      cuda::quantize_q8a(ry.as<float>(), c.n, rq.as<core::BlockQ8A>(), c.n / 32, c.n, c.rows, s);
      cuda::rmsnorm_q8a(dx.as<float>(), wp, fy.as<float>(), fq.as<core::BlockQ8A>(), c.rows, c.n, eps, s);
      const std::vector<float> want_y = test::to_host<float>(ry, x.size());
      CHECK(test::bit_equal(test::to_host<float>(fy, x.size()), want_y));
      CHECK(test::to_host<uint8_t>(fq, blocks * sizeof(core::BlockQ8A)) ==
            test::to_host<uint8_t>(rq, blocks * sizeof(core::BlockQ8A)));

      cuda::DeviceBuffer hy = test::poisoned(x.size() * sizeof(float)), hh = test::poisoned(x.size() * 2);
      cuda::rmsnorm_f16(dx.as<float>(), wp, hy.as<float>(), hh.as<uint16_t>(), c.rows, c.n, eps, s);
      CHECK(test::bit_equal(test::to_host<float>(hy, x.size()), want_y));
      CHECK(test::to_host<uint16_t>(hh, x.size()) == f16_bits(want_y));
    }
  }
  float* none = nullptr;
  core::BlockQ8A* no_q = nullptr;
  CHECK_THROWS_AS(cuda::rmsnorm_q8a(none, none, none, no_q, 1, 48, 1e-6f, test_stream().get()), core::Error);
  float* some = reinterpret_cast<float*>(alignof(float) * 64);
  CHECK_THROWS_AS(cuda::rmsnorm_q8a(some, none, some, no_q, 1, 64, 1e-6f, test_stream().get()), core::Error);
}

// As above, on both kernels (64 rows or more: the block holding its row in
// registers), and the F16 form.
TEST_CASE("moe_combine_rmsnorm_q8a and _f16 equal moe_combine then rmsnorm_q8a bit for bit") {
  struct Case {
    int rows, k, n;
  };
  for (const Case c : {Case{1, 8, 2048}, Case{5, 8, 2048}, Case{3, 2, 256}, Case{2, 1, 4096}, Case{70, 8, 2048},
                       Case{64, 3, 1056}, Case{65, 2, 4096}}) {
    DYNAMIC_SECTION("rows=" << c.rows << " k=" << c.k << " n=" << c.n) {
      test::Rng rng = test::rng_for(170 + c.n + c.rows + c.k);
      const float eps = 1e-6f;
      const std::vector<float> x = rng.vec(c.rows * c.n, 3.0f), w = rng.vec(c.n);
      const std::vector<float> ys = rng.vec(c.rows * c.k * c.n, 2.0f), sw = rng.vec(c.rows * c.k, 1.0f);
      const cuda::DeviceBuffer dw = test::to_device(w), dys = test::to_device(ys), dsw = test::to_device(sw);
      cuda::DeviceBuffer rx = test::to_device(x), fx = test::to_device(x);
      const size_t blocks = static_cast<size_t>(c.rows * c.n / 32);
      cuda::DeviceBuffer ry = test::poisoned(x.size() * sizeof(float)), rq = test::poisoned(blocks * sizeof(core::BlockQ8A));
      cuda::DeviceBuffer fy = test::poisoned(x.size() * sizeof(float)), fq = test::poisoned(blocks * sizeof(core::BlockQ8A));
      cudaStream_t s = test_stream().get();
      cuda::moe_combine(dys.as<float>(), dsw.as<float>(), c.rows, c.k, c.n, rx.as<float>(), rx.as<float>(), s);
      cuda::rmsnorm_q8a(rx.as<float>(), dw.as<float>(), ry.as<float>(), rq.as<core::BlockQ8A>(), c.rows, c.n, eps, s);
      cuda::moe_combine_rmsnorm_q8a(dys.as<float>(), dsw.as<float>(), c.k, fx.as<float>(), dw.as<float>(),
                                    fy.as<float>(), fq.as<core::BlockQ8A>(), c.rows, c.n, eps, s);
      const std::vector<float> got_x = test::to_host<float>(fx, x.size());
      CHECK(test::bit_equal(got_x, test::to_host<float>(rx, x.size())));
      CHECK_FALSE(test::bit_equal(got_x, x));  // the combine was added
      const std::vector<float> want_y = test::to_host<float>(ry, x.size());
      CHECK(test::bit_equal(test::to_host<float>(fy, x.size()), want_y));
      CHECK(test::to_host<uint8_t>(fq, blocks * sizeof(core::BlockQ8A)) ==
            test::to_host<uint8_t>(rq, blocks * sizeof(core::BlockQ8A)));

      cuda::DeviceBuffer hx = test::to_device(x), hy = test::poisoned(x.size() * sizeof(float));
      cuda::DeviceBuffer hh = test::poisoned(x.size() * 2);
      cuda::moe_combine_rmsnorm_f16(dys.as<float>(), dsw.as<float>(), c.k, hx.as<float>(), dw.as<float>(),
                                    hy.as<float>(), hh.as<uint16_t>(), c.rows, c.n, eps, s);
      CHECK(test::bit_equal(test::to_host<float>(hx, x.size()), got_x));
      CHECK(test::bit_equal(test::to_host<float>(hy, x.size()), want_y));
      CHECK(test::to_host<uint16_t>(hh, x.size()) == f16_bits(want_y));
    }
  }
  float* some = reinterpret_cast<float*>(alignof(float) * 64);
  core::BlockQ8A* no_q = nullptr;
  CHECK_THROWS_AS(cuda::moe_combine_rmsnorm_q8a(some, some, 0, some, some, some + 64, no_q, 1, 64, 1e-6f,
                                                test_stream().get()),
                  core::Error);
  CHECK_THROWS_AS(cuda::moe_combine_rmsnorm_q8a(some, some, 8, some, some, some + 64, no_q, 1, 40, 1e-6f,
                                                test_stream().get()),
                  core::Error);
}

TEST_CASE("rmsnorm rejects bad shapes") {
  float* none = nullptr;
  CHECK_THROWS_AS(cuda::rmsnorm(none, none, none, 1, 0, 1e-6f, test_stream().get()), core::Error);
  CHECK_THROWS_AS(cuda::rmsnorm(none, none, none, -1, 8, 1e-6f, test_stream().get()), core::Error);
  CHECK_NOTHROW(cuda::rmsnorm(none, none, none, 0, 8, 1e-6f, test_stream().get()));
}

namespace {

struct RopeCase {
  core::RopeStyle style;
  int T, n_head, head_dim, n_rot;
  float freq_base;
  int32_t max_pos;
};

}  // namespace

// Tolerance: 1e-6 absolute + 1e-6 relative. Angles, cos and sin are computed
// in double and rounded once on both sides and the rotation uses the same
// unfused F32 operations, so results are equal unless the device's double
// cos/sin round to the other float neighbour (about one value in 1e7).
TEST_CASE("rope matches cpu::rope_neox / rope_norm at arbitrary positions") {
  const RopeCase cases[] = {
      {core::RopeStyle::Neox, 11, 32, 128, 128, 1e6f, 40000},  // qwen3moe Q
      {core::RopeStyle::Neox, 11, 4, 128, 128, 1e6f, 40000},   // qwen3moe K
      {core::RopeStyle::Neox, 6, 3, 128, 64, 10000.0f, 500},   // partial rotation
      {core::RopeStyle::Adjacent, 9, 8, 64, 64, 10000.0f, 131072},
      {core::RopeStyle::Adjacent, 4, 2, 80, 32, 500000.0f, 7},  // partial, odd head count
  };
  int idx = 0;
  for (const RopeCase& c : cases) {
    DYNAMIC_SECTION("case " << idx++ << (c.style == core::RopeStyle::Neox ? " neox" : " adjacent") << " T=" << c.T
                            << " heads=" << c.n_head << " head_dim=" << c.head_dim << " n_rot=" << c.n_rot) {
      test::Rng rng = test::rng_for(200 + idx);
      const size_t row = static_cast<size_t>(c.n_head) * c.head_dim;
      const std::vector<float> x = rng.vec(c.T * row, 2.0f);
      std::vector<int32_t> pos(c.T);
      for (int32_t& p : pos) p = rng.int_in(0, c.max_pos);  // unordered, repeats allowed
      std::vector<float> want = x;
      for (int t = 0; t < c.T; ++t) {
        auto cpu_rope = c.style == core::RopeStyle::Neox ? core::cpu::rope_neox : core::cpu::rope_norm;
        cpu_rope(&want[t * row], c.n_head, c.head_dim, pos[t], c.freq_base, c.n_rot);
      }
      cuda::DeviceBuffer dx = test::to_device(x), dpos = test::to_device(pos);
      cuda::rope(dx.as<float>(), dpos.as<int32_t>(), c.T, c.n_head, c.head_dim, c.n_rot, c.freq_base, c.style,
                 test_stream().get());
      const std::vector<float> got = test::to_host<float>(dx, x.size());
      const int hd = c.head_dim, nh = c.n_head;
      CHECK_REPORT(test::mismatches(got.data(), want.data(), got.size(), {1e-6, 1e-6}, [&](size_t i) {
        return "t " + std::to_string(i / (nh * hd)) + " (pos " + std::to_string(pos[i / (nh * hd)]) + ") head " +
               std::to_string(i / hd % nh) + " dim " + std::to_string(i % hd);
      }));
    }
  }
}

TEST_CASE("rope rejects an odd or oversized n_rot") {
  float* none = nullptr;
  const int32_t* no_pos = nullptr;
  CHECK_THROWS_AS(cuda::rope(none, no_pos, 1, 1, 64, 63, 1e4f, core::RopeStyle::Neox, test_stream().get()), core::Error);
  CHECK_THROWS_AS(cuda::rope(none, no_pos, 1, 1, 64, 66, 1e4f, core::RopeStyle::Neox, test_stream().get()), core::Error);
}
