// Piece bounds of the pieced host-route transfers (seed 004): the one split both sides of a hand-off use.
#pragma once

#include <cstdint>

namespace strata::prefill {

// Piece count when the option says "on" without a number (seed 004 measured 8).
inline constexpr int kDefaultPeerPieces = 8;

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

// The piece count an option value means (`peer_pieces`,
// STRATA_PF_PEER_PIECES): 0 = off (one unpieced transfer; returns 0), 1 = on
// with kDefaultPeerPieces, K >= 2 = K pieces. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) for a negative value or one above 1024
// (each piece costs an event on both cards).
int resolve_peer_pieces(int64_t setting);

}  // namespace strata::prefill
