// The reference MoE step: per-row expert FFNs in row-table order, then the fixed slot-order combine.
#include "core/cpu/moe.h"

#include <span>
#include <vector>

#include "core/cpu/matmul.h"
#include "core/cpu/ops.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "prefill/row_table.h"

namespace strata::core::cpu {

namespace {

// y[r] = vec_dot over the n_out rows of one expert matrix. Single-threaded:
// moe_forward parallelises over (token, slot) rows instead.
void expert_matvec(const ExpertTensor& t, int e, const void* act, float* y) {
  const uint8_t* m = t.expert(e);
  const size_t rb = t.row_bytes();
  for (int64_t r = 0; r < t.n_out; ++r) y[r] = vec_dot(t.type, m + static_cast<size_t>(r) * rb, act, t.n_in);
}

// Scratch for one row's FFN, reused across the rows of a range.
struct FfnScratch {
  std::vector<float> g, u;
};

// The body of expert_ffn with x already prepared for gate and up.
void ffn_prepared(const MoeWeights& w, int e, const void* x_gate, const void* x_up, FfnScratch& s, float* y,
                  float* h_out) {
  s.g.resize(w.n_ff);
  s.u.resize(w.n_ff);
  expert_matvec(w.gate, e, x_gate, s.g.data());
  expert_matvec(w.up, e, x_up, s.u.data());
  swiglu(s.g.data(), s.u.data(), s.g.data(), w.n_ff);  // h in g
  if (h_out) std::copy(s.g.begin(), s.g.end(), h_out);
  const ActivationRows h(w.down.type, s.g.data(), 1, w.n_ff, nullptr);
  expert_matvec(w.down, e, h.row(0), y);
}

void check_expert(const MoeWeights& w, int e) {
  if (e < 0 || e >= w.n_expert) fail(STRATA_ERR_INVALID_ARGUMENT, "moe: expert {} outside [0, {})", e, w.n_expert);
}

}  // namespace

void MoeWeights::check_shapes(int64_t g0, int64_t g1, int64_t g2, int64_t u0, int64_t u1, int64_t u2, int64_t d0,
                              int64_t d1, int64_t d2) {
  if (u0 != g0 || u1 != g1 || u2 != g2 || d0 != g1 || d1 != g0 || d2 != g2 || g2 > INT32_MAX) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "moe: expert tensor shapes disagree: gate [{}, {}, {}], up [{}, {}, {}], down [{}, {}, {}] (want gate = up = "
         "[n_embd, n_ff, n_expert], down = [n_ff, n_embd, n_expert])",
         g0, g1, g2, u0, u1, u2, d0, d1, d2);
  }
}

MoeWeights MoeWeights::make(GgmlType gate_type, const void* gate, GgmlType up_type, const void* up, GgmlType down_type,
                            const void* down, int64_t n_embd, int64_t n_ff, int32_t n_expert) {
  if (!gate || !up || !down || n_embd < 1 || n_ff < 1 || n_expert < 1) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "moe: missing expert tensor or bad shape n_embd={} n_ff={} n_expert={}", n_embd,
         n_ff, n_expert);
  }
  auto tensor = [](GgmlType type, const void* base, int64_t n_in, int64_t n_out) {
    return ExpertTensor{type, static_cast<const uint8_t*>(base), row_size(type, n_in) * static_cast<size_t>(n_out),
                        n_in, n_out};
  };
  MoeWeights w;
  w.gate = tensor(gate_type, gate, n_embd, n_ff);
  w.up = tensor(up_type, up, n_embd, n_ff);
  w.down = tensor(down_type, down, n_ff, n_embd);
  w.n_embd = n_embd;
  w.n_ff = n_ff;
  w.n_expert = n_expert;
  return w;
}

void expert_ffn(const MoeWeights& w, int expert, const float* x, float* y, float* h_out) {
  check_expert(w, expert);
  const ActivationRows xg(w.gate.type, x, 1, w.n_embd, nullptr);
  const ActivationRows xu(w.up.type, x, 1, w.n_embd, nullptr);
  FfnScratch s;
  ffn_prepared(w, expert, xg.row(0), xu.row(0), s, y, h_out);
}

void moe_forward(const MoeWeights& w, const float* X, const prefill::RowTable& table, const float* topk_weights,
                 float* Y, ThreadPool* pool) {
  if (table.n_expert != w.n_expert) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "moe: row table has {} experts, weights have {}", table.n_expert, w.n_expert);
  }
  const int64_t T = table.n_tokens, k = table.k, E = w.n_embd;
  if (T == 0) return;
  // Each token's x prepared once for gate and once for up (the same rows when
  // both take the same activation kind, which quantizes deterministically).
  const ActivationRows xg(w.gate.type, X, T, E, pool);
  const ActivationRows xu(w.up.type, X, T, E, pool);

  // Work list in execution order: expert groups in table.active order, each
  // group's rows ascending; expert_of[i] names the expert of work item i.
  std::vector<int32_t> work, expert_of;
  work.reserve(T * k);
  expert_of.reserve(T * k);
  for (int32_t e : table.active) {
    for (int32_t row : table.group(e)) {
      work.push_back(row);
      expert_of.push_back(e);
    }
  }
  if (static_cast<int64_t>(work.size()) != T * k) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "moe: row table lists {} rows for {} tokens x {} slots", work.size(), T, k);
  }

  // Per (token, slot) expert outputs, [T * k][E]; each written by one work item.
  std::vector<float> ys(static_cast<size_t>(T * k * E));
  auto run_items = [&](int64_t b, int64_t e) {
    FfnScratch s;
    for (int64_t i = b; i < e; ++i) {
      const int32_t row = work[i], t = row / static_cast<int32_t>(k);
      ffn_prepared(w, expert_of[i], xg.row(t), xu.row(t), s, &ys[static_cast<size_t>(row) * E], nullptr);
    }
  };
  auto combine = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* y = Y + t * E;
      std::fill(y, y + E, 0.0f);
      for (int64_t slot = 0; slot < k; ++slot) {
        const float wt = topk_weights[t * k + slot];
        const float* ye = &ys[static_cast<size_t>(t * k + slot) * E];
        for (int64_t j = 0; j < E; ++j) y[j] += wt * ye[j];
      }
    }
  };
  parallel_for(pool, T * k, run_items);
  parallel_for(pool, T, combine);
}

void moe_forward_token(const MoeWeights& w, const float* x, const int32_t* ids, const float* weights, int k, float* y,
                       ThreadPool* pool) {
  const prefill::RowTable table = prefill::RowTable::build(std::span<const int32_t>(ids, k), 1, k, w.n_expert);
  moe_forward(w, x, table, weights, y, pool);
}

}  // namespace strata::core::cpu
