// Reference MoE: one expert FFN vs float64, moe_forward vs the per-row definition, chunk == single tokens, threads.
#include <cmath>
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/runtime/thread_pool.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "prefill/row_table.h"
#include "test_matrices.h"
#include "test_random.h"

using namespace strata::core;
using namespace strata::core::cpu;
using strata::prefill::RowTable;
using strata::test::poison;
using strata::test::Rng;

namespace {

// A GGUF-like tensor description, as the model's TensorRef provides it.
struct FakeTensor {
  GgmlType type;
  const uint8_t* data;
  int64_t ne[4];
};

// Random experts of one layer, each expert's matrix quantized on its own and
// placed at e * row_size(type, ne0) * ne1, as GGUF lays out 3-D tensors.
struct Experts {
  int64_t n_embd, n_ff;
  int n_expert;
  GgmlType tg, tu, td;
  std::vector<uint8_t> gate, up, down;

  Experts(Rng& rng, GgmlType g, GgmlType u, GgmlType d, int64_t embd, int64_t ff, int n)
      : n_embd(embd), n_ff(ff), n_expert(n), tg(g), tu(u), td(d) {
    for (int e = 0; e < n; ++e) {
      append(gate, strata::test::random_matrix(rng, g, embd, ff, 0.4f));
      append(up, strata::test::random_matrix(rng, u, embd, ff, 0.4f));
      append(down, strata::test::random_matrix(rng, d, ff, embd, 0.3f));
    }
  }
  static void append(std::vector<uint8_t>& to, const std::vector<uint8_t>& m) { to.insert(to.end(), m.begin(), m.end()); }

  MoeWeights weights() const {
    const FakeTensor g{tg, gate.data(), {n_embd, n_ff, n_expert, 1}}, u{tu, up.data(), {n_embd, n_ff, n_expert, 1}},
        d{td, down.data(), {n_ff, n_embd, n_expert, 1}};
    return MoeWeights::of(g, u, d);
  }
  // Expert e's matrix of one tensor.
  const uint8_t* matrix(const std::vector<uint8_t>& t, GgmlType type, int64_t n_in, int64_t n_out, int e) const {
    return t.data() + e * row_size(type, n_in) * n_out;
  }
};

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

struct TypeSet {
  GgmlType g, u, d;
};
// Float weights; the Unsloth-style K-quant mix; a mix where gate and up take
// different activation kinds (F16 -> F32 activations, Q8_0 -> Q8A).
const TypeSet kTypeSets[] = {{GgmlType::F32, GgmlType::F32, GgmlType::F32},
                             {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K},
                             {GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q8_0},
                             {GgmlType::F16, GgmlType::Q8_0, GgmlType::BF16}};

}  // namespace

TEST_CASE("expert_ffn matches float64 on dequantized weights and activations") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t n_embd = 256, n_ff = 512;
  for (const TypeSet& ts : kTypeSets) {
    INFO("types " << type_traits(ts.g).name << "/" << type_traits(ts.u).name << "/" << type_traits(ts.d).name);
    const Experts ex(rng, ts.g, ts.u, ts.d, n_embd, n_ff, 3);
    const MoeWeights w = ex.weights();
    for (int e = 0; e < 3; ++e) {
      INFO("expert " << e);
      const auto x = rng.vec(n_embd, 1.5f);
      std::vector<float> y(n_embd), h(n_ff);
      poison(y);
      poison(h);
      expert_ffn(w, e, x.data(), y.data(), h.data());

      // First half: h = silu(gate . x) * (up . x), in float64 from the stored
      // weights and the activations vec_dot sees.
      const auto ag = strata::test::activation_values(ts.g, x.data(), n_embd);
      const auto au = strata::test::activation_values(ts.u, x.data(), n_embd);
      const uint8_t* G = ex.matrix(ex.gate, ts.g, n_embd, n_ff, e);
      const uint8_t* U = ex.matrix(ex.up, ts.u, n_embd, n_ff, e);
      for (int64_t r = 0; r < n_ff; ++r) {
        const auto wg = strata::test::weight_row(ts.g, G, n_embd, r), wu = strata::test::weight_row(ts.u, U, n_embd, r);
        const double g = strata::test::dot64(wg, ag), u = strata::test::dot64(wu, au);
        const double tg = strata::test::dot_tolerance(ts.g, wg, ag), tu = strata::test::dot_tolerance(ts.u, wu, au);
        const double sig = 1 / (1 + std::exp(-g)), silu_g = g * sig;
        const double ref = silu_g * u;
        // silu' = sig (1 + g (1 - sig)) is at most 1.1 in magnitude; the
        // product and silu's own F32 steps add ~8u relative.
        const double tol = 1.1 * tg * (std::fabs(u) + tu) + std::fabs(silu_g) * tu + 8 * 0x1p-24 * std::fabs(ref);
        if (!(std::fabs(h[r] - ref) <= tol)) {
          INFO("h[" << r << "] got " << h[r] << " want " << ref << " tol " << tol);
          CHECK(std::fabs(h[r] - ref) <= tol);
        }
      }
      // Second half: y = down . h, from the h computed above, prepared the way
      // down's type takes it.
      const auto ad = strata::test::activation_values(ts.d, h.data(), n_ff);
      const uint8_t* D = ex.matrix(ex.down, ts.d, n_ff, n_embd, e);
      for (int64_t r = 0; r < n_embd; ++r) {
        const auto wd = strata::test::weight_row(ts.d, D, n_ff, r);
        const double ref = strata::test::dot64(wd, ad), tol = strata::test::dot_tolerance(ts.d, wd, ad);
        if (!(std::fabs(y[r] - ref) <= tol)) {
          INFO("y[" << r << "] got " << y[r] << " want " << ref << " tol " << tol);
          CHECK(std::fabs(y[r] - ref) <= tol);
        }
      }
    }
  }
}

TEST_CASE("moe_forward: per-row definition, chunk == single tokens, any thread count, bit for bit") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t n_embd = 256, n_ff = 256;
  const int n_expert = 8;
  ThreadPool p1(1), p2(2), p3(3);
  for (const TypeSet& ts : kTypeSets) {
    for (int k : {1, 3}) {
      INFO("types " << type_traits(ts.g).name << "/" << type_traits(ts.u).name << "/" << type_traits(ts.d).name
                    << " k=" << k);
      const Experts ex(rng, ts.g, ts.u, ts.d, n_embd, n_ff, n_expert);
      const MoeWeights w = ex.weights();
      const int T = 7;
      const auto X = rng.vec(T * n_embd, 1.0f);
      std::vector<int32_t> ids(T * k);
      std::vector<float> wts(T * k);
      for (int t = 0; t < T; ++t) {
        const auto logits = rng.vec(n_expert, 3.0f);
        route_topk(logits.data(), n_expert, k, RouterMode::SoftmaxTopkNorm, &ids[t * k], &wts[t * k]);
      }
      const RowTable table = RowTable::build(ids, T, k, n_expert);

      std::vector<float> Y(T * n_embd);
      poison(Y);
      moe_forward(w, X.data(), table, wts.data(), Y.data(), &p2);

      // The definition: sum over slots in order of weight * expert_ffn, F32 from 0.
      std::vector<float> want(T * n_embd, 0.0f), ye(n_embd);
      for (int t = 0; t < T; ++t) {
        for (int s = 0; s < k; ++s) {
          expert_ffn(w, ids[t * k + s], &X[t * n_embd], ye.data());
          for (int64_t j = 0; j < n_embd; ++j) want[t * n_embd + j] += wts[t * k + s] * ye[j];
        }
      }
      CHECK(same_bits(Y.data(), want.data(), Y.size()));

      // Each token alone (decode) gives the same bits as the chunk.
      for (int t = 0; t < T; ++t) {
        std::vector<float> y1(n_embd);
        poison(y1);
        moe_forward_token(w, &X[t * n_embd], &ids[t * k], &wts[t * k], k, y1.data(), &p3);
        CHECK(same_bits(y1.data(), &Y[t * n_embd], n_embd));
      }
      // A chunk split 3 + 4 gives the same bits too.
      for (auto [t0, tn] : {std::pair{0, 3}, std::pair{3, 4}}) {
        const RowTable part = RowTable::build(std::span<const int32_t>(&ids[t0 * k], tn * k), tn, k, n_expert);
        std::vector<float> Yp(tn * n_embd);
        poison(Yp);
        moe_forward(w, &X[t0 * n_embd], part, &wts[t0 * k], Yp.data(), &p1);
        CHECK(same_bits(Yp.data(), &Y[t0 * n_embd], Yp.size()));
      }
      // Thread count does not matter.
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p1, &p3}) {
        std::vector<float> Yt(T * n_embd);
        poison(Yt);
        moe_forward(w, X.data(), table, wts.data(), Yt.data(), pool);
        CHECK(same_bits(Yt.data(), Y.data(), Y.size()));
      }
    }
  }
}

TEST_CASE("moe: shape and table checks") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const Experts ex(rng, GgmlType::F32, GgmlType::F32, GgmlType::F32, 32, 64, 4);
  const MoeWeights w = ex.weights();
  CHECK(w.n_embd == 32);
  CHECK(w.n_ff == 64);
  CHECK(w.n_expert == 4);
  CHECK(w.gate.stride == 32 * 64 * sizeof(float));
  CHECK(w.down.expert(3) == ex.down.data() + 3 * 64 * 32 * sizeof(float));

  const FakeTensor g{GgmlType::F32, ex.gate.data(), {32, 64, 4, 1}}, u{GgmlType::F32, ex.up.data(), {32, 64, 4, 1}};
  const FakeTensor d_bad{GgmlType::F32, ex.down.data(), {32, 64, 4, 1}};  // down not transposed
  CHECK_THROWS_AS(MoeWeights::of(g, u, d_bad), Error);
  const FakeTensor u_bad{GgmlType::F32, ex.up.data(), {32, 64, 3, 1}};
  const FakeTensor d{GgmlType::F32, ex.down.data(), {64, 32, 4, 1}};
  CHECK_THROWS_AS(MoeWeights::of(g, u_bad, d), Error);
  CHECK_NOTHROW(MoeWeights::of(g, u, d));

  const std::vector<int32_t> ids = {0, 1};
  const std::vector<float> wts = {0.5f, 0.5f}, x = rng.vec(32);
  std::vector<float> y(32);
  const RowTable wrong = RowTable::build(ids, 1, 2, 5);  // 5 experts, weights have 4
  CHECK_THROWS_AS(moe_forward(w, x.data(), wrong, wts.data(), y.data(), nullptr), Error);
  CHECK_THROWS_AS(expert_ffn(w, 4, x.data(), y.data()), Error);
  const int32_t bad_ids[] = {0, 7};
  CHECK_THROWS_AS(moe_forward_token(w, x.data(), bad_ids, wts.data(), 2, y.data(), nullptr), Error);
}

// Several experts in two pool dispatches: each job's rows equal expert_ffn's,
// whatever the pool, and a job of no rows writes nothing.
TEST_CASE("experts_rows and expert_rows equal expert_ffn for every job, bit for bit, on any thread count") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t n_embd = 256, n_ff = 512;
  ThreadPool pool(3);
  for (const TypeSet& ts : kTypeSets) {
    const Experts ex(rng, ts.g, ts.u, ts.d, n_embd, n_ff, 4);
    const MoeWeights w = ex.weights();
    const int experts[] = {3, 0, 2, 1};
    const int64_t rows[] = {1, 3, 0, 2};
    std::vector<std::vector<float>> X, got;
    std::vector<ExpertRows> jobs;
    for (int i = 0; i < 4; ++i) {
      X.push_back(rng.vec(std::max<int64_t>(rows[i], 1) * n_embd, 1.5f));
      got.emplace_back(static_cast<size_t>(std::max<int64_t>(rows[i], 1) * n_embd));
    }
    for (int i = 0; i < 4; ++i) jobs.push_back({experts[i], X[i].data(), rows[i], got[i].data()});
    for (ThreadPool* p : {&pool, static_cast<ThreadPool*>(nullptr)}) {
      for (auto& g : got) poison(g);
      experts_rows(w, jobs, p);
      for (int i = 0; i < 4; ++i) {
        INFO("job " << i << (p ? " pool" : " inline"));
        std::vector<float> want(got[i].size());
        poison(want);
        for (int64_t r = 0; r < rows[i]; ++r) expert_ffn(w, experts[i], &X[i][r * n_embd], &want[r * n_embd]);
        CHECK(std::memcmp(got[i].data(), want.data(), want.size() * sizeof(float)) == 0);
      }
    }
    // expert_rows: the one-job form.
    std::vector<float> one(got[1].size()), want(one.size());
    expert_rows(w, experts[1], X[1].data(), rows[1], one.data(), &pool);
    for (int64_t r = 0; r < rows[1]; ++r) expert_ffn(w, experts[1], &X[1][r * n_embd], &want[r * n_embd]);
    CHECK(std::memcmp(one.data(), want.data(), want.size() * sizeof(float)) == 0);
  }
  const Experts ex(rng, GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K, n_embd, n_ff, 2);
  std::vector<float> x = rng.vec(n_embd), y(n_embd);
  const ExpertRows bad[] = {{0, x.data(), 1, y.data()}, {2, x.data(), 1, y.data()}};
  CHECK_THROWS_AS(experts_rows(ex.weights(), bad, &pool), Error);
}

