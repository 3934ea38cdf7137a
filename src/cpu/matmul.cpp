// matvec_q / matmul_q: activation preparation and a weight-row-outer loop over output rows.
#include "cpu/matmul.h"

#include "core/base/error.h"
#include "core/runtime/thread_pool.h"

namespace strata::core::cpu {

ActivationRows::ActivationRows(GgmlType type, const float* X, int64_t T, int64_t n, ThreadPool* pool)
    : kind_(activation_kind(type)), x_(X), n_(n) {
  if (kind_ != ActivationKind::Q8A) return;
  if (n % 32 != 0) fail(STRATA_ERR_INVALID_ARGUMENT, "activations: row length {} is not a multiple of 32", n);
  const int64_t blocks = n / 32;
  q_.resize(static_cast<size_t>(T * blocks));
  parallel_for(pool, T, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) quantize_activations(X + t * n, q_.data() + t * blocks, n);
  });
}

const void* ActivationRows::row(int64_t t) const {
  if (kind_ == ActivationKind::Q8A) return q_.data() + t * (n_ / 32);
  return x_ + t * n_;
}

void matvec_q(GgmlType type, const void* w, int64_t n_in, int64_t n_out, const float* x, float* y, ThreadPool* pool) {
  matmul_q(type, w, n_in, n_out, x, 1, y, pool);
}

void matmul_q(GgmlType type, const void* w, int64_t n_in, int64_t n_out, const float* X, int64_t T, float* Y,
              ThreadPool* pool) {
  if (n_in < 1 || n_out < 1 || T < 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "matmul: invalid shape n_in={} n_out={} T={}", n_in, n_out, T);
  }
  const size_t row_bytes = row_size(type, n_in);
  const ActivationRows act(type, X, T, n_in, pool);
  const auto* wb = static_cast<const uint8_t*>(w);
  // Weight rows outermost: each row is read once and dotted with all T
  // activation rows. Every Y element is written by exactly one range.
  parallel_for(pool, n_out, [&](int64_t b, int64_t e) { dot_rows(type, wb, row_bytes, b, e, n_in, act, T, Y, n_out); });
}

void dot_rows(GgmlType type, const uint8_t* w, size_t row_bytes, int64_t r0, int64_t r1, int64_t n_in,
              const ActivationRows& act, int64_t T, float* Y, int64_t ld_y) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const uint8_t* w0 = w + static_cast<size_t>(r) * row_bytes;
    const void* quad[4] = {w0, w0 + row_bytes, w0 + 2 * row_bytes, w0 + 3 * row_bytes};
    for (int64_t t = 0; t < T; ++t) vec_dot4(type, quad, act.row(t), n_in, Y + t * ld_y + r);
  }
  for (; r < r1; ++r) {
    const void* wrow = w + static_cast<size_t>(r) * row_bytes;
    for (int64_t t = 0; t < T; ++t) Y[t * ld_y + r] = vec_dot(type, wrow, act.row(t), n_in);
  }
}

}  // namespace strata::core::cpu
