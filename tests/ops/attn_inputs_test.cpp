// attention_inputs (Q/K norms, RoPE and the K/V cache write in one launch) against the separate kernels, bit for bit.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "cuda/attention/attn_inputs.cuh"
#include "cuda/attention/kv.cuh"
#include "cuda/norm/norm.cuh"
#include "cuda/norm/rope.cuh"
#include "ops/ops_util.h"

using namespace strata;
using core::KvType;
using strata::test::test_stream;

namespace {

struct InputsCase {
  int64_t T;
  int n_head, n_head_kv, head_dim;
  bool norms;
};

// A K or V cache plane of the test, poisoned.
struct Plane {
  cuda::DeviceBuffer data, scales;
  cuda::KvDeviceView view;
  Plane(KvType type, int n_ctx, int n_head_kv, int head_dim)
      : data(test::poisoned(cuda::kv_data_bytes(type, n_ctx, n_head_kv, head_dim))),
        scales(test::poisoned(std::max<size_t>(4, cuda::kv_scale_bytes(type, n_ctx, n_head_kv)))) {
    view.type = type;
    view.data = data.data();
    view.scales = type == KvType::Int8 ? scales.as<float>() : nullptr;
    view.n_ctx = n_ctx;
    view.n_head_kv = n_head_kv;
    view.head_dim = head_dim;
  }
  std::vector<uint8_t> bytes() const { return test::to_host<uint8_t>(data, data.size()); }
  std::vector<uint8_t> scale_bytes() const { return test::to_host<uint8_t>(scales, scales.size()); }
};

}  // namespace

// The fused kernel must give exactly the bits of rmsnorm (per head), rope and
// kv_write run one after the other: Q in place, the K and V cache rows (and
// Int8 scales), rows at positions outside the cache left untouched.
TEST_CASE("attention_inputs equals rmsnorm + rope + kv_write bit for bit", "[gpu][attention]") {
  const InputsCase cases[] = {
      {1, 32, 4, 128, true},     // decode, qwen3-30b-a3b heads
      {37, 32, 4, 128, true},    // a prompt chunk
      {5, 8, 8, 64, false},      // no Q/K norms, no GQA, head dim 64
      {3, 6, 2, 256, true},      // head dim 256
  };
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (const InputsCase& c : cases) {
      DYNAMIC_SECTION((type == KvType::F16 ? "f16" : "int8") << " T=" << c.T << " heads=" << c.n_head << "/"
                                                             << c.n_head_kv << " d=" << c.head_dim
                                                             << (c.norms ? " norms" : "")) {
        test::Rng rng = test::rng_for(900 + c.T + c.head_dim);
        const int d = c.head_dim, n_ctx = 4096;
        const float eps = 1e-6f, base = 1e6f;
        REQUIRE(cuda::attention_inputs_take(d, d, d, core::RopeStyle::Neox));
        const std::vector<float> q = rng.vec(c.T * c.n_head * d, 4.0f), k = rng.vec(c.T * c.n_head_kv * d, 4.0f),
                                 v = rng.vec(c.T * c.n_head_kv * d, 4.0f);
        const std::vector<float> qn = rng.vec(d), kn = rng.vec(d);
        // Distinct positions (two rows for one position would race in kv_write too), in any order.
        std::vector<int32_t> pos(static_cast<size_t>(n_ctx));
        std::iota(pos.begin(), pos.end(), 0);
        std::shuffle(pos.begin(), pos.end(), rng.gen);
        pos.resize(static_cast<size_t>(c.T));
        pos[0] = n_ctx + 3;  // outside the cache: Q still rotated, no K/V row written
        const cuda::DeviceBuffer dpos = test::to_device(pos), dqn = test::to_device(qn), dkn = test::to_device(kn);
        const cuda::DeviceBuffer dv = test::to_device(v);
        cudaStream_t s = test_stream().get();

        // Reference: the separate kernels.
        cuda::DeviceBuffer rq = test::to_device(q), rk = test::to_device(k);
        Plane rkc(type, n_ctx, c.n_head_kv, d), rvc(type, n_ctx, c.n_head_kv, d);
        if (c.norms) {
          cuda::rmsnorm(rq.as<float>(), dqn.as<float>(), rq.as<float>(), c.T * c.n_head, d, eps, s);
          cuda::rmsnorm(rk.as<float>(), dkn.as<float>(), rk.as<float>(), c.T * c.n_head_kv, d, eps, s);
        }
        cuda::rope(rq.as<float>(), dpos.as<int32_t>(), c.T, c.n_head, d, d, base, core::RopeStyle::Neox, s);
        cuda::rope(rk.as<float>(), dpos.as<int32_t>(), c.T, c.n_head_kv, d, d, base, core::RopeStyle::Neox, s);
        cuda::kv_write(rk.as<float>(), dpos.as<int32_t>(), c.T, rkc.view, s);
        cuda::kv_write(dv.as<float>(), dpos.as<int32_t>(), c.T, rvc.view, s);

        cuda::DeviceBuffer fq = test::to_device(q);
        const cuda::DeviceBuffer fk = test::to_device(k);
        Plane fkc(type, n_ctx, c.n_head_kv, d), fvc(type, n_ctx, c.n_head_kv, d);
        cuda::attention_inputs(fq.as<float>(), fk.as<float>(), dv.as<float>(), c.norms ? dqn.as<float>() : nullptr,
                               c.norms ? dkn.as<float>() : nullptr, eps, dpos.as<int32_t>(), c.T, c.n_head, d, base,
                               core::RopeStyle::Neox, fkc.view, fvc.view, s);
        const std::vector<float> want_q = test::to_host<float>(rq, q.size()), got_q = test::to_host<float>(fq, q.size());
        CHECK(test::bit_equal(got_q, want_q));
        CHECK_FALSE(test::bit_equal(got_q, q));  // Q was rotated
        CHECK(fkc.bytes() == rkc.bytes());
        CHECK(fvc.bytes() == rvc.bytes());
        if (type == KvType::Int8) {
          CHECK(fkc.scale_bytes() == rkc.scale_bytes());
          CHECK(fvc.scale_bytes() == rvc.scale_bytes());
        }
      }
    }
  }
}

TEST_CASE("attention_inputs refuses shapes it does not take", "[gpu][attention]") {
  CHECK_FALSE(cuda::attention_inputs_take(128, 128, 64, core::RopeStyle::Neox));       // partial rotation
  CHECK_FALSE(cuda::attention_inputs_take(128, 128, 128, core::RopeStyle::Adjacent));  // adjacent pairs
  CHECK_FALSE(cuda::attention_inputs_take(96, 96, 96, core::RopeStyle::Neox));         // not a multiple of 64
  CHECK_FALSE(cuda::attention_inputs_take(512, 512, 512, core::RopeStyle::Neox));      // too wide
  Plane k(KvType::F16, 8, 1, 128), v(KvType::F16, 8, 1, 128);
  const cuda::DeviceBuffer pos = test::to_device(std::vector<int32_t>{0});
  float* none = nullptr;
  CHECK(test::status_of([&] {
          cuda::attention_inputs(none, none, none, nullptr, nullptr, 1e-6f, pos.as<int32_t>(), 1, 1, 64, 1e4f,
                                 core::RopeStyle::Neox, k.view, v.view, test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);
  Plane v2(KvType::F16, 8, 2, 128);
  CHECK(test::status_of([&] {
          cuda::attention_inputs(none, none, none, nullptr, nullptr, 1e-6f, pos.as<int32_t>(), 1, 1, 128, 1e4f,
                                 core::RopeStyle::Neox, k.view, v2.view, test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);  // K and V views of different caches
}
