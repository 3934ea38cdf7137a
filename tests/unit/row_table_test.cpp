// RowTable: hand-made plans, edge shapes, invalid input, and random property checks of the grouping contract.
#include <algorithm>
#include <numeric>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "prefill/row_table.h"
#include "test_random.h"

using strata::core::Error;
using strata::prefill::RowTable;

namespace {

std::vector<int32_t> vec_of(std::span<const int32_t> s) { return std::vector<int32_t>(s.begin(), s.end()); }

// Every property of the contract, against the ids the table was built from.
void check_table(const RowTable& t, const std::vector<int32_t>& ids) {
  const int n_rows = t.n_tokens * t.k;
  REQUIRE(t.offsets.size() == static_cast<size_t>(t.n_expert + 1));
  REQUIRE(t.entries.size() == static_cast<size_t>(n_rows));
  CHECK(t.offsets.front() == 0);
  CHECK(t.offsets.back() == n_rows);
  std::vector<int> seen(n_rows, 0);
  for (int e = 0; e < t.n_expert; ++e) {
    CHECK(t.offsets[e] <= t.offsets[e + 1]);
    auto g = t.group(e);
    for (size_t i = 0; i < g.size(); ++i) {
      REQUIRE(g[i] >= 0);
      REQUIRE(g[i] < n_rows);
      seen[g[i]] += 1;
      CHECK(ids[g[i]] == e);                // the row really routes to e
      if (i > 0) CHECK(g[i - 1] < g[i]);    // ascending within a group
    }
  }
  for (int s : seen) CHECK(s == 1);  // every (token, slot) exactly once
  // active: exactly the nonempty experts, by size descending, ties by lower id.
  std::vector<int32_t> expect;
  for (int e = 0; e < t.n_expert; ++e)
    if (t.rows(e) > 0) expect.push_back(e);
  std::sort(expect.begin(), expect.end(), [&](int32_t a, int32_t b) {
    return t.rows(a) != t.rows(b) ? t.rows(a) > t.rows(b) : a < b;
  });
  CHECK(t.active == expect);
}

}  // namespace

TEST_CASE("row table: a hand-made chunk") {
  // token 0 -> {2, 0}, token 1 -> {2, 3}, token 2 -> {0, 2}; expert 1 unused.
  const std::vector<int32_t> ids = {2, 0, 2, 3, 0, 2};
  auto t = RowTable::build(ids, 3, 2, 4);
  CHECK(t.n_tokens == 3);
  CHECK(t.k == 2);
  CHECK(t.n_expert == 4);
  CHECK(t.offsets == std::vector<int32_t>{0, 2, 2, 5, 6});
  CHECK(t.entries == std::vector<int32_t>{1, 4, 0, 2, 5, 3});
  CHECK(t.active == std::vector<int32_t>{2, 0, 3});
  CHECK(t.rows(1) == 0);
  CHECK(t.group(1).empty());
  CHECK(vec_of(t.group(2)) == std::vector<int32_t>{0, 2, 5});
  check_table(t, ids);
}

TEST_CASE("row table: equal groups are ordered by lower expert id") {
  // Experts 5, 1, 3 get two rows each, 0 one row: active = 1, 3, 5, 0.
  const std::vector<int32_t> ids = {5, 1, 3, 5, 1, 3, 0, 4, 2};
  auto t = RowTable::build(ids, 3, 3, 6);
  CHECK(t.active == std::vector<int32_t>{1, 3, 5, 0, 2, 4});
  const std::vector<int32_t> ids2 = {5, 3, 1, 0};
  auto t2 = RowTable::build(ids2, 4, 1, 6);
  CHECK(t2.active == std::vector<int32_t>{0, 1, 3, 5});
  check_table(t2, ids2);
}

TEST_CASE("row table: k = 1, one token, no tokens, k = n_expert") {
  const std::vector<int32_t> k1 = {3, 3, 0, 3};
  auto a = RowTable::build(k1, 4, 1, 4);
  CHECK(a.entries == std::vector<int32_t>{2, 0, 1, 3});
  CHECK(a.active == std::vector<int32_t>{3, 0});
  check_table(a, k1);

  const std::vector<int32_t> one = {7, 2, 5};
  auto b = RowTable::build(one, 1, 3, 8);
  CHECK(b.active == std::vector<int32_t>{2, 5, 7});
  CHECK(b.entries == std::vector<int32_t>{1, 2, 0});
  check_table(b, one);

  auto c = RowTable::build({}, 0, 2, 4);
  CHECK(c.entries.empty());
  CHECK(c.active.empty());
  CHECK(c.offsets == std::vector<int32_t>{0, 0, 0, 0, 0});

  const std::vector<int32_t> all = {1, 0, 2, 2, 1, 0};
  auto d = RowTable::build(all, 2, 3, 3);
  CHECK(d.active == std::vector<int32_t>{0, 1, 2});
  check_table(d, all);
}

TEST_CASE("row table: invalid input is rejected") {
  const std::vector<int32_t> ok = {0, 1};
  CHECK_THROWS_AS(RowTable::build(std::vector<int32_t>{0, 4}, 1, 2, 4), Error);   // id == n_expert
  CHECK_THROWS_AS(RowTable::build(std::vector<int32_t>{-1, 2}, 1, 2, 4), Error);  // negative id
  CHECK_THROWS_AS(RowTable::build(std::vector<int32_t>{2, 2}, 1, 2, 4), Error);   // same expert twice
  CHECK_THROWS_AS(RowTable::build(ok, 2, 2, 4), Error);                           // too few ids
  CHECK_THROWS_AS(RowTable::build(ok, 1, 2, 1), Error);                           // k > n_expert
  CHECK_THROWS_AS(RowTable::build(ok, 2, 0, 4), Error);                           // k < 1
  CHECK_THROWS_AS(RowTable::build(ok, -1, 2, 4), Error);
  try {
    RowTable::build(std::vector<int32_t>{0, 1, 3, 9}, 2, 2, 8);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("expert 9") != std::string::npos);
  }
  // The same expert in two different tokens is fine.
  CHECK_NOTHROW(RowTable::build(std::vector<int32_t>{2, 1, 2, 1}, 2, 2, 4));
}

TEST_CASE("row table: random chunks keep every property") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int iter = 0; iter < 200; ++iter) {
    const int n_expert = rng.int_in(1, 130);
    const int k = rng.int_in(1, std::min(n_expert, 9));
    const int n_tokens = rng.int_in(0, 70);
    // Skewed routing (a few hot experts), as real routers produce.
    const int hot = rng.int_in(1, n_expert);
    std::vector<int32_t> ids;
    for (int t = 0; t < n_tokens; ++t) {
      std::vector<int32_t> pick;
      while (static_cast<int>(pick.size()) < k) {
        const int e = (rng.int_in(0, 3) != 0) ? rng.int_in(0, hot - 1) : rng.int_in(0, n_expert - 1);
        // A repeat is drawn again; the full-range draws guarantee k distinct ids in the end.
        if (std::find(pick.begin(), pick.end(), e) == pick.end()) pick.push_back(e);
      }
      ids.insert(ids.end(), pick.begin(), pick.end());
    }
    INFO("iter=" << iter << " n_tokens=" << n_tokens << " k=" << k << " n_expert=" << n_expert);
    auto t = RowTable::build(ids, n_tokens, k, n_expert);
    check_table(t, ids);
    // Group sizes equal the histogram of ids.
    for (int e = 0; e < n_expert; ++e) CHECK(t.rows(e) == std::count(ids.begin(), ids.end(), e));
  }
}
