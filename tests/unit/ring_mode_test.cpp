// The ring mode rule (core/plan/ring_mode.h): the expected routed fraction and the threshold that picks StreamAll.
#include "core/plan/ring_mode.h"

#include "catch.hpp"
#include "core/base/error.h"

using strata::core::choose_ring_mode;
using strata::core::Error;
using strata::core::expected_routed_fraction;
using strata::core::RingMode;

TEST_CASE("ring: mode rule and its threshold") {
  CHECK(expected_routed_fraction(0, 8, 128) == 0.0);
  CHECK(expected_routed_fraction(1, 8, 128) == Catch::Approx(8.0 / 128));
  CHECK(expected_routed_fraction(5, 4, 4) == 1.0);
  // k = 8 of 128: 1 - (15/16)^T >= 0.9 from T = 36 on.
  CHECK(choose_ring_mode(35, 8, 128) == RingMode::Routed);
  CHECK(choose_ring_mode(36, 8, 128) == RingMode::StreamAll);
  CHECK(choose_ring_mode(2048, 8, 128) == RingMode::StreamAll);
  // A stricter threshold moves the switch: 0.999 needs T >= 108.
  CHECK(choose_ring_mode(107, 8, 128, 0.999) == RingMode::Routed);
  CHECK(choose_ring_mode(108, 8, 128, 0.999) == RingMode::StreamAll);
  // Mixtral-like 2 of 8: T >= 9.
  CHECK(choose_ring_mode(8, 2, 8) == RingMode::Routed);
  CHECK(choose_ring_mode(9, 2, 8) == RingMode::StreamAll);
  CHECK_THROWS_AS(expected_routed_fraction(-1, 8, 128), Error);
  CHECK_THROWS_AS(choose_ring_mode(-1, 8, 128), Error);
  CHECK_THROWS_AS(choose_ring_mode(10, 0, 128), Error);
  CHECK_THROWS_AS(choose_ring_mode(10, 9, 8), Error);
  CHECK_THROWS_AS(choose_ring_mode(10, 8, 128, 0.0), Error);
  CHECK_THROWS_AS(choose_ring_mode(10, 8, 128, 1.5), Error);
}
