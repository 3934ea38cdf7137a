// handoff_piece: exact cover, balance within one row, more pieces than rows, one piece.
#include "prefill/pieces.h"

#include <algorithm>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"

using strata::core::Error;
using strata::prefill::handoff_piece;
using strata::prefill::PieceBounds;

TEST_CASE("pieces: cover every row exactly once, in order, balanced within one row") {
  for (int64_t n : {0, 1, 2, 7, 8, 9, 100, 1023, 16384, 37808}) {
    for (int p : {1, 2, 3, 7, 8, 9, 16, 64}) {
      INFO("n_rows=" << n << " pieces=" << p);
      std::vector<int> hits(n, 0);
      int64_t expect_begin = 0, lo = INT64_MAX, hi = 0;
      for (int i = 0; i < p; ++i) {
        const PieceBounds b = handoff_piece(n, p, i);
        REQUIRE(b.begin == expect_begin);  // contiguous, in order
        REQUIRE(b.end >= b.begin);
        for (int64_t r = b.begin; r < b.end; ++r) hits[r] += 1;
        expect_begin = b.end;
        lo = std::min(lo, b.size());
        hi = std::max(hi, b.size());
      }
      CHECK(expect_begin == n);
      CHECK(hi - lo <= 1);
      CHECK(std::count(hits.begin(), hits.end(), 1) == n);
    }
  }
}

TEST_CASE("pieces: exact bounds") {
  CHECK(handoff_piece(10, 4, 0) == PieceBounds{0, 2});
  CHECK(handoff_piece(10, 4, 1) == PieceBounds{2, 5});
  CHECK(handoff_piece(10, 4, 2) == PieceBounds{5, 7});
  CHECK(handoff_piece(10, 4, 3) == PieceBounds{7, 10});
  // One piece is the whole range: the pieced route degenerates to the unpieced one.
  CHECK(handoff_piece(12345, 1, 0) == PieceBounds{0, 12345});
  // More pieces than rows: empty pieces, each row still in one.
  int nonempty = 0;
  for (int i = 0; i < 8; ++i) nonempty += handoff_piece(3, 8, i).size() == 1;
  CHECK(nonempty == 3);
  CHECK(handoff_piece(0, 8, 5).size() == 0);
  // Huge counts do not overflow.
  const int64_t big = int64_t{1} << 62;
  CHECK(handoff_piece(big, 1000, 999).end == big);
  CHECK(handoff_piece(big, 3, 1).begin == big / 3);
}

TEST_CASE("pieces: invalid arguments") {
  CHECK_THROWS_AS(handoff_piece(-1, 8, 0), Error);
  CHECK_THROWS_AS(handoff_piece(10, 0, 0), Error);
  CHECK_THROWS_AS(handoff_piece(10, 8, 8), Error);
  CHECK_THROWS_AS(handoff_piece(10, 8, -1), Error);
}
