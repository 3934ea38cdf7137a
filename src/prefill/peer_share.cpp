// plan_peer_share: the even pick of the peer's experts and the rows that follow from it.
#include "prefill/peer_share.h"

#include <cmath>
#include <utility>

#include "core/base/error.h"
#include "prefill/row_table.h"

namespace strata::prefill {

using core::fail;

namespace {

void check_share(double share) {
  if (!(share >= 0 && share <= 1)) fail(STRATA_ERR_INVALID_ARGUMENT, "peer share {} outside [0, 1]", share);
}

}  // namespace

std::vector<bool> peer_pick(int32_t n_candidates, double share) {
  check_share(share);
  std::vector<bool> pick(n_candidates > 0 ? n_candidates : 0);
  for (int32_t i = 0; i < n_candidates; ++i) {
    pick[i] = std::floor((i + 1) * share) > std::floor(i * share);
  }
  return pick;
}

PeerSplit split_candidates(const std::vector<int32_t>& candidates, double share) {
  const std::vector<bool> pick = peer_pick(static_cast<int32_t>(candidates.size()), share);
  PeerSplit out;
  for (size_t i = 0; i < candidates.size(); ++i) (pick[i] ? out.peer : out.own).push_back(candidates[i]);
  return out;
}

std::vector<int32_t> peer_experts_stream_all(const std::vector<bool>& streamed, double share) {
  return split_candidates(ring_layer_all(streamed), share).peer;
}

PeerSharePlan plan_peer_share(const RowTable& t, const std::vector<bool>& streamed, double share, RingMode mode) {
  check_share(share);
  if (static_cast<int64_t>(streamed.size()) != t.n_expert) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "peer share: streamed mask of {} experts for a table of {}", streamed.size(),
         t.n_expert);
  }
  PeerSharePlan p;
  p.mode = mode;
  // Candidates in the primary's load order, then the even pick over them.
  PeerSplit split =
      split_candidates(mode == RingMode::StreamAll ? ring_layer_all(streamed) : ring_layer_routed(t, streamed), share);
  p.primary_streamed = std::move(split.own);
  p.peer_experts = std::move(split.peer);
  for (int32_t e : t.active) {
    if (!streamed[e]) p.primary_resident.push_back(e);
  }

  p.peer_offsets.push_back(0);
  std::vector<bool> token_seen(t.n_tokens, false);
  for (int32_t e : p.peer_experts) {
    for (int32_t row : t.group(e)) {
      p.peer_rows.push_back(row);
      const int32_t token = row / t.k;
      if (!token_seen[token]) {
        token_seen[token] = true;
        ++p.n_peer_tokens;
      }
    }
    p.peer_offsets.push_back(static_cast<int32_t>(p.peer_rows.size()));
  }
  return p;
}

}  // namespace strata::prefill
