// The peer share's small ops on the CPU: slot-order sums over the peer's or the primary's rows, FP16 rounding.
#include "cpu/peer_ops.h"

#include <algorithm>
#include <vector>

#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/runtime/thread_pool.h"

namespace strata::core::cpu {

namespace {

// acc[i] = sum over slots, in order, of token t's rows whose peer flag is
// `peer`, of w * y; F32 from +0.0f, unfused (the core builds with
// -ffp-contract=off).
void slot_sum(const float* y, const float* w, const uint8_t* peer_row, bool peer, int64_t t, int k, int64_t n,
              float* acc) {
  std::fill(acc, acc + n, 0.0f);
  for (int slot = 0; slot < k; ++slot) {
    const int64_t r = t * k + slot;
    if ((peer_row[r] != 0) != peer) continue;
    const float wt = w[r];
    const float* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + wt * yr[i];
  }
}

}  // namespace

void peer_sums(const float* y, const float* w, const uint8_t* peer_row, int64_t t_begin, int64_t t_end, int k,
               int64_t n, float* out, ThreadPool* pool) {
  if (t_begin < 0 || t_begin > t_end || k < 1 || n < 1) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "peer_sums: need 0 <= t_begin <= t_end, k >= 1, n >= 1 (t_begin={} t_end={} k={} n={})", t_begin, t_end, k,
         n);
  }
  parallel_for(pool, t_end - t_begin, [&](int64_t b, int64_t e) {
    for (int64_t t = t_begin + b; t < t_begin + e; ++t) slot_sum(y, w, peer_row, true, t, k, n, out + t * n);
  });
}

void combine_with_peer(const float* y, const float* w, const uint8_t* peer_row, int64_t T, int k, int64_t n,
                       const float* sums, float* x, ThreadPool* pool) {
  if (T < 0 || k < 1 || n < 1) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "combine_with_peer: need T >= 0, k >= 1, n >= 1 (T={} k={} n={})", T, k, n);
  }
  parallel_for(pool, T, [&](int64_t b, int64_t e) {
    std::vector<float> acc(static_cast<size_t>(n));
    for (int64_t t = b; t < e; ++t) {
      slot_sum(y, w, peer_row, false, t, k, n, acc.data());
      float* xt = x + t * n;
      if (sums) {
        const float* st = sums + t * n;
        for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + st[i];
      }
      for (int64_t i = 0; i < n; ++i) xt[i] = xt[i] + acc[i];
    }
  });
}

void round_to_f16(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_f32(f32_to_fp16(in[i]));
}

}  // namespace strata::core::cpu
