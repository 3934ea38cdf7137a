// Piece bounds of the pieced host-route transfers (each piece crosses the link while the last one is computed): the
// one split both sides of a hand-off use.
#pragma once

#include <cstdint>

namespace strata::prefill {

// Rows [begin, end) of one piece.
struct PieceBounds {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const PieceBounds&, const PieceBounds&) = default;
};

// Piece i of n_rows rows split into `pieces` pieces: begin = floor(n_rows *
// i / pieces). The pieces are contiguous, in order, cover every row once, and
// their sizes differ by at most one; with more pieces than rows some are
// empty (a sender still records each piece's event, so a receiver waiting on
// piece i never needs to know which ones are empty). Both the sender (copy of
// the activations / sums in pieces) and the receiver (conversion of each piece
// as it lands) call this, so they can never disagree on a bound.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) when n_rows < 0, pieces < 1 or i
// is outside [0, pieces).
PieceBounds handoff_piece(int64_t n_rows, int pieces, int i);

}  // namespace strata::prefill
