// RingSchedule: slot safety under simulated timing, each blob once, long vs short mode, 3 slots, empty layers.
#include "prefill/ring.h"

#include <algorithm>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "prefill/row_table.h"
#include "ring_sim.h"
#include "test_random.h"

using strata::core::Error;
using strata::prefill::plan_ring;
using strata::prefill::RingInput;
using strata::core::RingMode;
using strata::prefill::RingSchedule;

namespace {

ring_sim::Times uniform_times(const RingSchedule& s, double load, double compute, double dense) {
  ring_sim::Times t;
  t.load.assign(s.loads.size(), load);
  t.compute.assign(s.computes.size(), compute);
  t.dense.assign(s.n_layer(), dense);
  return t;
}

// Every listed (layer, expert) is loaded exactly once and computed exactly once, in list order.
void check_cover(const RingInput& in, const RingSchedule& s) {
  REQUIRE(s.layer_begin.size() == in.layers.size() + 1);
  REQUIRE(s.loads.size() == s.computes.size());
  for (size_t l = 0; l < in.layers.size(); ++l) {
    const auto& want = in.layers[l];
    REQUIRE(s.layer_begin[l + 1] - s.layer_begin[l] == static_cast<int>(want.size()));
    for (size_t j = 0; j < want.size(); ++j) {
      const auto& ld = s.loads[s.layer_begin[l] + j];
      CHECK(ld.layer == static_cast<int>(l));
      CHECK(ld.expert == want[j]);
    }
  }
  for (size_t i = 0; i < s.computes.size(); ++i) CHECK(s.computes[i].load == static_cast<int>(i));
}

}  // namespace

TEST_CASE("ring: random schedules never overwrite a slot in use and load each blob once") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int iter = 0; iter < 300; ++iter) {
    RingInput in;
    in.mode = rng.int_in(0, 1) ? RingMode::StreamAll : RingMode::Routed;
    in.n_slots = rng.int_in(1, 9);
    in.first_slot = rng.int_in(0, in.n_slots - 1);
    const int n_layer = rng.int_in(0, 6);
    for (int l = 0; l < n_layer; ++l) {
      std::vector<int32_t> experts(16);
      for (int e = 0; e < 16; ++e) experts[e] = e;
      std::shuffle(experts.begin(), experts.end(), rng.gen);
      experts.resize(rng.int_in(0, rng.int_in(0, 1) ? 3 : 16));  // some layers stream nothing
      in.layers.push_back(experts);
    }
    const RingSchedule s = plan_ring(in);
    check_cover(in, s);
    CHECK(s.next_slot == (in.first_slot + static_cast<int>(s.loads.size())) % in.n_slots);

    ring_sim::Times t;
    std::uniform_real_distribution<double> dur(0.01, 3.0);
    for (size_t i = 0; i < s.loads.size(); ++i) t.load.push_back(dur(rng.gen));
    for (size_t i = 0; i < s.computes.size(); ++i) t.compute.push_back(dur(rng.gen));
    for (int l = 0; l < n_layer; ++l) t.dense.push_back(dur(rng.gen));
    for (int k = 0; k < in.n_slots; ++k) t.slot_free0.push_back(dur(rng.gen));
    const auto tl = ring_sim::simulate(s, t);
    INFO("iter " << iter << " slots " << in.n_slots);
    CHECK(ring_sim::check_slots(s, tl) == "");
    // No load starts before its slot's release from before the schedule.
    for (size_t i = 0; i < s.loads.size(); ++i) {
      if (s.loads[i].wait_compute < 0) CHECK(tl.load_start[i] >= t.slot_free0[s.loads[i].slot]);
    }
  }
}

TEST_CASE("ring: the simulator catches a schedule that forgets a wait") {
  RingInput in;
  in.mode = RingMode::StreamAll;
  in.n_slots = 3;
  in.layers = {{0, 1, 2, 3, 4, 5}};
  RingSchedule s = plan_ring(in);
  auto t = uniform_times(s, 1.0, 10.0, 0.0);  // slow computes: loads would run ahead
  CHECK(ring_sim::check_slots(s, ring_sim::simulate(s, t)) == "");
  s.loads[4].wait_compute = -1;
  CHECK(ring_sim::check_slots(s, ring_sim::simulate(s, t)) != "");
  // And a wait on a later compute deadlocks.
  s = plan_ring(in);
  s.loads[4].wait_compute = 4;
  CHECK(ring_sim::check_slots(s, ring_sim::simulate(s, t)) == "deadlock");
}

TEST_CASE("ring: three slots, exact slots and waits") {
  RingInput in;
  in.mode = RingMode::Routed;
  in.n_slots = 3;
  in.first_slot = 2;
  in.layers = {{7, 3}, {}, {5, 1, 9}, {4}};
  const RingSchedule s = plan_ring(in);
  check_cover(in, s);
  CHECK(s.layer_begin == std::vector<int32_t>{0, 2, 2, 5, 6});
  const std::vector<int32_t> slots{2, 0, 1, 2, 0, 1};
  const std::vector<int32_t> waits{-1, -1, -1, 0, 1, 2};
  const std::vector<int32_t> known{0, 0, 2, 2, 2, 3};
  for (size_t i = 0; i < 6; ++i) {
    CHECK(s.loads[i].slot == slots[i]);
    CHECK(s.computes[i].slot == slots[i]);
    CHECK(s.loads[i].wait_compute == waits[i]);
    CHECK(s.loads[i].known_after_layer == known[i]);
  }
  CHECK(s.next_slot == 2);
}

TEST_CASE("ring: StreamAll runs the link ahead across layers, Routed waits for each routing") {
  RingInput in;
  in.n_slots = 64;
  for (int l = 0; l < 4; ++l) in.layers.push_back({0, 1, 2, 3, 4, 5, 6, 7});

  // Link-bound (load 1.0 per blob) with a long dense part (attention 5.0).
  in.mode = RingMode::StreamAll;
  const RingSchedule all = plan_ring(in);
  for (const auto& ld : all.loads) CHECK(ld.known_after_layer == -1);
  const auto ta = ring_sim::simulate(all, uniform_times(all, 1.0, 0.1, 5.0));
  CHECK(ring_sim::check_slots(all, ta) == "");
  // The copy stream never idles: 32 back-to-back loads.
  for (size_t i = 1; i < all.loads.size(); ++i) CHECK(ta.load_start[i] == ta.load_end[i - 1]);
  CHECK(ta.load_end.back() == Catch::Approx(32.0));

  in.mode = RingMode::Routed;
  const RingSchedule routed = plan_ring(in);
  const auto tr = ring_sim::simulate(routed, uniform_times(routed, 1.0, 0.1, 5.0));
  CHECK(ring_sim::check_slots(routed, tr) == "");
  for (size_t i = 0; i < routed.loads.size(); ++i) {
    CHECK(tr.load_start[i] >= tr.dense_end[routed.loads[i].layer]);
  }
  // Each layer's loads wait for its attention: the Routed chunk is slower here.
  CHECK(tr.end > ta.end + 4 * 4.0);

  // A 3-slot StreamAll ring lets only 3 blobs run ahead: the link idles during attention.
  in.mode = RingMode::StreamAll;
  in.n_slots = 3;
  const RingSchedule small = plan_ring(in);
  const auto ts = ring_sim::simulate(small, uniform_times(small, 1.0, 0.1, 5.0));
  CHECK(ring_sim::check_slots(small, ts) == "");
  CHECK(ts.end > ta.end);
}

TEST_CASE("ring: the cursor carries into the next chunk safely") {
  RingInput in;
  in.mode = RingMode::StreamAll;
  in.n_slots = 4;
  in.layers = {{0, 1, 2}, {0, 1, 2, 3, 4}};
  const RingSchedule first = plan_ring(in);
  auto t1 = uniform_times(first, 1.0, 2.0, 0.5);
  const auto tl1 = ring_sim::simulate(first, t1);
  REQUIRE(ring_sim::check_slots(first, tl1) == "");

  // Each slot's release time at the end of chunk 1 is the end of its last compute.
  ring_sim::Times t2;
  t2.slot_free0.assign(4, 0.0);
  for (size_t i = 0; i < first.computes.size(); ++i) t2.slot_free0[first.computes[i].slot] = tl1.compute_end[i];
  in.first_slot = first.next_slot;
  CHECK(in.first_slot == 0);  // 8 loads over 4 slots
  in.layers = {{5}, {6, 7}};
  const RingSchedule second = plan_ring(in);
  t2.load.assign(3, 1.0);
  t2.compute.assign(3, 1.0);
  t2.dense.assign(2, 0.1);
  const auto tl2 = ring_sim::simulate(second, t2);
  CHECK(ring_sim::check_slots(second, tl2) == "");
  // The first load of chunk 2 takes the slot freed longest ago.
  CHECK(second.loads[0].slot == first.computes[first.computes.size() - 4].slot);
  for (size_t i = 0; i < 3; ++i) CHECK(tl2.load_start[i] >= t2.slot_free0[second.loads[i].slot]);
}

TEST_CASE("ring: layer lists from the placement mask and the row table") {
  using strata::prefill::RowTable;
  CHECK(strata::prefill::ring_layer_all({true, false, true, true}) == std::vector<int32_t>{0, 2, 3});
  CHECK(strata::prefill::ring_layer_all({false, false}).empty());
  // 4 tokens, k = 2, 5 experts: groups e0:1 e1:3 e2:2 e3:0 e4:2.
  const std::vector<int32_t> ids{1, 0, 1, 2, 1, 4, 2, 4};
  const RowTable t = RowTable::build(ids, 4, 2, 5);
  REQUIRE(t.active == std::vector<int32_t>{1, 2, 4, 0});
  CHECK(strata::prefill::ring_layer_routed(t, {true, true, true, true, true}) == std::vector<int32_t>{1, 2, 4, 0});
  CHECK(strata::prefill::ring_layer_routed(t, {true, false, true, true, false}) == std::vector<int32_t>{2, 0});
  CHECK(strata::prefill::ring_layer_routed(t, std::vector<bool>(5, false)).empty());
  CHECK_THROWS_AS(strata::prefill::ring_layer_routed(t, std::vector<bool>(4, true)), Error);
}

TEST_CASE("ring: invalid input") {
  RingInput in;
  in.layers = {{1, 2}};
  in.n_slots = 0;
  CHECK_THROWS_AS(plan_ring(in), Error);
  in.n_slots = 3;
  in.first_slot = 3;
  CHECK_THROWS_AS(plan_ring(in), Error);
  in.first_slot = 0;
  in.layers = {{1, 2, 1}};
  CHECK_THROWS_AS(plan_ring(in), Error);
  in.layers = {{1}, {-2}};
  CHECK_THROWS_AS(plan_ring(in), Error);
  in.layers = {};
  const RingSchedule s = plan_ring(in);
  CHECK(s.loads.empty());
  CHECK(s.n_layer() == 0);
  CHECK(s.next_slot == 0);
}

TEST_CASE("ring: a layer's computes in the fewest batches of at most a third of the ring, sizes within one") {
  using strata::prefill::ring_batch_ends;
  CHECK(ring_batch_ends(0, 121, 233) == std::vector<int32_t>{61, 121});        // at most 77 a batch
  CHECK(ring_batch_ends(10, 131, 233) == std::vector<int32_t>{71, 131});       // offsets carry
  CHECK(ring_batch_ends(0, 77, 233) == std::vector<int32_t>{77});              // one full batch
  CHECK(ring_batch_ends(0, 78, 233) == std::vector<int32_t>{39, 78});
  CHECK(ring_batch_ends(0, 7, 3) == std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7});  // one a batch in a ring of 3
  CHECK(ring_batch_ends(0, 10, 9) == std::vector<int32_t>{3, 6, 8, 10});       // 3 a batch: 3, 3, 2, 2
  CHECK(ring_batch_ends(5, 5, 233).empty());
  // Any layer: batches cover it in order, none larger than a third of the ring, sizes within one.
  for (int32_t slots : {1, 2, 3, 4, 8, 50, 233})
    for (int32_t n = 0; n <= 200; n += 7) {
      const std::vector<int32_t> ends = ring_batch_ends(3, 3 + n, slots);
      int32_t prev = 3, lo = 1 << 30, hi = 0;
      for (int32_t e : ends) {
        CHECK(e > prev);
        lo = std::min(lo, e - prev);
        hi = std::max(hi, e - prev);
        prev = e;
      }
      CHECK(prev == 3 + n);
      if (n > 0) {
        CHECK(hi <= std::max(1, slots / 3));
        CHECK(hi - lo <= 1);
        CHECK(ends.size() == static_cast<size_t>((n + std::max(1, slots / 3) - 1) / std::max(1, slots / 3)));
      }
    }
  CHECK_THROWS_AS(ring_batch_ends(0, 4, 0), Error);
  CHECK_THROWS_AS(ring_batch_ends(4, 3, 8), Error);
}
