// PeerSharePlan: share 0 and 1, residents stay on the primary, rows split exactly, even and deterministic picks.
#include "prefill/peer_share.h"

#include <algorithm>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "prefill/row_table.h"
#include "test_random.h"

using strata::core::Error;
using strata::prefill::peer_pick;
using strata::prefill::PeerSharePlan;
using strata::prefill::plan_peer_share;
using strata::core::RingMode;
using strata::prefill::RowTable;

namespace {

// Random routing: each token picks k distinct experts, skewed towards low ids.
RowTable random_table(strata::test::Rng& rng, int n_tokens, int k, int n_expert) {
  std::vector<int32_t> ids;
  for (int t = 0; t < n_tokens; ++t) {
    std::vector<int32_t> chosen;
    while (static_cast<int>(chosen.size()) < k) {
      const int32_t e = std::min(rng.int_in(0, n_expert - 1), rng.int_in(0, n_expert - 1));
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    ids.insert(ids.end(), chosen.begin(), chosen.end());
  }
  return RowTable::build(ids, n_tokens, k, n_expert);
}

// The plan's parts partition the table: every routed row is the peer's or the
// primary's, never both; residents and unpicked streamed experts stay home.
void check_split(const RowTable& t, const std::vector<bool>& streamed, const PeerSharePlan& p) {
  REQUIRE(p.peer_offsets.size() == p.peer_experts.size() + 1);
  std::vector<int> owner(t.n_expert, 0);  // 1 peer, 2 primary streamed, 3 primary resident
  auto own = [&](const std::vector<int32_t>& experts, int who, bool is_streamed) {
    for (int32_t e : experts) {
      CHECK(owner[e] == 0);
      CHECK(streamed[e] == is_streamed);
      owner[e] = who;
    }
  };
  own(p.peer_experts, 1, true);
  own(p.primary_streamed, 2, true);
  own(p.primary_resident, 3, false);
  for (int32_t e : t.active) CHECK(owner[e] != 0);  // every routed expert has an owner
  std::vector<int> row_peer(t.n_tokens * t.k, 0);
  for (size_t j = 0; j < p.peer_experts.size(); ++j) {
    const auto g = t.group(p.peer_experts[j]);
    REQUIRE(p.peer_offsets[j + 1] - p.peer_offsets[j] == static_cast<int>(g.size()));
    CHECK(std::equal(g.begin(), g.end(), p.peer_rows.begin() + p.peer_offsets[j]));
    for (int32_t r : g) row_peer[r] += 1;
  }
  std::vector<bool> tok(t.n_tokens, false);
  for (int32_t r : p.peer_rows) tok[r / t.k] = true;
  CHECK(p.n_peer_tokens == std::count(tok.begin(), tok.end(), true));
  for (int e = 0; e < t.n_expert; ++e) {
    for (int32_t r : t.group(e)) CHECK(row_peer[r] == (owner[e] == 1 ? 1 : 0));
  }
}

}  // namespace

TEST_CASE("peer share: the even pick") {
  CHECK(peer_pick(4, 0.5) == std::vector<bool>{false, true, false, true});
  CHECK(peer_pick(5, 0.0) == std::vector<bool>(5, false));
  CHECK(peer_pick(5, 1.0) == std::vector<bool>(5, true));
  CHECK(peer_pick(8, 0.25) == std::vector<bool>{false, false, false, true, false, false, false, true});
  CHECK(peer_pick(0, 0.5).empty());
  for (int n = 1; n < 200; n += 7) {
    for (double s : {0.1, 0.3, 0.45, 0.5, 0.75, 0.99}) {
      const auto pick = peer_pick(n, s);
      const auto count = std::count(pick.begin(), pick.end(), true);
      CHECK(count == static_cast<long>(std::floor(n * s)));
      if (s < 1) CHECK_FALSE(pick[0]);
      // Even: any prefix holds floor(len * share) picks.
      long run = 0;
      for (int i = 0; i < n; ++i) {
        run += pick[i];
        CHECK(run == static_cast<long>(std::floor((i + 1) * s)));
      }
    }
  }
  CHECK_THROWS_AS(peer_pick(4, -0.1), Error);
  CHECK_THROWS_AS(peer_pick(4, 1.1), Error);
}

TEST_CASE("peer share: share 0 gives nothing, 1 every streamed expert, residents stay") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const RowTable t = random_table(rng, 64, 8, 32);
  std::vector<bool> streamed(32);
  for (int e = 0; e < 32; ++e) streamed[e] = e % 3 != 0;  // every third expert resident
  for (RingMode mode : {RingMode::Routed, RingMode::StreamAll}) {
    const PeerSharePlan none = plan_peer_share(t, streamed, 0.0, mode);
    check_split(t, streamed, none);
    CHECK(none.peer_experts.empty());
    CHECK(none.peer_rows.empty());
    CHECK(none.n_peer_tokens == 0);

    const PeerSharePlan all = plan_peer_share(t, streamed, 1.0, mode);
    check_split(t, streamed, all);
    CHECK(all.primary_streamed.empty());
    for (int32_t e : t.active) {
      const bool is_peer = std::find(all.peer_experts.begin(), all.peer_experts.end(), e) != all.peer_experts.end();
      CHECK(is_peer == streamed[e]);
    }
  }
}

TEST_CASE("peer share: Routed picks over routed streamed experts in active order") {
  // 6 tokens, k = 2, 6 experts; groups: e0:4 e1:3 e2:2 e3:2 e4:1 e5:0.
  const std::vector<int32_t> ids{0, 1, 0, 1, 0, 1, 0, 2, 2, 3, 3, 4};
  const RowTable t = RowTable::build(ids, 6, 2, 6);
  REQUIRE(t.active == std::vector<int32_t>{0, 1, 2, 3, 4});
  const std::vector<bool> streamed{true, false, true, true, true, true};  // e1 resident
  const PeerSharePlan p = plan_peer_share(t, streamed, 0.5, RingMode::Routed);
  check_split(t, streamed, p);
  // candidates 0, 2, 3, 4 -> the peer takes positions 1 and 3.
  CHECK(p.peer_experts == std::vector<int32_t>{2, 4});
  CHECK(p.primary_streamed == std::vector<int32_t>{0, 3});
  CHECK(p.primary_resident == std::vector<int32_t>{1});
  CHECK(p.peer_rows == std::vector<int32_t>{7, 8, 11});  // e2: rows 7, 8; e4: row 11
  CHECK(p.peer_offsets == std::vector<int32_t>{0, 2, 3});
  CHECK(p.n_peer_tokens == 3);  // tokens 3, 4 (rows 7, 8) and 5 (row 11)
}

TEST_CASE("peer share: StreamAll picks from the mask alone, before routing") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  std::vector<bool> streamed(48);
  for (int e = 0; e < 48; ++e) streamed[e] = rng.int_in(0, 3) != 0;
  const auto before = strata::prefill::peer_experts_stream_all(streamed, 0.4);
  for (int iter = 0; iter < 5; ++iter) {
    const RowTable t = random_table(rng, rng.int_in(1, 300), 4, 48);
    const PeerSharePlan p = plan_peer_share(t, streamed, 0.4, RingMode::StreamAll);
    check_split(t, streamed, p);
    CHECK(p.peer_experts == before);  // whatever the routing
    CHECK(std::is_sorted(p.peer_experts.begin(), p.peer_experts.end()));
    CHECK(p.peer_experts.size() + p.primary_streamed.size() ==
          static_cast<size_t>(std::count(streamed.begin(), streamed.end(), true)));
  }
}

TEST_CASE("peer share: deterministic, rows follow the share") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const RowTable t = random_table(rng, 2048, 8, 128);
  const std::vector<bool> streamed(128, true);
  double last_rows = -1;
  for (double share : {0.1, 0.3, 0.45, 0.7, 0.9}) {
    const PeerSharePlan a = plan_peer_share(t, streamed, share, RingMode::Routed);
    const PeerSharePlan b = plan_peer_share(t, streamed, share, RingMode::Routed);
    check_split(t, streamed, a);
    CHECK(a.peer_experts == b.peer_experts);
    CHECK(a.peer_rows == b.peer_rows);
    // The even pick over groups sorted by size keeps the row share near the expert share.
    const double row_share = static_cast<double>(a.n_peer_rows()) / (2048 * 8);
    CHECK(row_share == Catch::Approx(share).margin(0.05));
    CHECK(row_share > last_rows);
    last_rows = row_share;
  }
}

TEST_CASE("peer share: invalid input") {
  const RowTable t = RowTable::build(std::vector<int32_t>{0, 1}, 1, 2, 4);
  CHECK_THROWS_AS(plan_peer_share(t, std::vector<bool>(3, true), 0.5, RingMode::Routed), Error);
  CHECK_THROWS_AS(plan_peer_share(t, std::vector<bool>(5, true), 0.5, RingMode::StreamAll), Error);
  CHECK_THROWS_AS(plan_peer_share(t, std::vector<bool>(4, true), 1.5, RingMode::Routed), Error);
  CHECK_THROWS_AS(plan_peer_share(t, std::vector<bool>(4, true), std::nan(""), RingMode::Routed), Error);
}
