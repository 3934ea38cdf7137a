// CPU reference MoE step: executes a RowTable's expert groups (SwiGLU experts) and combines per token in slot order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/model/weights.h"
#include "core/quant/quant.h"

namespace strata::prefill {
struct RowTable;
}
namespace strata::core {
class ThreadPool;
}

namespace strata::core::cpu {

// One 3-D expert tensor of a GGUF file, [n_in, n_out, n_expert] (ne0 = n_in is
// the row length): expert e's n_out x n_in matrix starts at base + e * stride,
// or at ptrs[e] when a pointer table is set (experts in ring slots or
// anywhere else).
struct ExpertTensor {
  GgmlType type = GgmlType::F32;
  const uint8_t* base = nullptr;
  size_t stride = 0;  // row_size(type, n_in) * n_out
  int64_t n_in = 0;
  int64_t n_out = 0;
  const uint8_t* const* ptrs = nullptr;  // [n_expert], or null

  const uint8_t* expert(int e) const { return ptrs ? ptrs[e] : base + static_cast<size_t>(e) * stride; }
  size_t row_bytes() const { return stride / static_cast<size_t>(n_out); }
};

// The routed experts of one layer. Borrowed pointers: valid while the model's
// mapping lives.
struct MoeWeights {
  ExpertTensor gate, up;  // [n_embd, n_ff, n_expert]
  ExpertTensor down;      // [n_ff, n_embd, n_expert]
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int32_t n_expert = 0;

  // From three tensors laid out as in GGUF. Throws
  // Error(STRATA_ERR_INVALID_ARGUMENT) when shapes disagree with each other
  // or a pointer is null, and what row_size throws for a bad row length.
  static MoeWeights make(GgmlType gate_type, const void* gate, GgmlType up_type, const void* up, GgmlType down_type,
                         const void* down, int64_t n_embd, int64_t n_ff, int32_t n_expert);
  // The same from any tensor description with .type, .data and .ne[0..2]
  // (the model's TensorRef), checking that gate and up are [n_embd, n_ff, E]
  // and down is [n_ff, n_embd, E].
  template <typename Tensor>
  static MoeWeights of(const Tensor& gate, const Tensor& up, const Tensor& down) {
    check_shapes(gate.ne[0], gate.ne[1], gate.ne[2], up.ne[0], up.ne[1], up.ne[2], down.ne[0], down.ne[1],
                 down.ne[2]);
    return make(gate.type, gate.data, up.type, up.data, down.type, down.data, gate.ne[0], gate.ne[1],
                static_cast<int32_t>(gate.ne[2]));
  }
  // A layer's routed-expert stacks.
  static MoeWeights of(const LayerWeights& l) {
    return of(l[TensorRole::FfnGateExps], l[TensorRole::FfnUpExps], l[TensorRole::FfnDownExps]);
  }

 private:
  static void check_shapes(int64_t g0, int64_t g1, int64_t g2, int64_t u0, int64_t u1, int64_t u2, int64_t d0,
                           int64_t d1, int64_t d2);
};

// One expert on one row, the computation moe_forward performs per (token,
// slot): x (n_embd floats) is prepared for gate's and up's types as matvec_q
// does (Q8A for quantized weights); g = gate_e · x, u = up_e · x; h =
// swiglu(g, u) (F32, n_ff); h is prepared for down's type the same way; y =
// down_e · h (n_embd floats). If h_out is not null it receives h (for tests).
void expert_ffn(const MoeWeights& w, int expert, const float* x, float* y, float* h_out = nullptr);

// Rows X ([n_rows][n_embd]) through one expert into Y ([n_rows][n_embd]).
struct ExpertRows {
  int expert = 0;
  const float* X = nullptr;
  int64_t n_rows = 0;
  float* Y = nullptr;
};

// Y[r] = expert_ffn(w, job.expert, X[r]) for every job and row, bit for bit,
// parallel over the matrices' output rows of all jobs together (for a few
// rows of big experts, where moe_forward's parallelism over rows would leave
// threads idle): two pool dispatches whatever the number of jobs, gate and up
// (with SwiGLU) of every job, then down. Throws Error(INVALID_ARGUMENT) for an
// expert out of range.
void experts_rows(const MoeWeights& w, std::span<const ExpertRows> jobs, ThreadPool* pool);

// experts_rows of one job.
void expert_rows(const MoeWeights& w, int expert, const float* X, int64_t n_rows, float* Y, ThreadPool* pool);

// The MoE step of a chunk in parts, for a caller whose experts arrive one
// after another (the ring): the activations are prepared once, run() computes
// the rows of the experts named, reading their matrices from `w` as it is at
// that call, and combine() sums the rows in slot order. Together they compute
// exactly what moe_forward does, bit for bit, whatever the order of the run()
// calls. The weights, X and table must outlive it.
class MoeChunk {
 public:
  // Throws Error(STRATA_ERR_INVALID_ARGUMENT) as moe_forward.
  MoeChunk(const MoeWeights& w, const float* X, const prefill::RowTable& table, ThreadPool* pool);
  ~MoeChunk();
  // The rows of each listed expert (an expert without rows does nothing).
  void run(const MoeWeights& w, std::span<const int32_t> experts);
  // Y[t] = sum over slots, in order, of topk_weights[t][slot] * row (t, slot).
  // Every routed expert must have run.
  void combine(const float* topk_weights, float* Y);
  // The rows: [T * k][n_embd], row token * k + slot, written by run() (or by
  // a caller that computed some elsewhere: a peer's rows).
  float* rows();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The MoE step of a chunk of table.n_tokens tokens:
//   Y[t] = sum over slot = 0..k-1, in that order, of topk_weights[t][slot] *
//          expert_ffn(expert of (t, slot), X[t])
// accumulated in F32 starting from 0. X and Y are [T][n_embd] (X already
// normed; Y may not alias X), topk_weights is [T][k]. Rows run expert group by
// expert group in table.active order, spread over pool (nullptr: caller only).
// Because each (token, slot) row is computed alone and combined in fixed slot
// order, the result is bit-identical for any chunking of the tokens and any
// thread count. Throws Error(STRATA_ERR_INVALID_ARGUMENT) when the table's
// n_expert differs from the weights'.
void moe_forward(const MoeWeights& w, const float* X, const prefill::RowTable& table, const float* topk_weights,
                 float* Y, ThreadPool* pool);

// moe_forward for one token (decode): ids and weights are its k router
// choices. Equal, bit for bit, to moe_forward with a one-token table.
void moe_forward_token(const MoeWeights& w, const float* x, const int32_t* ids, const float* weights, int k, float* y,
                       ThreadPool* pool);

}  // namespace strata::core::cpu
