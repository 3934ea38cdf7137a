// Router top-k, SwiGLU, combine, residual add and RowTable gather/scatter against the CPU reference.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/cpu/ops.h"
#include "core/error.h"
#include "cuda/moe.cuh"
#include "ops/ops_util.h"
#include "prefill/row_table.h"

using namespace strata;
using core::cpu::RouterMode;
using strata::test::test_stream;

namespace {

const char* mode_name(RouterMode m) {
  switch (m) {
    case RouterMode::SoftmaxTopkNorm: return "softmax-topk-norm";
    case RouterMode::SoftmaxTopk: return "softmax-topk";
    case RouterMode::TopkSoftmax: return "topk-softmax";
  }
  return "?";
}

struct RouterCase {
  int T, n_expert, k;
  bool ties;  // logits drawn from 4 values, so ranks are decided by the id rule
};

// Well separated logits (distinct multiples of 0.05 in random order), so
// that an ulp of expf cannot reorder them; or, with ties, only 4 distinct values.
std::vector<float> router_logits(const RouterCase& c, test::Rng& rng) {
  std::vector<float> x(static_cast<size_t>(c.T) * c.n_expert);
  std::vector<int> perm(c.n_expert);
  for (int t = 0; t < c.T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng.gen);
    for (int e = 0; e < c.n_expert; ++e) {
      x[static_cast<size_t>(t) * c.n_expert + e] =
          c.ties ? 0.25f * static_cast<float>(rng.int_in(-2, 1)) : 0.05f * static_cast<float>(perm[e] - c.n_expert / 2);
    }
  }
  return x;
}

}  // namespace

// Tolerance: ids exactly equal (including every tie, decided by lower id);
// weights 2e-6 relative (device expf may differ from the host's by an ulp).
TEST_CASE("route_topk matches cpu::route_topk, tie rules included") {
  const RouterCase cases[] = {
      {33, 128, 8, false},    // qwen3-30b-a3b
      {33, 128, 8, true},     // ties everywhere
      {5, 6, 6, false},       // k = n_expert
      {4, 6, 6, true},
      {7, 2048, 16, false},   // many experts, 4 warps per block
      {3, 2000, 1000, true},  // large k: one warp per block
      {1, 1, 1, false},
  };
  for (RouterMode mode : {RouterMode::SoftmaxTopkNorm, RouterMode::SoftmaxTopk, RouterMode::TopkSoftmax}) {
    for (const RouterCase& c : cases) {
      DYNAMIC_SECTION(mode_name(mode) << " T=" << c.T << " n_expert=" << c.n_expert << " k=" << c.k
                                      << (c.ties ? " ties" : "")) {
        test::Rng rng = test::rng_for(600 + c.n_expert + c.k + c.ties);
        const std::vector<float> logits = router_logits(c, rng);
        std::vector<int32_t> want_ids(static_cast<size_t>(c.T) * c.k);
        std::vector<float> want_w(want_ids.size());
        for (int t = 0; t < c.T; ++t)
          core::cpu::route_topk(&logits[static_cast<size_t>(t) * c.n_expert], c.n_expert, c.k, mode,
                                &want_ids[static_cast<size_t>(t) * c.k], &want_w[static_cast<size_t>(t) * c.k]);

        cuda::DeviceBuffer dl = test::to_device(logits);
        cuda::DeviceBuffer ids = test::poisoned(want_ids.size() * sizeof(int32_t));
        cuda::DeviceBuffer w = test::poisoned(want_w.size() * sizeof(float));
        cuda::route_topk(dl.as<float>(), c.T, c.n_expert, c.k, mode, ids.as<int32_t>(), w.as<float>(),
                         test_stream().get());
        const std::vector<int32_t> got_ids = test::to_host<int32_t>(ids, want_ids.size());
        const std::vector<float> got_w = test::to_host<float>(w, want_w.size());
        size_t first_bad = got_ids.size();
        for (size_t i = 0; i < got_ids.size() && first_bad == got_ids.size(); ++i)
          if (got_ids[i] != want_ids[i]) first_bad = i;
        INFO("seed=" << test::ops_seed() << " first differing id at token " << first_bad / c.k << " slot "
                     << first_bad % c.k << ": got " << (first_bad < got_ids.size() ? got_ids[first_bad] : -1)
                     << " want " << (first_bad < got_ids.size() ? want_ids[first_bad] : -1));
        CHECK(first_bad == got_ids.size());
        CHECK_REPORT(test::mismatches(got_w, want_w, {0.0, 2e-6}));
      }
    }
  }
}

// Tolerance: 1e-6 relative (+1e-7 absolute): same unfused operations, expf may differ by an ulp.
TEST_CASE("swiglu matches cpu::swiglu, also in place") {
  test::Rng rng = test::rng_for(700);
  const int64_t n = 3 * 768 + 7;
  const std::vector<float> gate = rng.vec(n, 6.0f), up = rng.vec(n, 2.0f);
  std::vector<float> want(n);
  core::cpu::swiglu(gate.data(), up.data(), want.data(), n);
  cuda::DeviceBuffer dg = test::to_device(gate), du = test::to_device(up);
  cuda::DeviceBuffer out = test::poisoned(n * sizeof(float));
  cuda::swiglu(dg.as<float>(), du.as<float>(), out.as<float>(), n, test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(out, n), want, {1e-7, 1e-6}));
  cuda::swiglu(dg.as<float>(), du.as<float>(), dg.as<float>(), n, test_stream().get());  // out == gate
  CHECK_REPORT(test::mismatches(test::to_host<float>(dg, n), want, {1e-7, 1e-6}));
}

// Tolerance: bit-exact. Combine and add are the CPU's F32 operations in the
// CPU's order (slot 0..k-1 from 0, then the residual), without FMA.
TEST_CASE("moe_combine sums slots in order and adds the residual; add is exact") {
  test::Rng rng = test::rng_for(800);
  const int T = 5, k = 8;
  const int64_t n = 2048 + 3;
  const std::vector<float> y = rng.vec(static_cast<size_t>(T) * k * n, 2.0f);
  const std::vector<float> w = rng.vec(static_cast<size_t>(T) * k);
  const std::vector<float> res = rng.vec(static_cast<size_t>(T) * n, 3.0f);
  std::vector<float> sum(static_cast<size_t>(T) * n), with_res(sum.size());
  for (int t = 0; t < T; ++t) {
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0.0f;
      for (int s = 0; s < k; ++s) {
        const float prod = w[t * k + s] * y[(static_cast<size_t>(t) * k + s) * n + i];
        acc += prod;
      }
      sum[t * n + i] = acc;
      with_res[t * n + i] = res[t * n + i] + acc;
    }
  }
  cuda::DeviceBuffer dy = test::to_device(y), dw = test::to_device(w), dres = test::to_device(res);
  cuda::DeviceBuffer out = test::poisoned(sum.size() * sizeof(float));
  cuda::moe_combine(dy.as<float>(), dw.as<float>(), T, k, n, nullptr, out.as<float>(), test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(out, sum.size()), sum, {0.0, 0.0}));
  cuda::moe_combine(dy.as<float>(), dw.as<float>(), T, k, n, dres.as<float>(), dres.as<float>(), test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(dres, sum.size()), with_res, {0.0, 0.0}));

  std::vector<float> a = rng.vec(1000), b = rng.vec(1000), want(1000);
  for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] + b[i];
  cuda::DeviceBuffer da = test::to_device(a), db = test::to_device(b);
  cuda::DeviceBuffer sum_out = test::poisoned(a.size() * sizeof(float));
  cuda::add(da.as<float>(), db.as<float>(), sum_out.as<float>(), static_cast<int64_t>(a.size()), test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(sum_out, a.size()), want, {0.0, 0.0}));
}

// Tolerance: bit-exact (copies).
TEST_CASE("gather_rows / scatter_rows follow a RowTable's groups") {
  test::Rng rng = test::rng_for(900);
  const int T = 37, k = 8, n_expert = 64;
  const int64_t n_cols = 300;
  std::vector<int32_t> ids(static_cast<size_t>(T) * k);
  std::vector<int32_t> experts(n_expert);
  for (int t = 0; t < T; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng.gen);
    std::copy_n(experts.begin(), k, ids.begin() + static_cast<size_t>(t) * k);
  }
  const prefill::RowTable table = prefill::RowTable::build(ids, T, k, n_expert);
  const std::vector<float> x = rng.vec(static_cast<size_t>(T) * n_cols);
  cuda::DeviceBuffer dx = test::to_device(x), entries = test::to_device(table.entries);
  cuda::DeviceBuffer gathered = test::poisoned(table.entries.size() * n_cols * sizeof(float));
  cuda::DeviceBuffer scattered = test::poisoned(table.entries.size() * n_cols * sizeof(float));
  for (int32_t e : table.active) {
    const int32_t off = table.offsets[e];
    cuda::gather_rows(dx.as<float>(), n_cols, entries.as<int32_t>() + off, table.rows(e), k,
                      gathered.as<float>() + static_cast<size_t>(off) * n_cols, test_stream().get());
    cuda::scatter_rows(gathered.as<float>() + static_cast<size_t>(off) * n_cols, n_cols, entries.as<int32_t>() + off,
                       table.rows(e), scattered.as<float>(), test_stream().get());
  }
  std::vector<float> want_gathered(table.entries.size() * n_cols), want_scattered(want_gathered.size());
  for (size_t r = 0; r < table.entries.size(); ++r) {
    const int32_t entry = table.entries[r];
    std::copy_n(&x[static_cast<size_t>(entry / k) * n_cols], n_cols, &want_gathered[r * n_cols]);
    std::copy_n(&x[static_cast<size_t>(entry / k) * n_cols], n_cols, &want_scattered[static_cast<size_t>(entry) * n_cols]);
  }
  CHECK_REPORT(test::mismatches(test::to_host<float>(gathered, want_gathered.size()), want_gathered, {0.0, 0.0}));
  CHECK_REPORT(test::mismatches(test::to_host<float>(scattered, want_scattered.size()), want_scattered, {0.0, 0.0}));
}

TEST_CASE("route_topk rejects k outside [1, n_expert]") {
  float* none = nullptr;
  int32_t* no_ids = nullptr;
  CHECK_THROWS_AS(cuda::route_topk(none, 1, 8, 9, RouterMode::SoftmaxTopkNorm, no_ids, none, test_stream().get()),
                  core::Error);
  CHECK_THROWS_AS(cuda::route_topk(none, 1, 8, 0, RouterMode::SoftmaxTopkNorm, no_ids, none, test_stream().get()),
                  core::Error);
}
