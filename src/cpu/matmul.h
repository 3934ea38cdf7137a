// Float matmul helpers on quantized weight matrices: activations prepared once per row, one vec_dot per output.
#pragma once

#include <cstdint>
#include <vector>

#include "core/quant/quant.h"

namespace strata::core {
class ThreadPool;
}

namespace strata::core::cpu {

// Activation rows X[t] (T rows of n floats) in the format vec_dot takes for
// weights of `type`: F32 rows are used in place (X must outlive this), others
// are quantized to Q8A blocks once here. Every matmul in the CPU backend goes
// through this, so a row is quantized the same way wherever it is used.
class ActivationRows {
 public:
  // Throws like quantize_activations (n not a multiple of 32 for Q8A) or
  // activation_kind (a type without dot products).
  ActivationRows(GgmlType type, const float* X, int64_t T, int64_t n, ThreadPool* pool);
  const void* row(int64_t t) const;
  ActivationKind kind() const { return kind_; }

 private:
  ActivationKind kind_;
  const float* x_;
  int64_t n_;
  std::vector<BlockQ8A> q_;  // Q8A: [T][n / 32]
};

// y[r] = vec_dot(type, row r of w, x as prepared by ActivationRows, n_in) for
// r in [0, n_out); rows of w are row_size(type, n_in) bytes apart. Rows are
// spread over pool (nullptr runs on the caller); each y[r] is one vec_dot, so
// the result does not depend on the thread count.
void matvec_q(GgmlType type, const void* w, int64_t n_in, int64_t n_out, const float* x, float* y, ThreadPool* pool);

// Y[t * ld_y + r] = vec_dot(type, row r of w, act.row(t), n_in) for rows r
// in [r0, r1) and t in [0, T), on the calling thread: rows in fours
// (vec_dot4) where they fit, each four read once for every t. Rows of w are
// row_bytes apart. The same bits as one vec_dot per element.
void dot_rows(GgmlType type, const uint8_t* w, size_t row_bytes, int64_t r0, int64_t r1, int64_t n_in,
              const ActivationRows& act, int64_t T, float* Y, int64_t ld_y);

// Y[t] = matvec_q(type, w, n_in, n_out, X[t]) for t in [0, T), bit for bit:
// the same preparation of each row and the same vec_dot. X is [T][n_in], Y is
// [T][n_out]. Throws Error(STRATA_ERR_INVALID_ARGUMENT) for n_in < 1, n_out < 1
// or T < 0.
void matmul_q(GgmlType type, const void* w, int64_t n_in, int64_t n_out, const float* X, int64_t T, float* Y,
              ThreadPool* pool);

}  // namespace strata::core::cpu
