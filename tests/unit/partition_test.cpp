// PartitionPlan: 1..8 stages, uneven devices, explicit counts, errors, brute-force optimality; layer_split parsing.
#include "core/plan/partition.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "test_random.h"

using strata::core::Error;
using strata::core::LayerSplit;
using strata::core::parse_layer_split;
using strata::core::PartitionInput;
using strata::core::PartitionPlan;
using strata::core::plan_partition;
using strata::core::StageDevice;

namespace {

constexpr uint64_t GiB = uint64_t{1} << 30;

PartitionInput uniform(int n_layer, int n_dev, uint64_t budget) {
  PartitionInput in;
  in.layer_bytes.assign(n_layer, 100 << 20);         // dense + KV
  in.layer_expert_bytes.assign(n_layer, 300 << 20);  // experts
  in.devices.assign(n_dev, StageDevice{budget, 512 << 20});
  in.split.kind = LayerSplit::Kind::Auto;
  return in;
}

// Ranges contiguous, in order, covering every layer once; figures consistent.
void check_plan(const PartitionInput& in, const PartitionPlan& p) {
  const int n_layer = static_cast<int>(in.layer_bytes.size());
  REQUIRE(p.n_stage() >= 1);
  int next = 0;
  double max_time = 0;
  for (int s = 0; s < p.n_stage(); ++s) {
    const auto& st = p.stages[s];
    CHECK(st.device == s);
    CHECK(st.first_layer == next);
    CHECK(st.n_layers >= 1);
    next = st.end_layer();
    CHECK(st.has_embd == (s == 0));
    CHECK(st.has_head == (s == p.n_stage() - 1));
    CHECK(st.needed_bytes() <= st.budget);
    CHECK(st.needed_bytes() + st.resident_room == st.budget);
    CHECK(st.streamed_bytes == (st.expert_bytes > st.resident_room ? st.expert_bytes - st.resident_room : 0));
    for (int l = st.first_layer; l < st.end_layer(); ++l) CHECK(p.stage_of_layer(l) == s);
    max_time = std::max(max_time, st.time_s);
  }
  CHECK(next == n_layer);
  CHECK(p.max_time_s == max_time);
}

// Every split of n_layer into n_stage non-empty ranges.
void each_split(int n_layer, int n_stage, const std::function<void(const std::vector<int32_t>&)>& f) {
  std::vector<int32_t> counts(n_stage, 1);
  std::function<void(int, int)> rec = [&](int s, int left) {
    if (s == n_stage - 1) {
      counts[s] = left;
      f(counts);
      return;
    }
    for (int c = 1; c <= left - (n_stage - 1 - s); ++c) {
      counts[s] = c;
      rec(s + 1, left - c);
    }
  };
  rec(0, n_layer);
}

std::string counts_of(const PartitionPlan& p) {
  std::string s;
  for (const auto& st : p.stages) s += (s.empty() ? "" : ",") + std::to_string(st.n_layers);
  return s;
}

}  // namespace

TEST_CASE("partition: 1 to 8 equal stages split equal layers evenly") {
  for (int n_dev = 1; n_dev <= 8; ++n_dev) {
    auto in = uniform(48, n_dev, 40 * GiB);  // everything fits: bytes decide
    const PartitionPlan p = plan_partition(in);
    INFO(n_dev << " stages: " << counts_of(p));
    check_plan(in, p);
    REQUIRE(p.n_stage() == n_dev);
    int lo = 48, hi = 0;
    for (const auto& st : p.stages) lo = std::min(lo, st.n_layers), hi = std::max(hi, st.n_layers);
    CHECK(hi - lo <= 1);
    CHECK(p.max_time_s == 0);
  }
}

TEST_CASE("partition: embedding and head weigh on the first and last stage") {
  auto in = uniform(48, 3, 40 * GiB);
  in.embd_bytes = 2000ull << 20;  // about 5 layers' worth
  in.head_bytes = 2000ull << 20;
  const PartitionPlan p = plan_partition(in);
  check_plan(in, p);
  CHECK(p.stages[0].n_layers < 16);
  CHECK(p.stages[2].n_layers < 16);
  CHECK(p.stages[1].n_layers > 16);
  CHECK(std::abs(p.stages[0].n_layers - p.stages[2].n_layers) <= 1);
}

TEST_CASE("partition: uneven devices, all fits: layers in proportion to budgets") {
  auto in = uniform(48, 2, 0);
  in.devices[0].budget = 40 * GiB;
  in.devices[1].budget = 20 * GiB;
  const PartitionPlan p = plan_partition(in);
  check_plan(in, p);
  CHECK(p.stages[0].n_layers == 32);  // fill (layers * 400 MiB + 512 MiB) / budget even: 32 vs 16
  CHECK(p.stages[1].n_layers == 16);
}

TEST_CASE("partition: uneven devices, streaming: the streamed time is evened") {
  auto in = uniform(48, 2, 0);  // 48 * 400 MiB = 18.75 GiB in all
  in.devices[0].budget = 12 * GiB;
  in.devices[1].budget = 6 * GiB;
  const PartitionPlan p = plan_partition(in);
  check_plan(in, p);
  // Each added layer moves 400 MiB of streaming from one stage to the other: the
  // streamed bytes end within one layer's worth of each other.
  const auto a = static_cast<int64_t>(p.stages[0].streamed_bytes), b = static_cast<int64_t>(p.stages[1].streamed_bytes);
  CHECK(std::abs(a - b) <= 400 << 20);
  CHECK(p.stages[0].n_layers > p.stages[1].n_layers);
  // A link twice as fast lets a stage take more streamed bytes.
  in.devices[1].link_GBps = 110;
  const PartitionPlan q = plan_partition(in);
  check_plan(in, q);
  CHECK(q.stages[1].n_layers > p.stages[1].n_layers);
}

TEST_CASE("partition: compute balance with device speeds") {
  PartitionInput in;
  in.layer_bytes.assign(40, 1 << 20);
  in.layer_compute.assign(40, 1.0);
  in.devices.assign(2, StageDevice{10 * GiB, 0});
  in.devices[1].speed = 3.0;  // three times as fast: three times the layers
  in.split.kind = LayerSplit::Kind::Auto;
  const PartitionPlan p = plan_partition(in);
  check_plan(in, p);
  CHECK(p.stages[0].n_layers == 10);
  CHECK(p.stages[1].n_layers == 30);
  CHECK(p.max_time_s == Catch::Approx(10.0));
}

TEST_CASE("partition: auto is optimal against brute force") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  for (int iter = 0; iter < 40; ++iter) {
    const int n_layer = rng.int_in(1, 11);
    const int n_dev = rng.int_in(1, std::min(4, n_layer));
    PartitionInput in;
    for (int l = 0; l < n_layer; ++l) {
      in.layer_bytes.push_back(static_cast<uint64_t>(rng.int_in(1, 50)) << 20);
      in.layer_expert_bytes.push_back(static_cast<uint64_t>(rng.int_in(0, 400)) << 20);
      in.layer_compute.push_back(rng.int_in(0, 100) * 1e-3);
    }
    in.embd_bytes = static_cast<uint64_t>(rng.int_in(0, 100)) << 20;
    in.head_bytes = static_cast<uint64_t>(rng.int_in(0, 100)) << 20;
    for (int d = 0; d < n_dev; ++d) {
      StageDevice dev{static_cast<uint64_t>(rng.int_in(150, 1500)) << 20, static_cast<uint64_t>(rng.int_in(0, 50))
                                                                              << 20};
      dev.link_GBps = rng.int_in(10, 60);
      dev.speed = rng.int_in(1, 4);
      in.devices.push_back(dev);
    }
    in.split.kind = LayerSplit::Kind::Auto;

    double best = 1e300;
    each_split(n_layer, n_dev, [&](const std::vector<int32_t>& counts) {
      PartitionInput e = in;
      e.split = {LayerSplit::Kind::Counts, counts};
      try {
        best = std::min(best, plan_partition(e).max_time_s);
      } catch (const Error& err) {
        CHECK(err.status() == STRATA_ERR_OUT_OF_MEMORY);
      }
    });
    INFO("iter " << iter << " layers " << n_layer << " devices " << n_dev);
    if (best == 1e300) {
      CHECK_THROWS_AS(plan_partition(in), Error);
    } else {
      const PartitionPlan p = plan_partition(in);
      check_plan(in, p);
      CHECK(p.max_time_s <= best * (1 + 1e-9) + 1e-15);
    }
  }
}

TEST_CASE("partition: explicit counts and single stage") {
  auto in = uniform(48, 2, 40 * GiB);
  in.split = parse_layer_split("20,28");
  PartitionPlan p = plan_partition(in);
  check_plan(in, p);
  CHECK(counts_of(p) == "20,28");
  CHECK(p.stage_of_layer(19) == 0);
  CHECK(p.stage_of_layer(20) == 1);
  CHECK_THROWS_AS(p.stage_of_layer(48), Error);

  in.split = parse_layer_split("");
  p = plan_partition(in);
  check_plan(in, p);
  CHECK(p.n_stage() == 1);
  CHECK(p.stages[0].has_embd);
  CHECK(p.stages[0].has_head);
}

TEST_CASE("partition: errors") {
  auto status_of = [](const PartitionInput& in) {
    try {
      plan_partition(in);
    } catch (const Error& e) {
      return e.status();
    }
    return STRATA_OK;
  };
  auto in = uniform(48, 2, 40 * GiB);
  in.split = {LayerSplit::Kind::Counts, {24, 23}};
  CHECK(status_of(in) == STRATA_ERR_INVALID_ARGUMENT);  // sums to 47
  in.split = {LayerSplit::Kind::Counts, {48, 0}};
  CHECK(status_of(in) == STRATA_ERR_INVALID_ARGUMENT);  // a zero
  in.split = {LayerSplit::Kind::Counts, {16, 16, 16}};
  CHECK(status_of(in) == STRATA_ERR_INVALID_ARGUMENT);  // 3 counts, 2 devices

  auto few = uniform(3, 4, 40 * GiB);
  CHECK(status_of(few) == STRATA_ERR_INVALID_ARGUMENT);  // more stages than layers

  auto bad = uniform(4, 1, 40 * GiB);
  bad.layer_compute = {1, 2};
  CHECK(status_of(bad) == STRATA_ERR_INVALID_ARGUMENT);
  bad = uniform(4, 1, 40 * GiB);
  bad.devices[0].speed = 0;
  CHECK(status_of(bad) == STRATA_ERR_INVALID_ARGUMENT);
  bad.layer_bytes.clear();
  CHECK(status_of(bad) == STRATA_ERR_INVALID_ARGUMENT);

  // Counts that do not fit: the message names the stage and the shortfall.
  auto tight = uniform(48, 2, 3 * GiB);  // 24 layers x 100 MiB + 512 MiB = 2.84 GiB fits; 30 do not
  tight.split = parse_layer_split("18,30");
  try {
    plan_partition(tight);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_OUT_OF_MEMORY);
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("stage 1") != std::string::npos);
    CHECK(msg.find("layers 18-47") != std::string::npos);
    CHECK(msg.find("440.00 MiB short") != std::string::npos);  // 3000 + 512 MiB - 3 GiB
  }
  tight.split = parse_layer_split("auto");
  check_plan(tight, plan_partition(tight));

  // Auto with no split that fits names the closest one.
  auto none = uniform(48, 2, 2 * GiB);  // 48 x 100 MiB + 2 x 512 MiB > 4 GiB
  try {
    plan_partition(none);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_OUT_OF_MEMORY);
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("(closest: 24,24)") != std::string::npos);
    CHECK(msg.find("864.00 MiB short") != std::string::npos);  // 2400 + 512 MiB - 2 GiB
  }
}

TEST_CASE("partition: parse_layer_split and helper_stage") {
  CHECK(parse_layer_split("").kind == LayerSplit::Kind::Single);
  CHECK(parse_layer_split(" auto ").kind == LayerSplit::Kind::Auto);
  const LayerSplit s = parse_layer_split("24, 24 ,1");
  CHECK(s.kind == LayerSplit::Kind::Counts);
  CHECK(s.counts == std::vector<int32_t>{24, 24, 1});
  CHECK(parse_layer_split("94").counts == std::vector<int32_t>{94});
  for (const char* bad : {"24,", ",24", "24,,24", "0,48", "-1,49", "24;24", "Auto", "1.5", "99999999999", "a"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_layer_split(bad), Error);
  }
  using strata::core::helper_stage;
  CHECK(helper_stage(0, 1) == -1);
  CHECK(helper_stage(0, 2) == 1);
  CHECK(helper_stage(1, 2) == 0);
  CHECK(helper_stage(2, 3) == 0);
  CHECK_THROWS_AS(helper_stage(3, 3), Error);
}
