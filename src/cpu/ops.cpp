// Reference implementations of the row ops declared in ops.h; the orders written there are the contract.
#include "cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/base/error.h"
#include "core/runtime/kv_cache.h"

namespace strata::core::cpu {

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  if (n < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "rmsnorm: n must be >= 1, got {}", n);
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float r = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = w ? x[i] * r * w[i] : x[i] * r;
}

namespace {

// Shared by both RoPE modes: they differ only in which two elements form pair i.
template <typename PairIndex>
void rope(const char* name, float* x, int n_head, int head_dim, int32_t pos, float freq_base, int n_rot,
          PairIndex pair) {
  if (n_head < 1 || n_rot < 2 || n_rot % 2 != 0 || n_rot > head_dim) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "{}: need n_head >= 1 and even 0 < n_rot <= head_dim (n_head={} n_rot={} head_dim={})",
         name, n_head, n_rot, head_dim);
  }
  const int half = n_rot / 2;
  std::vector<float> cos_t(half), sin_t(half);
  for (int i = 0; i < half; ++i) {
    const double theta = static_cast<double>(pos) * std::pow(static_cast<double>(freq_base), -2.0 * i / n_rot);
    cos_t[i] = static_cast<float>(std::cos(theta));
    sin_t[i] = static_cast<float>(std::sin(theta));
  }
  for (int h = 0; h < n_head; ++h) {
    float* xh = x + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const auto [ia, ib] = pair(i, half);
      const float a = xh[ia], b = xh[ib];
      xh[ia] = a * cos_t[i] - b * sin_t[i];
      xh[ib] = a * sin_t[i] + b * cos_t[i];
    }
  }
}

}  // namespace

void rope_neox(float* x, int n_head, int head_dim, int32_t pos, float freq_base, int n_rot) {
  rope("rope_neox", x, n_head, head_dim, pos, freq_base, n_rot,
       [](int i, int half) { return std::pair<int, int>(i, i + half); });
}

void rope_norm(float* x, int n_head, int head_dim, int32_t pos, float freq_base, int n_rot) {
  rope("rope_norm", x, n_head, head_dim, pos, freq_base, n_rot,
       [](int i, int) { return std::pair<int, int>(2 * i, 2 * i + 1); });
}

void softmax(float* x, int64_t n) {
  if (n < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "softmax: n must be >= 1, got {}", n);
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  for (int64_t i = 0; i < n; ++i) x[i] /= s;
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}

namespace {

// Orders expert ids by descending value, equal values by lower id.
struct ByValueThenId {
  const float* v;
  bool operator()(int32_t a, int32_t b) const { return v[a] != v[b] ? v[a] > v[b] : a < b; }
};

}  // namespace

void route_topk(const float* logits, int n_expert, int k, RouterMode mode, int32_t* out_ids, float* out_weights) {
  if (n_expert < 1 || k < 1 || k > n_expert) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "route_topk: need 1 <= k <= n_expert (k={} n_expert={})", k, n_expert);
  }
  for (int e = 0; e < n_expert; ++e) {
    // A NaN would break the ordering the selection relies on; it means a bug upstream.
    if (!std::isfinite(logits[e])) fail(STRATA_ERR_INTERNAL, "route_topk: logit of expert {} is {}", e, logits[e]);
  }
  std::vector<float> p(logits, logits + n_expert);
  if (mode != RouterMode::TopkSoftmax) softmax(p.data(), n_expert);

  // p now holds what the mode selects on: probabilities, or raw logits.
  std::vector<int32_t> order(n_expert);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), ByValueThenId{p.data()});

  std::vector<float> w(k);
  for (int j = 0; j < k; ++j) w[j] = p[order[j]];
  switch (mode) {
    case RouterMode::SoftmaxTopkNorm: {
      float s = 0.0f;
      for (int j = 0; j < k; ++j) s += w[j];
      for (int j = 0; j < k; ++j) w[j] /= s;
      break;
    }
    case RouterMode::SoftmaxTopk:
      break;
    case RouterMode::TopkSoftmax:
      softmax(w.data(), k);
      break;
    default:
      fail(STRATA_ERR_INVALID_ARGUMENT, "route_topk: unknown router mode {}", static_cast<int>(mode));
  }

  // Final order by weight; rounding in the normalisation may have made equal
  // weights out of different values, so ties are re-broken by id.
  std::vector<float> by_id(n_expert, 0.0f);
  for (int j = 0; j < k; ++j) by_id[order[j]] = w[j];
  std::sort(order.begin(), order.begin() + k, ByValueThenId{by_id.data()});
  for (int j = 0; j < k; ++j) {
    out_ids[j] = order[j];
    out_weights[j] = by_id[order[j]];
  }
}

void attention_rows(const float* Q, int64_t n_rows, const KvView& k, const KvView& v, int n_head, int32_t n_kv,
                    float scale, float* out) {
  const int n_head_kv = k.n_head_kv;
  if (v.n_head_kv != n_head_kv || v.n_ctx != k.n_ctx) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "attention: K view ({} heads, {} positions) and V view ({} heads, {} positions) disagree",
         n_head_kv, k.n_ctx, v.n_head_kv, v.n_ctx);
  }
  if (n_head < 1 || n_head_kv < 1 || n_head % n_head_kv != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "attention: n_head {} is not a multiple of n_head_kv {}", n_head, n_head_kv);
  }
  if (n_rows < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "attention: {} query rows", n_rows);
  const int64_t n_last = static_cast<int64_t>(n_kv) + n_rows - 1;  // the last row's keys
  if (n_kv < 1 || n_last > k.n_ctx) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "attention: keys [1, {}] of {} rows outside [1, {}]", n_last, n_rows, k.n_ctx);
  }
  const auto n_max = static_cast<int32_t>(n_last);
  for (int32_t j = 0; j < n_max; ++j) {
    if (!k.is_written(j)) fail(STRATA_ERR_STATE, "attention: KV position {} of [0, {}) has not been written", j, n_max);
  }
  const int dk = k.head_dim, dv = v.head_dim;
  const int group = n_head / n_head_kv;
  // Per KV head, its rows are read once, kBlock positions at a time, for all
  // the query rows and the `group` query heads that share it; the keys of a
  // block are kept transposed (dimension-major) so the dot products of its
  // positions advance together in vector lanes, each still summed over
  // dimensions 0, 1, ... in order. Each (row, head)'s operations are those of
  // the definition: its scores in position order, softmax, its output in
  // position order.
  constexpr int32_t kBlock = 256;
  const size_t per_row = static_cast<size_t>(group) * n_max;  // a row's scores, head after head
  std::vector<float> scores(static_cast<size_t>(n_rows) * per_row);
  std::vector<float> rows(static_cast<size_t>(kBlock) * std::max(dk, dv)), key(dk), dots(kBlock);
  auto row_keys = [&](int64_t r) { return n_kv + static_cast<int32_t>(r); };
  for (int hkv = 0; hkv < n_head_kv; ++hkv) {
    for (int32_t j0 = 0; j0 < n_max; j0 += kBlock) {
      const int32_t nb = std::min(kBlock, n_max - j0);
      for (int32_t j = 0; j < nb; ++j) {
        k.read(j0 + j, hkv, key.data());
        for (int i = 0; i < dk; ++i) rows[static_cast<size_t>(i) * kBlock + j] = key[i];
      }
      for (int64_t r = 0; r < n_rows; ++r) {
        const int32_t nr = std::min(nb, row_keys(r) - j0);
        for (int g = 0; g < group && nr > 0; ++g) {
          const float* qh = Q + (r * n_head + hkv * group + g) * dk;
          std::fill(dots.begin(), dots.begin() + nr, 0.0f);
          for (int i = 0; i < dk; ++i) {
            const float qi = qh[i];
            const float* ki = &rows[static_cast<size_t>(i) * kBlock];
            for (int32_t j = 0; j < nr; ++j) dots[j] += qi * ki[j];
          }
          float* s = &scores[r * per_row + static_cast<size_t>(g) * n_max + j0];
          for (int32_t j = 0; j < nr; ++j) s[j] = scale * dots[j];
        }
      }
    }
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int g = 0; g < group; ++g) {
        softmax(&scores[r * per_row + static_cast<size_t>(g) * n_max], row_keys(r));
        float* oh = out + (r * n_head + hkv * group + g) * dv;
        std::fill(oh, oh + dv, 0.0f);
      }
    }
    for (int32_t j0 = 0; j0 < n_max; j0 += kBlock) {
      const int32_t nb = std::min(kBlock, n_max - j0);
      for (int32_t j = 0; j < nb; ++j) v.read(j0 + j, hkv, &rows[static_cast<size_t>(j) * dv]);
      for (int64_t r = 0; r < n_rows; ++r) {
        const int32_t nr = std::min(nb, row_keys(r) - j0);
        for (int g = 0; g < group && nr > 0; ++g) {
          const float* sg = &scores[r * per_row + static_cast<size_t>(g) * n_max + j0];
          float* oh = out + (r * n_head + hkv * group + g) * dv;
          for (int32_t j = 0; j < nr; ++j) {
            const float* vr = &rows[static_cast<size_t>(j) * dv];
            for (int i = 0; i < dv; ++i) oh[i] += sg[j] * vr[i];
          }
        }
      }
    }
  }
}

void attention_row(const float* q, const KvView& k, const KvView& v, int n_head, int32_t n_kv, float scale,
                   float* out) {
  attention_rows(q, 1, k, v, n_head, n_kv, scale, out);
}

}  // namespace strata::core::cpu
