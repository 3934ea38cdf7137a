// CPU reference ops vs naive float64 implementations: RMSNorm, RoPE, softmax, SwiGLU, router, GQA attention.
//
// Tolerances are written next to each check with the reason; u = 2^-24 is the
// F32 unit roundoff. Inputs are fresh random values each run (seed in the
// failure message, STRATA_TEST_SEED=n replays), outputs start as NaN.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/runtime/kv_cache.h"
#include "cpu/ops.h"
#include "test_random.h"

using namespace strata::core;
using namespace strata::core::cpu;
using strata::test::poison;
using strata::test::Rng;

namespace {

constexpr double u = 0x1p-24;

// ---- float64 references, written the obvious way ----

std::vector<double> ref_rmsnorm(const std::vector<float>& x, const float* w, double eps) {
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double r = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * (w ? w[i] : 1.0);
  return y;
}

// neox: pair (i, i + n_rot/2); otherwise (2i, 2i+1).
std::vector<double> ref_rope(const std::vector<float>& x, int n_head, int head_dim, int pos, double base, int n_rot,
                             bool neox) {
  std::vector<double> y(x.begin(), x.end());
  for (int h = 0; h < n_head; ++h) {
    for (int i = 0; i < n_rot / 2; ++i) {
      const double theta = pos * std::pow(base, -2.0 * i / n_rot);
      const int a = h * head_dim + (neox ? i : 2 * i), b = h * head_dim + (neox ? i + n_rot / 2 : 2 * i + 1);
      y[a] = x[a] * std::cos(theta) - double(x[b]) * std::sin(theta);
      y[b] = x[a] * std::sin(theta) + double(x[b]) * std::cos(theta);
    }
  }
  return y;
}

std::vector<double> ref_softmax(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> p(x.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += p[i] = std::exp(x[i] - m);
  for (double& v : p) v /= s;
  return p;
}

double ref_silu(double x) { return x / (1 + std::exp(-x)); }

// ---- comparison helper ----

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Checks |got - ref| <= tol(i) for every element; NaN fails.
template <typename Tol>
void check_close(const std::vector<float>& got, const std::vector<double>& ref, Tol tol) {
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]);
    if (!(err <= tol(i))) {
      INFO("element " << i << ": got " << got[i] << " want " << ref[i] << " err " << err << " tol " << tol(i));
      CHECK(err <= tol(i));
    }
  }
}

}  // namespace

TEST_CASE("rmsnorm matches float64") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int64_t n : {1, 7, 64, 2048, 4096}) {
    for (bool with_w : {false, true}) {
      INFO("n=" << n << " weights=" << with_w);
      const auto x = rng.vec(n, 3.0f), w = rng.vec(n, 2.0f);
      const float eps = 1e-6f;
      std::vector<float> y(n);
      poison(y);
      rmsnorm(x.data(), with_w ? w.data() : nullptr, y.data(), n, eps);
      const auto ref = ref_rmsnorm(x, with_w ? w.data() : nullptr, eps);
      // The F32 sum of n positive squares has relative error <= (n-1) u; the
      // inverse square root halves it; ~6 more roundings (divide, add eps,
      // sqrt, reciprocal, two products). Per element, relative.
      const double rel = (n / 2.0 + 8) * u;
      check_close(y, ref, [&](size_t i) { return rel * std::fabs(ref[i]); });
      // In place gives the same bits.
      auto z = x;
      rmsnorm(z.data(), with_w ? w.data() : nullptr, z.data(), n, eps);
      CHECK(std::equal(z.begin(), z.end(), y.begin()));
    }
  }
}

TEST_CASE("rope neox and norm match float64, including large positions and partial rotation") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  struct Case { int n_head, head_dim, n_rot; int32_t pos; float base; };
  const Case cases[] = {{4, 128, 128, 17, 1e6f}, {2, 64, 64, 100000, 1e4f}, {3, 64, 32, 4095, 1e4f},
                        {1, 8, 8, 1, 10.0f}, {5, 128, 128, 262143, 1e6f}, {2, 6, 4, 3, 1e4f}};
  for (const Case& c : cases) {
    for (bool neox : {true, false}) {
      INFO("neox=" << neox << " n_head=" << c.n_head << " head_dim=" << c.head_dim << " n_rot=" << c.n_rot
                   << " pos=" << c.pos);
      const auto x = rng.vec(static_cast<size_t>(c.n_head) * c.head_dim, 2.0f);
      auto y = x;
      (neox ? rope_neox : rope_norm)(y.data(), c.n_head, c.head_dim, c.pos, c.base, c.n_rot);
      const auto ref = ref_rope(x, c.n_head, c.head_dim, c.pos, c.base, c.n_rot, neox);
      // cos/sin are rounded once to F32 (u each), then a*c - b*s in F32: two
      // products and a sum, so |err| <= 4u (|a| + |b|), and |a|, |b| <= 2 here.
      const double tol = 4 * u * 4.0;
      check_close(y, ref, [&](size_t) { return tol; });
      // Elements past n_rot are untouched, bit for bit.
      for (int h = 0; h < c.n_head; ++h)
        for (int i = c.n_rot; i < c.head_dim; ++i) CHECK(y[h * c.head_dim + i] == x[h * c.head_dim + i]);
    }
  }
}

TEST_CASE("rope: the two modes pair different elements, and position 0 is the identity") {
  // head_dim 4, n_rot 4, pos 1, base 1: theta = 1 for both pairs.
  const std::vector<float> x = {1, 2, 3, 4};
  const float c = std::cos(1.0f), s = std::sin(1.0f);
  auto neox = x, norm = x;
  rope_neox(neox.data(), 1, 4, 1, 1.0f, 4);
  rope_norm(norm.data(), 1, 4, 1, 1.0f, 4);
  // neox pairs (0,2) and (1,3); norm pairs (0,1) and (2,3).
  CHECK(neox[0] == Catch::Approx(1 * c - 3 * s));
  CHECK(neox[2] == Catch::Approx(1 * s + 3 * c));
  CHECK(neox[1] == Catch::Approx(2 * c - 4 * s));
  CHECK(norm[0] == Catch::Approx(1 * c - 2 * s));
  CHECK(norm[1] == Catch::Approx(1 * s + 2 * c));
  CHECK(norm[3] == Catch::Approx(3 * s + 4 * c));

  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const auto v = rng.vec(256);
  auto a = v, b = v;
  rope_neox(a.data(), 2, 128, 0, 1e6f, 128);
  rope_norm(b.data(), 2, 128, 0, 1e6f, 128);
  CHECK(a == v);
  CHECK(b == v);

  CHECK_THROWS_AS(rope_neox(a.data(), 1, 8, 1, 1e4f, 9), Error);   // odd
  CHECK_THROWS_AS(rope_norm(a.data(), 1, 8, 1, 1e4f, 10), Error);  // > head_dim
  CHECK_THROWS_AS(rope_norm(a.data(), 0, 8, 1, 1e4f, 8), Error);
}

TEST_CASE("softmax, silu and swiglu match float64") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int64_t n : {1, 2, 9, 128, 1000}) {
    INFO("n=" << n);
    const auto x = rng.vec(n, 20.0f);  // spread wide so max subtraction matters
    std::vector<float> p = x;
    softmax(p.data(), n);
    const auto ref = ref_softmax(std::vector<double>(x.begin(), x.end()));
    // x - max rounds by u |x - max|, which expf turns into that relative
    // error; expf is within ~1 ulp; the F32 sum of n positive terms has
    // relative error <= (n-1) u; one division. Per element, relative.
    const double m = *std::max_element(x.begin(), x.end());
    check_close(p, ref, [&](size_t i) { return (n + 8 + std::fabs(x[i] - m)) * u * ref[i]; });
  }
  // Large logits would overflow expf without the max subtraction.
  std::vector<float> big = {1000.0f, 999.0f, 998.0f};
  softmax(big.data(), 3);
  const auto ref_big = ref_softmax({1000.0, 999.0, 998.0});
  check_close(big, ref_big, [&](size_t i) { return 8 * u * ref_big[i]; });

  const int64_t n = 4096;
  const auto g = rng.vec(n, 8.0f), up = rng.vec(n, 3.0f);
  std::vector<float> out(n);
  poison(out);
  swiglu(g.data(), up.data(), out.data(), n);
  std::vector<double> ref(n);
  for (int64_t i = 0; i < n; ++i) ref[i] = ref_silu(g[i]) * up[i];
  // silu: expf (~1 ulp), an add, a divide; then one product: ~6u relative.
  check_close(out, ref, [&](size_t i) { return 8 * u * std::fabs(ref[i]); });
  for (int64_t i = 0; i < 16; ++i) CHECK(silu(g[i]) == Catch::Approx(ref_silu(g[i])).epsilon(1e-6));
  auto in_place = g;
  swiglu(in_place.data(), up.data(), in_place.data(), n);
  CHECK(in_place == out);
}

namespace {

// Router reference: ranks by the selected-on value (p or logit) in float64,
// ties by lower id; returns (id, weight) sorted by weight desc, ties lower id.
std::vector<std::pair<int32_t, double>> ref_route(const std::vector<float>& logits, int k, RouterMode mode) {
  const int n = static_cast<int>(logits.size());
  std::vector<double> key(logits.begin(), logits.end());
  if (mode != RouterMode::TopkSoftmax) key = ref_softmax(key);
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return key[a] > key[b]; });
  ids.resize(k);
  std::vector<double> w(k);
  for (int j = 0; j < k; ++j) w[j] = key[ids[j]];
  if (mode == RouterMode::SoftmaxTopkNorm) {
    const double s = std::accumulate(w.begin(), w.end(), 0.0);
    for (double& v : w) v /= s;
  } else if (mode == RouterMode::TopkSoftmax) {
    w = ref_softmax(w);
  }
  std::vector<std::pair<int32_t, double>> out;
  for (int j = 0; j < k; ++j) out.emplace_back(ids[j], w[j]);
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return out;
}

const RouterMode kModes[] = {RouterMode::SoftmaxTopkNorm, RouterMode::SoftmaxTopk, RouterMode::TopkSoftmax};

}  // namespace

TEST_CASE("route_topk matches float64 in every mode") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int n_expert : {1, 8, 60, 128}) {
    for (int k : {1, 2, 8, 40}) {  // 40: past the size where std::sort happens to be stable
      if (k > n_expert) continue;
      for (RouterMode mode : kModes) {
       for (bool coarse : {false, true}) {
        INFO("n_expert=" << n_expert << " k=" << k << " mode=" << static_cast<int>(mode) << " coarse=" << coarse);
        // Coarse logits take 6 values, so most experts tie with others:
        // equal logits give bit-equal p, and the lower id must win.
        auto logits = rng.vec(n_expert, 4.0f);
        if (coarse)
          for (float& l : logits) l = std::round(l * 0.75f) * 0.5f;
        std::vector<int32_t> ids(k, -1);
        std::vector<float> w(k);
        poison(w);
        route_topk(logits.data(), n_expert, k, mode, ids.data(), w.data());
        const auto ref = ref_route(logits, k, mode);
        // Weights, relative: softmax over n is within (n + 8 + |x - max|) u
        // (see the softmax test; |x - max| <= 8 here); the renormalisation
        // adds a k-term sum and a divide; TopkSoftmax is a k-way softmax.
        const double rel = mode == RouterMode::TopkSoftmax ? (k + 16) * u : (2 * n_expert + k + 32) * u;
        for (int j = 0; j < k; ++j) {
          CHECK(ids[j] == ref[j].first);
          CHECK(std::fabs(w[j] - ref[j].second) <= rel * ref[j].second);
          if (j > 0) CHECK((w[j - 1] > w[j] || (w[j - 1] == w[j] && ids[j - 1] < ids[j])));
        }
        if (mode != RouterMode::SoftmaxTopk) {
          CHECK(std::accumulate(w.begin(), w.end(), 0.0) == Catch::Approx(1.0).epsilon(k * 4 * u));
        }
       }
      }
    }
  }
}

TEST_CASE("route_topk breaks ties by lower expert id") {
  // Experts 1, 3, 4 tie for the top; 2 and 5 tie for fourth place.
  const std::vector<float> logits = {0.5f, 2.0f, 1.0f, 2.0f, 2.0f, 1.0f};
  for (RouterMode mode : kModes) {
    INFO("mode=" << static_cast<int>(mode));
    int32_t ids[4];
    float w[4];
    route_topk(logits.data(), 6, 2, mode, ids, w);
    CHECK(ids[0] == 1);
    CHECK(ids[1] == 3);
    CHECK(w[0] == w[1]);
    route_topk(logits.data(), 6, 4, mode, ids, w);
    CHECK(std::vector<int32_t>(ids, ids + 4) == std::vector<int32_t>{1, 3, 4, 2});
  }
  // All equal: the first k ids, equal weights.
  const std::vector<float> flat(8, 0.25f);
  int32_t ids[3];
  float w[3];
  route_topk(flat.data(), 8, 3, RouterMode::SoftmaxTopkNorm, ids, w);
  CHECK(std::vector<int32_t>(ids, ids + 3) == std::vector<int32_t>{0, 1, 2});
  CHECK(w[0] == Catch::Approx(1.0 / 3));
  route_topk(flat.data(), 8, 3, RouterMode::SoftmaxTopk, ids, w);
  CHECK(w[2] == 0.125f);  // 1/8 exactly: expf(0) = 1, sum = 8
  route_topk(flat.data(), 8, 3, RouterMode::TopkSoftmax, ids, w);
  CHECK(std::vector<int32_t>(ids, ids + 3) == std::vector<int32_t>{0, 1, 2});
  CHECK(w[1] == Catch::Approx(1.0 / 3));

  auto bad = flat;
  bad[5] = std::nanf("");
  CHECK_THROWS_AS(route_topk(bad.data(), 8, 3, RouterMode::SoftmaxTopkNorm, ids, w), Error);
  bad[5] = INFINITY;
  CHECK_THROWS_AS(route_topk(bad.data(), 8, 3, RouterMode::TopkSoftmax, ids, w), Error);
  CHECK_THROWS_AS(route_topk(flat.data(), 8, 9, RouterMode::SoftmaxTopk, ids, w), Error);
  CHECK_THROWS_AS(route_topk(flat.data(), 8, 0, RouterMode::SoftmaxTopk, ids, w), Error);
}

TEST_CASE("route_topk: TopkSoftmax and SoftmaxTopkNorm agree (same math, different order)") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const auto logits = rng.vec(128, 5.0f);
  int32_t ia[8], ib[8];
  float wa[8], wb[8];
  route_topk(logits.data(), 128, 8, RouterMode::TopkSoftmax, ia, wa);
  route_topk(logits.data(), 128, 8, RouterMode::SoftmaxTopkNorm, ib, wb);
  for (int j = 0; j < 8; ++j) {
    CHECK(ia[j] == ib[j]);
    CHECK(wa[j] == Catch::Approx(wb[j]).epsilon(300 * u));
  }
}

namespace {

struct AttnCase {
  int n_head, n_head_kv, dk, dv, n_pos, n_kv;
};

// out[h][i] in float64 from given K/V rows kv[pos][head][dim] (as doubles).
std::vector<double> ref_attention(const std::vector<float>& q, const std::vector<double>& K,
                                  const std::vector<double>& V, const AttnCase& c, double scale) {
  std::vector<double> out(static_cast<size_t>(c.n_head) * c.dv, 0.0);
  const int group = c.n_head / c.n_head_kv;
  for (int h = 0; h < c.n_head; ++h) {
    const int g = h / group;
    std::vector<double> s(c.n_kv);
    for (int j = 0; j < c.n_kv; ++j) {
      double dot = 0;
      for (int i = 0; i < c.dk; ++i) dot += q[h * c.dk + i] * K[(size_t(j) * c.n_head_kv + g) * c.dk + i];
      s[j] = scale * dot;
    }
    const auto p = ref_softmax(s);
    for (int j = 0; j < c.n_kv; ++j)
      for (int i = 0; i < c.dv; ++i) out[h * c.dv + i] += p[j] * V[(size_t(j) * c.n_head_kv + g) * c.dv + i];
  }
  return out;
}

}  // namespace

TEST_CASE("attention_row with GQA over F16 and INT8 caches matches float64") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const AttnCase cases[] = {{8, 2, 64, 64, 40, 37}, {4, 4, 128, 96, 300, 300}, {6, 1, 32, 32, 5, 1},
                            {32, 4, 128, 128, 260, 257}};
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (const AttnCase& c : cases) {
      INFO("type=" << (type == KvType::F16 ? "f16" : "int8") << " heads=" << c.n_head << "/" << c.n_head_kv
                   << " dk=" << c.dk << " dv=" << c.dv << " n_kv=" << c.n_kv);
      const int layer = 1;
      KvCache cache(type, 2, c.n_pos + 3, c.n_head_kv, c.dk, c.dv);
      const size_t k_row = size_t(c.n_head_kv) * c.dk, v_row = size_t(c.n_head_kv) * c.dv;
      std::vector<float> K, V;  // what was written to `layer`
      for (int pos = 0; pos < c.n_pos; ++pos) {
        const auto k = rng.vec(k_row, 1.5f), v = rng.vec(v_row, 2.0f);
        cache.write(layer, pos, k.data(), v.data());
        K.insert(K.end(), k.begin(), k.end());
        V.insert(V.end(), v.begin(), v.end());
        const auto other_k = rng.vec(k_row, 9.0f), other_v = rng.vec(v_row, 9.0f);
        cache.write(0, pos, other_k.data(), other_v.data());  // another layer must not leak in
      }
      // The values the cache holds, read back.
      std::vector<double> Ks(K.size()), Vs(V.size());
      std::vector<float> row(std::max(c.dk, c.dv));
      for (int pos = 0; pos < c.n_pos; ++pos) {
        for (int g = 0; g < c.n_head_kv; ++g) {
          cache.read_k(layer, pos, g, row.data());
          std::copy(row.begin(), row.begin() + c.dk, Ks.begin() + (size_t(pos) * c.n_head_kv + g) * c.dk);
          cache.read_v(layer, pos, g, row.data());
          std::copy(row.begin(), row.begin() + c.dv, Vs.begin() + (size_t(pos) * c.n_head_kv + g) * c.dv);
        }
      }
      const auto q = rng.vec(size_t(c.n_head) * c.dk, 1.0f);
      const float scale = 1.0f / std::sqrt(float(c.dk));
      std::vector<float> out(size_t(c.n_head) * c.dv);
      poison(out);
      attention_row(q.data(), cache.k_view(layer), cache.v_view(layer), c.n_head, c.n_kv, scale, out.data());

      // (c) The order ops.h writes down, in F32 on the values the cache holds,
      // head by head: exactly the same bits, however attention_row is blocked.
      {
        std::vector<float> want(out.size()), s(static_cast<size_t>(c.n_kv));
        const int group = c.n_head / c.n_head_kv;
        for (int h = 0; h < c.n_head; ++h) {
          const size_t g = static_cast<size_t>(h / group);
          for (int j = 0; j < c.n_kv; ++j) {
            float dot = 0.0f;
            for (int i = 0; i < c.dk; ++i) {
              dot += q[size_t(h) * c.dk + i] * static_cast<float>(Ks[(size_t(j) * c.n_head_kv + g) * c.dk + i]);
            }
            s[size_t(j)] = scale * dot;
          }
          softmax(s.data(), c.n_kv);
          for (int i = 0; i < c.dv; ++i) {
            float o = 0.0f;
            for (int j = 0; j < c.n_kv; ++j) {
              o += s[size_t(j)] * static_cast<float>(Vs[(size_t(j) * c.n_head_kv + g) * c.dv + i]);
            }
            want[size_t(h) * c.dv + i] = o;
          }
        }
        CHECK(std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) == 0);
      }

      // S = the largest scale * sum |q_i k_i| over heads and positions: it bounds score errors.
      double S = 0, q_abs_sum = 0;
      for (int h = 0; h < c.n_head; ++h) {
        double qa = 0;
        for (int i = 0; i < c.dk; ++i) qa += std::fabs(q[h * c.dk + i]);
        q_abs_sum = std::max(q_abs_sum, qa);
        for (int j = 0; j < c.n_kv; ++j) {
          double a = 0;
          for (int i = 0; i < c.dk; ++i)
            a += std::fabs(q[h * c.dk + i] * Ks[(size_t(j) * c.n_head_kv + h / (c.n_head / c.n_head_kv)) * c.dk + i]);
          S = std::max(S, scale * a);
        }
      }
      const double vmax = max_abs(Vs);
      // (a) Arithmetic only, against the stored values: an F32 dot of dk terms
      // errs by <= dk u S, the scale product by u S, s - max by 2 u S; a score
      // error e moves each p_j by a factor within exp(+-2e); softmax and the
      // weighted V sum add (n_kv + 8) u and n_kv u.
      const double tol_a = vmax * u * (2 * (c.dk + 3) * S + 2 * c.n_kv + 16);
      const auto ref_a = ref_attention(q, Ks, Vs, c, scale);
      check_close(out, ref_a, [&](size_t) { return tol_a; });

      // (b) Against the unquantized K/V: storage error per element is <= 2^-11
      // relative for F16, <= amax/254 for INT8 (amax <= 1.5 for K, 2 for V
      // here). A score error e gives |dp| <= (exp(2e) - 1) p, so the output
      // moves by <= vmax (exp(2e) - 1) + the V storage error.
      double e_score, v_err;
      if (type == KvType::F16) {
        e_score = S * 0x1p-11;
        v_err = vmax * 0x1p-11;
      } else {
        e_score = scale * q_abs_sum * 1.5 / 254;
        v_err = 2.0 / 254;
      }
      const double tol_b = (vmax + v_err) * (std::exp(2 * e_score) - 1) + v_err + tol_a;
      std::vector<double> Kd(K.begin(), K.end()), Vd(V.begin(), V.end());
      const auto ref_b = ref_attention(q, Kd, Vd, c, scale);
      INFO("tol_a=" << tol_a << " tol_b=" << tol_b);
      check_close(out, ref_b, [&](size_t) { return tol_b; });
    }
  }
}

TEST_CASE("attention_rows gives each prompt row attention_row's bits") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  // Rows whose key counts start below, at and past the 256-position blocks.
  struct Case {
    int n_head, n_head_kv, dk, dv, n_kv, n_rows;
  };
  for (const Case c : {Case{8, 2, 64, 64, 1, 40}, Case{4, 4, 32, 48, 250, 12}, Case{32, 4, 128, 128, 200, 70}}) {
    for (KvType type : {KvType::F16, KvType::Int8}) {
      INFO("heads=" << c.n_head << "/" << c.n_head_kv << " n_kv=" << c.n_kv << " rows=" << c.n_rows);
      const int n_pos = c.n_kv + c.n_rows - 1;
      KvCache cache(type, 1, n_pos + 2, c.n_head_kv, c.dk, c.dv);
      for (int pos = 0; pos < n_pos; ++pos) {
        const auto k = rng.vec(size_t(c.n_head_kv) * c.dk, 1.5f), v = rng.vec(size_t(c.n_head_kv) * c.dv, 2.0f);
        cache.write(0, pos, k.data(), v.data());
      }
      const auto Q = rng.vec(size_t(c.n_rows) * c.n_head * c.dk, 1.0f);
      std::vector<float> got(size_t(c.n_rows) * c.n_head * c.dv), want(got.size());
      poison(got);
      attention_rows(Q.data(), c.n_rows, cache.k_view(0), cache.v_view(0), c.n_head, c.n_kv, 0.125f, got.data());
      for (int r = 0; r < c.n_rows; ++r) {
        attention_row(&Q[size_t(r) * c.n_head * c.dk], cache.k_view(0), cache.v_view(0), c.n_head, c.n_kv + r, 0.125f,
                      &want[size_t(r) * c.n_head * c.dv]);
      }
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    }
  }
  // The last row's keys must exist.
  KvCache cache(KvType::F16, 1, 8, 2, 16, 16);
  const auto k = rng.vec(32), v = rng.vec(32), q = rng.vec(3 * 4 * 16);
  for (int pos = 0; pos < 4; ++pos) cache.write(0, pos, k.data(), v.data());
  std::vector<float> out(3 * 4 * 16);
  CHECK_NOTHROW(attention_rows(q.data(), 2, cache.k_view(0), cache.v_view(0), 4, 3, 0.25f, out.data()));
  CHECK_THROWS_AS(attention_rows(q.data(), 3, cache.k_view(0), cache.v_view(0), 4, 3, 0.25f, out.data()), Error);
  CHECK_THROWS_AS(attention_rows(q.data(), 0, cache.k_view(0), cache.v_view(0), 4, 3, 0.25f, out.data()), Error);
}

TEST_CASE("attention_row rejects unwritten positions and bad shapes") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  KvCache cache(KvType::F16, 1, 8, 2, 16, 16);
  const auto k = rng.vec(32), v = rng.vec(32), q = rng.vec(4 * 16);
  std::vector<float> out(4 * 16);
  for (int pos = 0; pos < 3; ++pos) cache.write(0, pos, k.data(), v.data());
  CHECK_NOTHROW(attention_row(q.data(), cache.k_view(0), cache.v_view(0), 4, 3, 0.25f, out.data()));
  try {
    attention_row(q.data(), cache.k_view(0), cache.v_view(0), 4, 4, 0.25f, out.data());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_STATE);
  }
  CHECK_THROWS_AS(attention_row(q.data(), cache.k_view(0), cache.v_view(0), 3, 3, 0.25f, out.data()), Error);
  CHECK_THROWS_AS(attention_row(q.data(), cache.k_view(0), cache.v_view(0), 4, 0, 0.25f, out.data()), Error);
  CHECK_THROWS_AS(attention_row(q.data(), cache.k_view(0), cache.v_view(0), 4, 9, 0.25f, out.data()), Error);

  // All keys equal: the output is the mean of the V rows, exactly as softmax
  // gives every position 1/n.
  KvCache flat(KvType::F16, 1, 4, 1, 4, 2);
  const std::vector<float> kk = {1, 1, 1, 1};
  const float vs[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  for (int pos = 0; pos < 4; ++pos) flat.write(0, pos, kk.data(), vs[pos]);
  const std::vector<float> q1 = {0.5f, -1, 2, 0.25f};
  float o[2];
  attention_row(q1.data(), flat.k_view(0), flat.v_view(0), 1, 4, 1.0f, o);
  CHECK(o[0] == 4.0f);
  CHECK(o[1] == 5.0f);
}
