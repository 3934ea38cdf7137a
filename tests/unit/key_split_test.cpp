// Decode attention's key split (core/plan/key_split.h): the ranges cover the keys exactly, follow the rule's bounds, and the grid bound is the most ranges any shorter context needs.
#include "core/plan/key_split.h"

#include <cstdint>

#include "catch.hpp"

namespace {

using strata::core::GroupDecodeSplit;
using strata::core::KeySplit;
using strata::core::PerHeadDecodeSplit;

template <class Rule>
void check_rule(int64_t unit, int64_t min_keys, int32_t max_splits) {
  int32_t most = 0;
  for (int64_t n = 1; n <= 70000; ++n) {
    const KeySplit s = Rule::split(n);
    INFO("n_kv " << n << ": " << s.n_split << " ranges of " << s.keys_per_split);
    REQUIRE(s.keys_per_split % unit == 0);
    REQUIRE(s.keys_per_split >= min_keys);
    REQUIRE(s.n_split >= 1);
    REQUIRE(s.n_split <= max_splits);
    // Exactly covered, no empty range.
    REQUIRE((s.n_split - 1) * s.keys_per_split < n);
    REQUIRE(s.n_split * s.keys_per_split >= n);
    // As few ranges as the bounds allow: one tile shorter a range would need more than max_splits.
    if (s.keys_per_split > min_keys) REQUIRE((n + s.keys_per_split - unit - 1) / (s.keys_per_split - unit) > max_splits);
    // The grid for max_kv = n is the most ranges any n_kv <= n takes: enough, and no block more.
    most = s.n_split > most ? s.n_split : most;
    REQUIRE(Rule::max_split(n) == most);
  }
}

}  // namespace

TEST_CASE("key split: both decode kernels' rules cover the keys in bounded ranges, the grid bound exact") {
  SECTION("per head: 64-key tiles, up to 128 ranges") { check_rule<PerHeadDecodeSplit>(64, 64, 128); }
  SECTION("group: 128-key ranges, up to 32") { check_rule<GroupDecodeSplit>(128, 128, 32); }
}

TEST_CASE("key split: the ranges the ops tests and benchmarks name") {
  auto is = [](KeySplit s, int32_t n, int64_t per) { return s.n_split == n && s.keys_per_split == per; };
  CHECK(is(PerHeadDecodeSplit::split(1), 1, 64));
  CHECK(is(PerHeadDecodeSplit::split(200), 4, 64));
  CHECK(is(PerHeadDecodeSplit::split(2100), 33, 64));
  CHECK(is(PerHeadDecodeSplit::split(8192), 128, 64));
  CHECK(is(PerHeadDecodeSplit::split(8200), 65, 128));
  CHECK(is(PerHeadDecodeSplit::split(5000), 79, 64));
  CHECK(is(PerHeadDecodeSplit::split(20000), 105, 192));
  CHECK(is(GroupDecodeSplit::split(512), 4, 128));
  CHECK(is(GroupDecodeSplit::split(4096), 32, 128));
  CHECK(is(GroupDecodeSplit::split(4097), 17, 256));  // fewer ranges than a shorter context: the grid keeps 32
  CHECK(GroupDecodeSplit::max_split(4097) == 32);
  CHECK(is(GroupDecodeSplit::split(8192), 32, 256));
  CHECK(is(GroupDecodeSplit::split(32768), 32, 1024));
}
