// The reference MoE step: per-row expert FFNs in row-table order, then the fixed slot-order combine.
#include "cpu/moe.h"

#include <algorithm>
#include <span>
#include <vector>

#include "core/base/error.h"
#include "core/runtime/thread_pool.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "prefill/row_table.h"

namespace strata::core::cpu {

namespace {

// y[r] = vec_dot over the n_out rows of one expert matrix. Single-threaded:
// moe_forward parallelises over (token, slot) rows instead.
void expert_matvec(const ExpertTensor& t, int e, const void* act, float* y) {
  matvec(t.type, t.expert(e), t.n_out, t.n_in, act, y);
}

// Calls fn(j, lo, hi) for each job j's share [lo, hi) of items [b, e),
// numbered job by job, `per_job` items a job.
template <typename Fn>
void per_job(int64_t b, int64_t e, int64_t per_job, Fn fn) {
  while (b < e) {
    const int64_t j = b / per_job, lo = b % per_job, hi = std::min(per_job, lo + (e - b));
    fn(j, lo, hi);
    b += hi - lo;
  }
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

void experts_rows(const MoeWeights& w, std::span<const ExpertRows> jobs, ThreadPool* pool) {
  for (const ExpertRows& j : jobs) check_expert(w, j.expert);
  const int64_t E = w.n_embd, F = w.n_ff;
  const auto n_jobs = static_cast<int64_t>(jobs.size());
  // Each job's rows prepared as matmul_q prepares them (on this thread: a few rows), and where its h rows start.
  std::vector<ActivationRows> xg, xu;
  std::vector<int64_t> first(jobs.size() + 1, 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    xg.emplace_back(w.gate.type, jobs[i].X, jobs[i].n_rows, E, nullptr);
    xu.emplace_back(w.up.type, jobs[i].X, jobs[i].n_rows, E, nullptr);
    first[i + 1] = first[i] + std::max<int64_t>(jobs[i].n_rows, 0);
  }
  if (first.back() == 0) return;
  const size_t gate_row = row_size(w.gate.type, E), up_row = row_size(w.up.type, E), down_row = row_size(w.down.type, F);
  // h = swiglu(gate · x, up · x): item (job, feature) dots both rows with each of the job's rows.
  std::vector<float> h(static_cast<size_t>(first.back() * F)), u(h.size());
  parallel_for(pool, n_jobs * F, [&](int64_t b, int64_t e) {
    per_job(b, e, F, [&](int64_t j, int64_t lo, int64_t hi) {
      const ExpertRows& job = jobs[static_cast<size_t>(j)];
      float* hj = &h[static_cast<size_t>(first[j] * F)];
      float* uj = &u[static_cast<size_t>(first[j] * F)];
      dot_rows(w.gate.type, w.gate.expert(job.expert), gate_row, lo, hi, E, xg[j], job.n_rows, hj, F);
      dot_rows(w.up.type, w.up.expert(job.expert), up_row, lo, hi, E, xu[j], job.n_rows, uj, F);
      for (int64_t t = 0; t < job.n_rows; ++t) swiglu(hj + t * F + lo, uj + t * F + lo, hj + t * F + lo, hi - lo);
    });
  });
  std::vector<ActivationRows> hd;
  for (size_t i = 0; i < jobs.size(); ++i)
    hd.emplace_back(w.down.type, &h[static_cast<size_t>(first[i] * F)], jobs[i].n_rows, F, nullptr);
  parallel_for(pool, n_jobs * E, [&](int64_t b, int64_t e) {
    per_job(b, e, E, [&](int64_t j, int64_t lo, int64_t hi) {
      const ExpertRows& job = jobs[static_cast<size_t>(j)];
      dot_rows(w.down.type, w.down.expert(job.expert), down_row, lo, hi, F, hd[j], job.n_rows, job.Y, E);
    });
  });
}

void expert_rows(const MoeWeights& w, int expert, const float* X, int64_t n_rows, float* Y, ThreadPool* pool) {
  const ExpertRows job{expert, X, n_rows, Y};
  experts_rows(w, std::span<const ExpertRows>(&job, 1), pool);
}

struct MoeChunk::Impl {
  const prefill::RowTable& table;
  ThreadPool* pool;
  int64_t T, k, E;
  ActivationRows xg, xu;  // each token's x prepared for gate's and up's types
  std::vector<float> ys;  // per (token, slot) expert outputs, [T * k][E]; each written by one row

  Impl(const MoeWeights& w, const float* X, const prefill::RowTable& t, ThreadPool* p)
      : table(t),
        pool(p),
        T(t.n_tokens),
        k(t.k),
        E(w.n_embd),
        xg(w.gate.type, X, t.n_tokens, w.n_embd, p),
        xu(w.up.type, X, t.n_tokens, w.n_embd, p),
        ys(static_cast<size_t>(t.n_tokens) * t.k * w.n_embd) {}
};

MoeChunk::MoeChunk(const MoeWeights& w, const float* X, const prefill::RowTable& table, ThreadPool* pool) {
  if (table.n_expert != w.n_expert) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "moe: row table has {} experts, weights have {}", table.n_expert, w.n_expert);
  }
  if (static_cast<int64_t>(table.entries.size()) != static_cast<int64_t>(table.n_tokens) * table.k) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "moe: row table lists {} rows for {} tokens x {} slots", table.entries.size(),
         table.n_tokens, table.k);
  }
  impl_ = std::make_unique<Impl>(w, X, table, pool);
}

MoeChunk::~MoeChunk() = default;

void MoeChunk::run(const MoeWeights& w, std::span<const int32_t> experts) {
  Impl& m = *impl_;
  // Work list: the experts' rows, group after group, each group ascending.
  std::vector<int32_t> work, expert_of;
  for (int32_t e : experts) {
    check_expert(w, e);
    for (int32_t row : m.table.group(e)) {
      work.push_back(row);
      expert_of.push_back(e);
    }
  }
  const auto k = static_cast<int32_t>(m.k);
  parallel_for(m.pool, static_cast<int64_t>(work.size()), [&](int64_t b, int64_t e) {
    FfnScratch s;
    for (int64_t i = b; i < e; ++i) {
      const int32_t row = work[i], t = row / k;
      ffn_prepared(w, expert_of[i], m.xg.row(t), m.xu.row(t), s, &m.ys[static_cast<size_t>(row) * m.E], nullptr);
    }
  });
}

float* MoeChunk::rows() { return impl_->ys.data(); }

void MoeChunk::combine(const float* topk_weights, float* Y) {
  Impl& m = *impl_;
  parallel_for(m.pool, m.T, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* y = Y + t * m.E;
      std::fill(y, y + m.E, 0.0f);
      for (int64_t slot = 0; slot < m.k; ++slot) {
        const float wt = topk_weights[t * m.k + slot];
        const float* ye = &m.ys[static_cast<size_t>(t * m.k + slot) * m.E];
        for (int64_t j = 0; j < m.E; ++j) y[j] += wt * ye[j];
      }
    }
  });
}

void moe_forward(const MoeWeights& w, const float* X, const prefill::RowTable& table, const float* topk_weights,
                 float* Y, ThreadPool* pool) {
  if (table.n_tokens == 0) return;
  MoeChunk chunk(w, X, table, pool);
  chunk.run(w, table.active);
  chunk.combine(topk_weights, Y);
}

void moe_forward_token(const MoeWeights& w, const float* x, const int32_t* ids, const float* weights, int k, float* y,
                       ThreadPool* pool) {
  const prefill::RowTable table = prefill::RowTable::build(std::span<const int32_t>(ids, k), 1, k, w.n_expert);
  moe_forward(w, x, table, weights, y, pool);
}

}  // namespace strata::core::cpu
