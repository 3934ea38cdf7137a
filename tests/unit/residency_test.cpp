// Adaptive residency plans: decayed usage, which streamed experts swap in for which resident ones, and the plan after.
#include <algorithm>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/plan/placement.h"
#include "core/plan/residency.h"

using namespace strata::core;

namespace {

// 2 layers x 4 experts of 1024 bytes; room for 3 slots and 3 residents, every expert in the arena.
PlacementPlan small_plan() {
  PlacementInput in;
  in.dense_bytes.assign(2, 0);
  in.expert_bytes.assign(2, std::vector<uint64_t>(4, 1024));
  in.budget = 6 * 1024;
  in.arena_holds_resident = true;
  return plan_placement(in);
}

std::vector<uint64_t> sizes(const PlacementPlan& p) { return std::vector<uint64_t>(p.resident.size(), 1024); }

std::vector<int32_t> resident_set(const PlacementPlan& p) {
  std::vector<int32_t> r;
  for (size_t i = 0; i < p.resident.size(); ++i)
    if (p.resident[i]) r.push_back(static_cast<int32_t>(i));
  return r;
}

}  // namespace

TEST_CASE("residency: usage decays by kUsageDecay and adds the new rows") {
  std::vector<double> u = {10, 0, 5};
  const std::vector<uint64_t> routed = {0, 3, 5};
  decay_usage(u, routed);
  CHECK(u == std::vector<double>{8, 3, 9});
  CHECK_THROWS_AS(decay_usage(u, std::vector<uint64_t>(2)), Error);
}

TEST_CASE("residency: the hottest streamed experts replace the coldest resident ones, deterministically") {
  const PlacementPlan p = small_plan();
  REQUIRE(p.ring_slots == 3);
  // Uniform order: (0,0) (1,0) (0,1) resident = flat 0, 4, 1.
  REQUIRE(resident_set(p) == std::vector<int32_t>{0, 1, 4});
  std::vector<double> usage = {1, 5, 9, 9, 0, 2, 7, 3};
  // Streamed by usage: 2 (9), 3 (9, tie: lower index first), 6 (7), 7 (3), 5 (2); resident: 4 (0), 0 (1), 1 (5).
  const auto swaps = plan_swaps(p, usage, sizes(p), 16);
  CHECK(swaps == std::vector<ExpertSwap>{{2, 4}, {3, 0}, {6, 1}});
  CHECK(plan_swaps(p, usage, sizes(p), 2) == std::vector<ExpertSwap>{{2, 4}, {3, 0}});
  CHECK(plan_swaps(p, usage, sizes(p), 0).empty());
  // Only strictly hotter experts move: equal usage keeps what is resident.
  CHECK(plan_swaps(p, std::vector<double>(8, 1.0), sizes(p), 16).empty());
  // A blob of another size cannot take a resident's place.
  std::vector<uint64_t> odd = sizes(p);
  odd[2] = 2048;
  CHECK(plan_swaps(p, usage, odd, 1) == std::vector<ExpertSwap>{{3, 4}});
  CHECK_THROWS_AS(plan_swaps(p, std::vector<double>(3), sizes(p), 1), Error);
  CHECK_THROWS_AS(plan_swaps(p, usage, sizes(p), -1), Error);
}

TEST_CASE("residency: applying swaps moves flags, resident offsets and the streamed list") {
  PlacementPlan p = small_plan();
  const uint64_t streamed_before = p.streamed_bytes;
  const uint64_t off4 = p.resident_offset[4], off0 = p.resident_offset[0];
  const std::vector<ExpertSwap> swaps = {{2, 4}, {3, 0}};
  apply_swaps(p, swaps, sizes(p));
  CHECK(resident_set(p) == std::vector<int32_t>{1, 2, 3});
  CHECK(p.resident_offset[2] == off4);
  CHECK(p.resident_offset[3] == off0);
  CHECK(p.resident_offset[4] == UINT64_MAX);
  CHECK(p.streamed_bytes == streamed_before);
  CHECK(p.n_resident() == 3);
  std::vector<ExpertRef> want = {{0, 0}, {1, 0}, {1, 1}, {1, 2}, {1, 3}};
  CHECK(p.streamed == want);
  // Swapping back restores the residency.
  const std::vector<ExpertSwap> back = {{4, 2}, {0, 3}};
  apply_swaps(p, back, sizes(p));
  CHECK(resident_set(p) == std::vector<int32_t>{0, 1, 4});
  // Errors: a swap in of a resident expert, and an expert without a host copy.
  CHECK_THROWS_AS(apply_swaps(p, std::vector<ExpertSwap>{{0, 1}}, sizes(p)), Error);
  PlacementInput in;
  in.dense_bytes.assign(2, 0);
  in.expert_bytes.assign(2, std::vector<uint64_t>(4, 1024));
  in.budget = 6 * 1024;
  PlacementPlan no_copy = plan_placement(in);
  CHECK_THROWS_AS(apply_swaps(no_copy, std::vector<ExpertSwap>{{2, 4}}, sizes(no_copy)), Error);
}
