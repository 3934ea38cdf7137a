// handoff_piece: the one split of a host-route transfer into pieces.
#include "prefill/pieces.h"

#include "core/base/error.h"

namespace strata::prefill {

using core::fail;

PieceBounds handoff_piece(int64_t n_rows, int pieces, int i) {
  if (n_rows < 0 || pieces < 1 || i < 0 || i >= pieces) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "handoff_piece: n_rows={} pieces={} i={}", n_rows, pieces, i);
  }
  // floor(n * i / p) without forming n * i: n = q * p + r, so it is
  // q * i + floor(r * i / p), and r * i < p * p cannot overflow.
  const int64_t q = n_rows / pieces, r = n_rows % pieces;
  auto bound = [&](int64_t j) { return q * j + r * j / pieces; };
  return {bound(i), bound(i + 1)};
}

}  // namespace strata::prefill
