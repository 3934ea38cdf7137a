// PeerSharePlan: which streamed experts of one layer (and so which rows) a peer or stage helper takes.
#pragma once

#include <cstdint>
#include <vector>

#include "prefill/ring.h"

namespace strata::prefill {

struct RowTable;

// The split of one layer of one chunk between the primary card and a peer (a
// `peer_device` card or the stream-only stage helper). The peer streams its
// experts over its own link into its own ring and computes them; the primary
// streams and computes the rest, and always computes its resident experts.
struct PeerSharePlan {
  RingMode mode = RingMode::Routed;
  // The peer's experts in its load order (its RingInput list for this layer):
  // ascending id in StreamAll, active order in Routed. In StreamAll it holds
  // unrouted experts too (chosen before routing; they have no rows).
  std::vector<int32_t> peer_experts;
  // The streamed experts the primary keeps, in its load order (same rules).
  std::vector<int32_t> primary_streamed;
  // Resident experts with rows, in active order: always the primary's.
  std::vector<int32_t> primary_resident;
  // The peer's rows (token * k + slot) grouped like the RowTable: expert
  // peer_experts[j] owns peer_rows[peer_offsets[j] .. peer_offsets[j + 1]),
  // ascending. This is the row table and the group bounds that travel to the
  // peer (by P2P or the host route).
  std::vector<int32_t> peer_offsets;  // [peer_experts.size() + 1]
  std::vector<int32_t> peer_rows;
  // Tokens with at least one peer row: the peer returns one weighted sum row
  // per token (not per routed entry); a token without peer rows gets zeros.
  int32_t n_peer_tokens = 0;

  int32_t n_peer_rows() const { return static_cast<int32_t>(peer_rows.size()); }
};

// The peer's experts among `candidates` (a load-ordered list) for a share in
// [0, 1]: position i goes to the peer when floor((i + 1) * share) >
// floor(i * share). That takes floor(n * share) experts (the primary keeps the
// rounding: it pays no transfer), spread evenly over the list so big and small
// groups split alike, and never position 0 (the primary's first and, in
// Routed order, biggest group, whose load it can start at once) unless share
// is 1. Deterministic: both cards may compute it.
std::vector<bool> peer_pick(int32_t n_candidates, double share);

// `candidates` split by peer_pick: the ones the primary keeps and the peer's,
// each in the candidates' order.
struct PeerSplit {
  std::vector<int32_t> own, peer;
};
PeerSplit split_candidates(const std::vector<int32_t>& candidates, double share);

// The StreamAll selection from the placement mask alone, known before the
// chunk's routing: so both rings can be planned at the chunk start.
std::vector<int32_t> peer_experts_stream_all(const std::vector<bool>& streamed, double share);

// Splits one layer. streamed[e] is true for the experts this card streams
// (PlacementPlan::streamed_mask); share is the peer's fraction of the
// streamed experts (cost.h picks it: peer_share / helper_share). In StreamAll
// the peer takes peer_experts_stream_all(streamed, share); in Routed it takes
// peer_pick over the routed streamed experts in active order. Share 0 gives
// the peer nothing, share 1 every streamed expert. Throws
// Error(INVALID_ARGUMENT) when streamed.size() != t.n_expert or share is
// outside [0, 1].
PeerSharePlan plan_peer_share(const RowTable& t, const std::vector<bool>& streamed, double share, RingMode mode);

}  // namespace strata::prefill
