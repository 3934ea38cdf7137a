// PlacementPlan and byte sizes: fits-all, fits-none, partial, ranking, uniform spread, exact boundaries, errors.
#include "core/plan/placement.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/bytes.h"
#include "core/base/error.h"

using strata::core::Error;
using strata::core::ExpertRef;
using strata::core::PlacementInput;
using strata::core::PlacementPlan;
using strata::core::plan_placement;

namespace {

constexpr uint64_t kBlob = 1000;  // one expert; slots round it to 1024 with slot_align 256

// n_layer layers of n_expert equal experts, 100 dense bytes each.
PlacementInput model(int n_layer, int n_expert, uint64_t budget) {
  PlacementInput in;
  in.fixed_bytes = 500;
  in.dense_bytes.assign(n_layer, 100);
  in.expert_bytes.assign(n_layer, std::vector<uint64_t>(n_expert, kBlob));
  in.kv_bytes = 300;
  in.prompt_bytes = 200;
  in.budget = budget;
  return in;
}

uint64_t base_of(const PlacementInput& in) {
  uint64_t dense = std::accumulate(in.dense_bytes.begin(), in.dense_bytes.end(), uint64_t{0});
  return in.fixed_bytes + dense + in.kv_bytes + in.prompt_bytes;
}

// Invariants every plan keeps, whatever the input.
void check_plan(const PlacementInput& in, const PlacementPlan& p) {
  CHECK(p.device_bytes <= in.budget);
  CHECK(p.device_bytes ==
        p.fixed_bytes + p.dense_bytes + p.kv_bytes + p.prompt_bytes + p.ring_bytes + p.resident_bytes);
  CHECK(p.ring_bytes == static_cast<uint64_t>(p.ring_slots) * p.slot_bytes);
  CHECK(p.slot_bytes % in.slot_align == 0);
  uint64_t streamed = 0;
  size_t n_streamed = 0;
  // Resident pool: each resident blob inside it, aligned, disjoint.
  std::vector<std::pair<uint64_t, uint64_t>> pool, arena;
  for (int l = 0; l < p.n_layer; ++l) {
    for (int e = 0; e < p.n_experts(l); ++e) {
      const int i = p.index(l, e);
      const uint64_t b = in.expert_bytes[l][e];
      CHECK(b <= p.slot_bytes);
      if (p.resident[i]) {
        REQUIRE(p.resident_offset[i] != UINT64_MAX);
        CHECK(p.resident_offset[i] % in.slot_align == 0);
        CHECK(p.resident_offset[i] + b <= p.resident_bytes);
        pool.push_back({p.resident_offset[i], p.resident_offset[i] + b});
        if (!in.arena_holds_resident) CHECK(p.arena_offset[i] == UINT64_MAX);
      } else {
        streamed += b;
        ++n_streamed;
        CHECK(p.resident_offset[i] == UINT64_MAX);
        REQUIRE(p.arena_offset[i] != UINT64_MAX);
      }
      if (p.arena_offset[i] != UINT64_MAX) {
        CHECK(p.arena_offset[i] % in.arena_align == 0);
        CHECK(p.arena_offset[i] + b <= p.arena_bytes);
        arena.push_back({p.arena_offset[i], p.arena_offset[i] + b});
      }
    }
  }
  for (auto* ranges : {&pool, &arena}) {
    std::sort(ranges->begin(), ranges->end());
    for (size_t i = 1; i < ranges->size(); ++i) CHECK((*ranges)[i - 1].second <= (*ranges)[i].first);
  }
  CHECK(p.streamed_bytes == streamed);
  REQUIRE(p.streamed.size() == n_streamed);
  for (size_t i = 1; i < p.streamed.size(); ++i) {
    const auto& a = p.streamed[i - 1];
    const auto& b = p.streamed[i];
    CHECK((a.layer < b.layer || (a.layer == b.layer && a.expert < b.expert)));
  }
  if (n_streamed == 0) {
    CHECK(p.ring_slots == 0);
  } else {
    CHECK(p.ring_slots >= in.min_slots);
    CHECK(static_cast<size_t>(p.ring_slots) <= std::max<size_t>(in.min_slots, n_streamed));
    // First fit leaves less than any streamed blob unused.
    for (const auto& x : p.streamed) {
      CHECK(in.budget - p.device_bytes < strata::core::align_up(in.expert_bytes[x.layer][x.expert], in.slot_align));
    }
  }
  // The rank is a permutation of all experts.
  CHECK(p.rank.size() == static_cast<size_t>(p.layer_base.back()));
}

}  // namespace

TEST_CASE("placement: everything fits, no ring, no arena") {
  auto in = model(4, 8, 1'000'000);
  auto p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.n_resident() == 32);
  CHECK(p.ring_slots == 0);
  CHECK(p.streamed.empty());
  CHECK(p.arena_bytes == 0);
  CHECK(p.resident_bytes == 32 * 1024);
}

TEST_CASE("placement: exact boundary of everything fitting") {
  auto in = model(4, 8, 0);
  const uint64_t all = base_of(in) + 32 * 1024;  // blobs aligned to 256 in the pool
  in.budget = all;
  auto p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.n_resident() == 32);
  CHECK(p.device_bytes == all);

  // One byte less: a ring of 3 slots must come first, so 3 experts go (and 2
  // more do not fit beside the ring... exactly 3 here: 3 slots = 3 blobs).
  in.budget = all - 1;
  p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.ring_slots == 3);
  CHECK(p.n_resident() == 32 - 4);  // 3 slots + the byte short evicts a 4th
  CHECK(p.streamed.size() == 4);
}

TEST_CASE("placement: nothing resident, the ring only") {
  auto in = model(4, 8, 0);
  in.budget = base_of(in) + 3 * 1024;  // exactly the minimum
  auto p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.n_resident() == 0);
  CHECK(p.ring_slots == 3);
  CHECK(p.device_bytes == in.budget);
  CHECK(p.streamed.size() == 32);
  CHECK(p.streamed_bytes == 32 * kBlob);
  // Arena: (layer, expert) order, 256-aligned blobs of 1000 bytes.
  CHECK(p.arena_offset[p.index(0, 0)] == 0);
  CHECK(p.arena_offset[p.index(0, 1)] == 1024);
  CHECK(p.arena_offset[p.index(1, 0)] == 8 * 1024);
  CHECK(p.arena_bytes == 31 * 1024 + kBlob);
}

TEST_CASE("placement: over budget is an OUT_OF_MEMORY error naming the shortfall") {
  auto in = model(4, 8, 0);
  in.budget = base_of(in) + 3 * 1024 - 1;  // one byte short
  try {
    plan_placement(in);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_OUT_OF_MEMORY);
    const std::string msg = e.what();
    CHECK(msg.find("short") != std::string::npos);
    CHECK(msg.find("ring 3 x") != std::string::npos);
    CHECK(msg.find("MiB") != std::string::npos);  // small sizes in MiB
  }
  // A budget far below the dense part: the shortfall figure is the difference.
  in.dense_bytes.assign(4, uint64_t{3} << 30);
  in.budget = uint64_t{10} << 30;
  try {
    plan_placement(in);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_OUT_OF_MEMORY);
    CHECK(std::string(e.what()).find("2.00 GiB short") != std::string::npos);
  }
}

TEST_CASE("placement: partial residency, ring depth from leftovers") {
  auto in = model(4, 8, 0);
  in.budget = base_of(in) + 3 * 1024 + 10 * 1024 + 600;  // ring + 10 experts + a part of one
  auto p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.n_resident() == 10);
  CHECK(p.ring_slots == 3);  // 600 bytes left: no 4th slot

  // Wanted depth is reserved before residents.
  in.ring_slots_wanted = 6;
  p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.ring_slots == 6);
  CHECK(p.n_resident() == 7);

  // Wanted beyond the cap (two layers' worth = 16 here) is clamped.
  in.ring_slots_wanted = 100;
  in.budget = base_of(in) + 20 * 1024;
  p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.ring_slots == 16);
  CHECK(p.n_resident() == 4);
}

TEST_CASE("placement: a deep wanted ring next to small blobs stays within what streams") {
  // One big blob sets the slot size; many small ones are cheap to keep resident.
  PlacementInput in;
  in.dense_bytes = {10, 10};
  in.expert_bytes = {{8192, 8192, 8192, 8192}, std::vector<uint64_t>(64, 256)};
  in.ring_slots_wanted = 1000;
  for (uint64_t room = 3 * 8192; room < 4 * 8192 + 64 * 256; room += 1000) {
    in.budget = 20 + room;
    auto p = plan_placement(in);
    check_plan(in, p);
    CHECK(p.ring_slots <= 2 * 64);
  }
}

TEST_CASE("placement: uniform order spreads residency over layers") {
  auto in = model(6, 16, 0);
  in.budget = base_of(in) + 3 * 1024 + 20 * 1024;  // 20 residents over 6 layers
  auto p = plan_placement(in);
  check_plan(in, p);
  REQUIRE(p.n_resident() == 20);
  for (int l = 0; l < 6; ++l) {
    int n = 0;
    for (int e = 0; e < 16; ++e) n += p.is_resident(l, e);
    CHECK(n == (l < 2 ? 4 : 3));  // 20 = 6 * 3 + 2: the first two layers get one more
    // the lowest expert ids of each layer go first
    for (int e = 0; e < n; ++e) CHECK(p.is_resident(l, e));
  }
  CHECK(p.rank[0] == ExpertRef{0, 0});
  CHECK(p.rank[1] == ExpertRef{1, 0});
  CHECK(p.rank[6] == ExpertRef{0, 1});
}

TEST_CASE("placement: a usage profile ranks hottest first, ties in uniform order") {
  auto in = model(3, 4, 0);
  in.profile.assign(3, std::vector<double>(4, 1.0));
  in.profile[2][3] = 50;
  in.profile[0][2] = 40;
  in.profile[1][1] = 40;  // tie with (0,2): uniform order puts expert 1 before expert 2
  in.profile[2][0] = 0;
  in.budget = base_of(in) + 3 * 1024 + 4 * 1024;
  auto p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.rank[0] == ExpertRef{2, 3});
  CHECK(p.rank[1] == ExpertRef{1, 1});
  CHECK(p.rank[2] == ExpertRef{0, 2});
  CHECK(p.rank[3] == ExpertRef{0, 0});  // the first count-1 expert in uniform order
  CHECK(p.rank.back() == ExpertRef{2, 0});
  CHECK(p.n_resident() == 4);
  CHECK(p.is_resident(2, 3));
  CHECK(p.is_resident(1, 1));
  CHECK(p.is_resident(0, 2));
  CHECK(p.is_resident(0, 0));
  CHECK_FALSE(p.is_resident(2, 0));
}

TEST_CASE("placement: blobs of different sizes, dense layers, arena of all experts") {
  PlacementInput in;
  in.dense_bytes = {100, 100, 100};
  in.expert_bytes = {{5000, 5000, 5000, 5000}, {}, {700, 700, 700, 700}};  // layer 1 is dense
  in.arena_holds_resident = true;
  in.budget = 300 + 3 * 5120 + 5120 + 2 * 768 + 100;
  auto p = plan_placement(in);
  check_plan(in, p);
  CHECK(p.slot_bytes == 5120);
  // Uniform order: (0,0) (2,0) (0,1) (2,1) (0,2) (2,2) ... Room for 5120 + 1536 + 100:
  // (0,0) 5120 in, (2,0) 768 in, (0,1) no, (2,1) 768 in, the rest no.
  CHECK(p.is_resident(0, 0));
  CHECK(p.is_resident(2, 0));
  CHECK(p.is_resident(2, 1));
  CHECK_FALSE(p.is_resident(0, 1));
  CHECK(p.n_experts(1) == 0);
  CHECK(p.streamed_mask(1).empty());
  CHECK(p.streamed_mask(2) == std::vector<bool>{false, false, true, true});
  for (int i = 0; i < p.layer_base.back(); ++i) CHECK(p.arena_offset[i] != UINT64_MAX);
}

TEST_CASE("placement: invalid inputs") {
  auto bad = [](auto edit) {
    auto in = model(2, 4, 1'000'000);
    edit(in);
    try {
      plan_placement(in);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
    }
  };
  bad([](PlacementInput& in) { in.dense_bytes.pop_back(); });
  bad([](PlacementInput& in) { in.profile.assign(2, std::vector<double>(3, 1.0)); });
  bad([](PlacementInput& in) { in.profile.assign(1, std::vector<double>(4, 1.0)); });
  bad([](PlacementInput& in) { in.profile.assign(2, std::vector<double>(4, -1.0)); });
  bad([](PlacementInput& in) { in.expert_bytes[1][2] = 0; });
  bad([](PlacementInput& in) { in.slot_bytes = 999; });
  bad([](PlacementInput& in) { in.min_slots = 0; });
  bad([](PlacementInput& in) { in.max_slots = 2; });
  bad([](PlacementInput& in) { in.ring_slots_wanted = -1; });
  bad([](PlacementInput& in) { in.arena_align = 32; });
  bad([](PlacementInput& in) { in.arena_align = 96; });
  bad([](PlacementInput& in) { in.slot_align = 3; });
}

TEST_CASE("bytes: size strings") {
  using strata::core::parse_byte_size;
  CHECK(parse_byte_size("12GiB") == 12ull << 30);
  CHECK(parse_byte_size("12G") == 12ull << 30);
  CHECK(parse_byte_size("800MB") == 800'000'000ull);
  CHECK(parse_byte_size("800mib") == 800ull << 20);
  CHECK(parse_byte_size("1.5GiB") == 3ull << 29);
  CHECK(parse_byte_size(" 64 KiB ") == 65536);
  CHECK(parse_byte_size("4096") == 4096);
  CHECK(parse_byte_size("4096B") == 4096);
  CHECK(parse_byte_size("2TB") == 2'000'000'000'000ull);
  CHECK(parse_byte_size("18446744073709551615") == UINT64_MAX);
  CHECK(parse_byte_size(".5K") == 512);
  for (const char* bad : {"", "  ", "GiB", "-1GiB", "12XB", "1e3", "0x10", "12 GiB extra", "16EiB",
                          "18446744073709551616", "20000000TiB", "."}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_byte_size(bad), Error);
  }
  try {
    parse_byte_size("12Gibs");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("'gibs'") != std::string::npos);
  }
}

TEST_CASE("bytes: alignment, checked arithmetic, GiB text") {
  using namespace strata::core;
  CHECK(align_up(0, 256) == 0);
  CHECK(align_up(1, 256) == 256);
  CHECK(align_up(256, 256) == 256);
  CHECK(align_up(257, 64) == 320);
  CHECK_THROWS_AS(align_up(1, 0), Error);
  CHECK_THROWS_AS(align_up(1, 48), Error);
  CHECK_THROWS_AS(align_up(UINT64_MAX, 2), Error);
  CHECK(add_bytes(1, 2) == 3);
  CHECK_THROWS_AS(add_bytes(UINT64_MAX, 1), Error);
  CHECK(mul_bytes(0, UINT64_MAX) == 0);
  CHECK_THROWS_AS(mul_bytes(1ull << 32, 1ull << 32), Error);
  CHECK(format_bytes(3ull << 29) == "1.50 GiB");
  CHECK(format_bytes(0) == "0.00 GiB");
  CHECK(format_bytes(3ull << 19) == "1.50 MiB");  // small sizes stay readable
  CHECK(format_bytes(1ull << 30) == "1.00 GiB");
}
