// Cost model: the seeds' fallback rules exactly, the recurrence against the ring simulator, monotonicity, 2-card gains.
#include "core/plan/cost.h"

#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "prefill/ring.h"
#include "ring_sim.h"
#include "test_random.h"

using namespace strata::core;
using strata::prefill::plan_ring;
using strata::prefill::RingInput;

namespace {

// Qwen3-30B-A3B Q4_K (issue 5): 48 layers, 128 experts top-8, 16.3 GB of experts.
MoeShape qwen3_30b(int32_t n_layer = 48) {
  MoeShape m;
  m.n_layer = n_layer;
  m.n_expert = 128;
  m.k = 8;
  m.n_embd = 2048;
  m.n_ff_exp = 768;
  m.blob_bytes = 16'300'000'000ull / (48 * 128);
  return m;
}

// Fixed compute rates for the peer predictions below (the estimates they were
// worked out with, before ComputeRates' defaults were measured): these tests
// check the model's arithmetic, so their inputs must not move with the defaults.
ComputeRates fixed_rates() {
  ComputeRates c;
  c.expert_tflops = 200.0;
  c.expert_group_s = 15e-6;
  c.dense_token_s = 0.4e-6;
  c.attn_pair_s = 4e-11;
  return c;
}

PeerSetup h200_pair(int64_t tokens, int32_t pieces) {
  PeerSetup s;
  s.shape = qwen3_30b();
  s.tokens = tokens;
  s.pieces = pieces;
  s.primary = s.peer = fixed_rates();
  return s;  // default links: H200, PCIe Gen5 x16, 55 GB/s each
}

}  // namespace

TEST_CASE("cost: the stage helper's fallback share, exactly as seed 000 states") {
  // min(0.45, 0.5 - T / 16384), off below 0.3.
  CHECK(helper_share_fallback(1100) == 0.5 - 1100.0 / 16384);  // 0.4329
  CHECK(helper_share_fallback(2000) == 0.5 - 2000.0 / 16384);  // 0.3779
  CHECK(helper_share_fallback(3000) == 0.5 - 3000.0 / 16384);  // 0.3169
  CHECK(helper_share_fallback(3300) == 0.0);                   // 0.2986: off
  CHECK(helper_share_fallback(4000) == 0.0);
  CHECK(helper_share_fallback(8000) == 0.0);
  CHECK(helper_share_fallback(0) == 0.45);  // the cap
  CHECK(helper_share_fallback(819) == 0.45);
  CHECK(helper_share_fallback(820) == 0.5 - 820.0 / 16384);
  CHECK(helper_share_fallback(3276) == 0.5 - 3276.0 / 16384);  // 0.30005: the last on
  CHECK(helper_share_fallback(3277) == 0.0);                   // "~3.3K tokens"
  CHECK_THROWS_AS(helper_share_fallback(-1), Error);

  // Overrides: off, fixed, measured, fallback.
  CHECK(helper_share(1100, false, -1, nullptr) == 0.0);
  CHECK(helper_share(1100, false, 0.4, nullptr) == 0.0);
  CHECK(helper_share(5000, true, 0.2, nullptr) == 0.2);
  CHECK(helper_share(1100, true, -1, nullptr) == helper_share_fallback(1100));
  const PeerSetup s = h200_pair(1100, 0);
  CHECK(helper_share(1100, true, -1, &s) == choose_peer_share(s).share);
  CHECK_THROWS_AS(helper_share(1100, true, 1.5, nullptr), Error);
}

TEST_CASE("cost: piece count rule") {
  CHECK(choose_peer_pieces(0, 10e-6) == 8);  // nothing measured: seed 004's 8
  CHECK(choose_peer_pieces(1e-3, 0) == 8);
  CHECK(choose_peer_pieces(1e-3, 10e-6, 4) == 4);
  CHECK(choose_peer_pieces(640e-6, 10e-6) == 8);  // sqrt(64)
  CHECK(choose_peer_pieces(10e-6, 10e-6) == 1);
  CHECK(choose_peer_pieces(1.0, 10e-6) == 64);    // capped
  CHECK(choose_peer_pieces(300e-6, 10e-6) == 5);  // sqrt(30) = 5.48: 5 and 6 both cost 110 us; the fewer
  CHECK(choose_peer_pieces(350e-6, 10e-6) == 6);  // 5: 120 us, 6: 118.3 us
  CHECK_THROWS_AS(choose_peer_pieces(1, 1, 0), Error);
}

TEST_CASE("cost: the peer_pieces option values") {
  CHECK(resolve_peer_pieces(0) == 0);
  CHECK(resolve_peer_pieces(1) == 8);
  CHECK(resolve_peer_pieces(2) == 2);
  CHECK(resolve_peer_pieces(16) == 16);
  CHECK_THROWS_AS(resolve_peer_pieces(-1), Error);
  CHECK_THROWS_AS(resolve_peer_pieces(5000), Error);
}

TEST_CASE("cost: the chunk recurrence equals the event simulation of plan_ring's schedule") {
  strata::test::Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  std::uniform_real_distribution<double> dur(0.01, 2.0);
  for (int iter = 0; iter < 200; ++iter) {
    const RingMode mode = rng.int_in(0, 1) ? RingMode::StreamAll : RingMode::Routed;
    const int32_t n_slots = rng.int_in(1, 8);
    std::vector<LayerWork> work(rng.int_in(0, 5));
    RingInput in;
    in.mode = mode;
    in.n_slots = n_slots;
    ring_sim::Times t;
    for (auto& w : work) {
      w.dense_s = dur(rng.gen);
      const int n = rng.int_in(0, 6);
      std::vector<int32_t> experts;
      for (int j = 0; j < n; ++j) {
        experts.push_back(j);
        w.load_s.push_back(dur(rng.gen));
        w.compute_s.push_back(dur(rng.gen));
        t.load.push_back(w.load_s.back());
        t.compute.push_back(w.compute_s.back());
      }
      in.layers.push_back(experts);
      t.dense.push_back(w.dense_s);
    }
    const auto tl = ring_sim::simulate(plan_ring(in), t);
    const ChunkTimeline c = simulate_chunk(work, n_slots, mode);
    INFO("iter " << iter);
    CHECK(c.total_s == Catch::Approx(tl.end).epsilon(1e-12));
  }
}

TEST_CASE("cost: predictions respect the link floor and deeper rings never hurt") {
  const MoeShape m = qwen3_30b();
  const LinkRates link;
  const ComputeRates c;
  const double floor_s = 16.3e9 / 55e9;  // issue 5: 0.294 s for a chunk touching every expert
  for (int64_t t : {512, 2048, 8192}) {
    const ChunkTimeline p = predict_chunk(m, t, 0, RingMode::StreamAll, 64, link, c);
    CHECK(p.total_s >= floor_s * 0.999);
    CHECK(p.link_busy_s == Catch::Approx(floor_s).epsilon(1e-3));
  }
  // 2048 tokens all streamed: link bound, near the floor (issue 5's target is >= 95% of it).
  const ChunkTimeline p2k = predict_chunk(m, 2048, 0, RingMode::StreamAll, 64, link, c);
  CHECK(floor_s / p2k.total_s > 0.95);

  for (int64_t t : {64, 2048, 8192}) {
    const auto work = expected_work(m, t, 0, RingMode::StreamAll, link, c);
    double last = 1e300;
    for (int32_t slots = 1; slots <= 300; slots += 7) {
      const double now = simulate_chunk(work, slots, RingMode::StreamAll).total_s;
      CHECK(now <= last * (1 + 1e-12));
      last = now;
    }
    const int32_t d = choose_ring_depth(m, t, 0, RingMode::StreamAll, 3, 256, link, c);
    const double best = simulate_chunk(work, 256, RingMode::StreamAll).total_s;
    CHECK(simulate_chunk(work, d, RingMode::StreamAll).total_s <= best * 1.01);
    if (d > 3) CHECK(simulate_chunk(work, d - 1, RingMode::StreamAll).total_s > best * 1.01);
  }
  // Attention grows with the context: a deeper ring is wanted late in a long prompt.
  CHECK(choose_ring_depth(m, 2048, 30000, RingMode::StreamAll, 3, 256, link, c) >
        choose_ring_depth(m, 2048, 0, RingMode::StreamAll, 3, 256, link, c));
}

TEST_CASE("cost: expected work per mode, residents and the ring mode by cost") {
  MoeShape m = qwen3_30b(4);
  m.streamed = {128, 64, 0, 100};
  const LinkRates link;
  const ComputeRates c;
  const auto all = expected_work(m, 2048, 0, RingMode::StreamAll, link, c);
  CHECK(all[0].load_s.size() == 128);
  CHECK(all[1].load_s.size() == 64);
  CHECK(all[2].load_s.empty());
  CHECK(all[2].resident_s > all[1].resident_s);
  CHECK(all[0].resident_s == 0);
  const auto few = expected_work(m, 4, 0, RingMode::Routed, link, c);
  // 4 tokens x 8 of 128: frac = 1 - (15/16)^4 = 0.2275; 128 * 0.2275 = 29.1 -> 29 loads.
  CHECK(few[0].load_s.size() == 29);
  CHECK(few[2].load_s.empty());
  const auto half = expected_work(m, 2048, 0, RingMode::StreamAll, link, c, 0.5);
  CHECK(half[0].load_s.size() == 64);

  const MoeShape full = qwen3_30b();
  CHECK(choose_ring_mode_by_cost(full, 1, 0, 16, link, c) == RingMode::Routed);
  CHECK(choose_ring_mode_by_cost(full, 4096, 0, 64, link, c) == RingMode::StreamAll);
  CHECK(layer_compute_s(full, c, 4096, 0) > layer_compute_s(full, c, 2048, 0));
  CHECK(layer_compute_s(full, c, 2048, 8192) > layer_compute_s(full, c, 2048, 0));
  CHECK(expert_time_s(full, c, 0) == 0);
  CHECK(dense_time_s(c, 0, 100) == 0);

  MoeShape bad = full;
  bad.streamed = {1, 2};
  CHECK_THROWS_AS(expected_work(bad, 10, 0, RingMode::Routed, link, c), Error);
  LinkRates slow;
  slow.h2d_GBps = 0;
  CHECK_THROWS_AS(expected_work(full, 10, 0, RingMode::Routed, slow, c), Error);
  CHECK_THROWS_AS(expected_work(full, 10, 0, RingMode::Routed, link, c, 1.5), Error);
  CHECK_THROWS_AS(simulate_chunk({}, 0, RingMode::Routed), Error);
}

TEST_CASE("cost: a faster peer link takes a larger share") {
  double last = -1;
  for (double gbps : {5.0, 10.0, 20.0, 30.0, 40.0, 55.0}) {
    PeerSetup s = h200_pair(2048, 8);
    s.peer_link.h2d_GBps = gbps;
    s.peer_link.mapped_read_GBps = gbps * 51 / 55;
    const PeerShareChoice c = choose_peer_share(s);
    INFO(gbps << " GB/s: share " << c.share);
    CHECK(c.share > last);
    CHECK(c.share <= 0.5 + 1e-6);  // never more than the primary keeps, with equal links at most even
    CHECK(c.gain() >= 1.0);
    last = c.share;
  }
  // A peer behind a hopeless route gets nothing and changes nothing.
  PeerSetup s = h200_pair(2048, 0);
  s.peer_link.mapped_read_GBps = 0.01;
  const PeerShareChoice none = choose_peer_share(s);
  CHECK(none.share == 0.0);
  CHECK(none.gain() == 1.0);
  // Longer chunks grow compute and transfers: the share falls (seed 000's observation).
  double prev = 2;
  for (int64_t t : {2048, 4096, 8192, 16384}) {
    const double share = choose_peer_share(h200_pair(t, 8)).share;
    CHECK(share <= prev + 1e-6);
    prev = share;
  }
}

TEST_CASE("cost: predicted two-card gains on 2x H200, PCIe Gen5 at 55 GB/s each") {
  // Peer share (issue 7) on the host route, FP16. At 2048 tokens the chunk is
  // link bound (0.296 s alone): half the experts move to the second link and
  // the prediction is 1.90x; pieces matter once transfers grow with the chunk.
  const PeerShareChoice p2k = choose_peer_share(h200_pair(2048, 0));
  CHECK(p2k.share == Catch::Approx(0.5).margin(1e-3));
  CHECK(p2k.alone_s == Catch::Approx(0.296).margin(0.002));
  CHECK(p2k.gain() == Catch::Approx(1.90).margin(0.02));
  const PeerShareChoice u8k = choose_peer_share(h200_pair(8192, 0));
  const PeerShareChoice p8k = choose_peer_share(h200_pair(8192, 8));
  CHECK(u8k.gain() == Catch::Approx(1.15).margin(0.02));
  CHECK(p8k.gain() == Catch::Approx(1.21).margin(0.02));
  CHECK(p8k.shared_s < u8k.shared_s);  // seed 004 measured +7% on V100s at 10K-38K tokens

  // Stage helper (seed 000): 2 stages of 24 layers, one-chunk prompt of 2000
  // tokens, the fallback share 0.378 on the host route without pieces. Link
  // bound, the stage would gain 1 / (1 - 0.378) = 1.61x; reading the
  // helper's sums through the primary's own link leaves 1.54x.
  PeerSetup stage = h200_pair(2000, 0);
  stage.shape = qwen3_30b(24);
  const double share = helper_share_fallback(2000);
  const double gain = predict_peer_time_s(stage, 0) / predict_peer_time_s(stage, share);
  CHECK(gain == Catch::Approx(1.54).margin(0.01));
  CHECK(gain < 1.0 / (1 - share));
  CHECK(choose_peer_share(stage).gain() > gain);  // the measured-rate choice does better than the fallback
}

TEST_CASE("cost: hybrid decode gives the CPU experts only where it beats the ring with its fixed cost") {
  using strata::core::decode_cpu_experts;
  const double blob = 2.65e6;  // one qwen3-30b-a3b Q4_K expert
  // The H200 machine: 55.3 GB/s link, the CPU at 8.1 GB/s of weights: one expert on the CPU (0.33 ms + a
  // fixed 70 us) takes longer than the ring's seven (0.34 ms): none.
  CHECK(decode_cpu_experts(8, blob, 55.3, 8.1, 70e-6) == 0);
  // Without the fixed cost the rates alone would give it one.
  CHECK(decode_cpu_experts(8, blob, 55.3, 8.1, 0.0) == 1);
  // A slow link (12 GB/s: 0.22 ms a blob): three on the CPU, max(5 x 0.22, 3 x 0.327 + 0.07) = 1.10 ms against
  // 1.77 ms for the ring alone; four would leave the CPU last (1.38 ms).
  CHECK(decode_cpu_experts(8, blob, 12.0, 8.1, 70e-6) == 3);
  // A CPU as fast as the link takes about half.
  CHECK(decode_cpu_experts(8, blob, 20.0, 20.0, 0.0) == 4);
  CHECK(decode_cpu_experts(0, blob, 12.0, 8.1, 0.0) == 0);
  CHECK(decode_cpu_experts(8, blob, 12.0, 0.0, 0.0) == 0);
  CHECK(decode_cpu_experts(8, blob, 0.0, 8.1, 0.0) == 0);
}

TEST_CASE("cost: the CPU's decode rate and fixed cost from one expert and from several at once") {
  using strata::core::cpu_decode_rate;
  const double blob = 2.65e6;
  // 1 expert 100 us, 4 experts 220 us: 40 us an expert (66.25 GB/s), 60 us fixed.
  const strata::core::CpuDecodeRate r = cpu_decode_rate(blob, 100e-6, 4, 220e-6);
  CHECK(r.GBps == Catch::Approx(66.25));
  CHECK(r.fixed_s == Catch::Approx(60e-6));
  // Noise that makes the slope steeper than t1: no negative fixed cost.
  CHECK(cpu_decode_rate(blob, 30e-6, 4, 150e-6).fixed_s == 0.0);
  // No slope, too few experts or no time: no rate (decode then gives the CPU nothing).
  CHECK(cpu_decode_rate(blob, 100e-6, 4, 90e-6).GBps == 0.0);
  CHECK(cpu_decode_rate(blob, 100e-6, 1, 220e-6).GBps == 0.0);
  CHECK(cpu_decode_rate(blob, 0.0, 4, 220e-6).GBps == 0.0);
}

TEST_CASE("cost: the decode tracker follows the CPU's observed times, recovers from a spoiled load measurement") {
  using strata::core::CpuDecodeRate;
  using strata::core::CpuDecodeTracker;
  using strata::core::decode_cpu_experts;
  using strata::core::kCpuDecodeTransferS;
  const double blob = 2.65e6, link = 55.0;
  // Spoiled load measurements (no rate, or a fixed cost of milliseconds) start from the fallback rate.
  CHECK(CpuDecodeTracker(CpuDecodeRate{0.0, 0.0}).rate().GBps == CpuDecodeTracker::kFallbackGBps);
  CHECK(CpuDecodeTracker(CpuDecodeRate{35.0, 4e-3}).rate().GBps == CpuDecodeTracker::kFallbackGBps);
  CHECK(CpuDecodeTracker(CpuDecodeRate{35.0, 4e-3}).rate().fixed_s == 0.0);
  // A sane one is kept, and choose() is decode_cpu_experts at that rate.
  CpuDecodeTracker t(CpuDecodeRate{40.0, 5e-6});
  CHECK(t.rate().GBps == 40.0);
  CHECK(t.choose(8, blob, link) == decode_cpu_experts(8, blob, link, 40.0, 5e-6 + kCpuDecodeTransferS));
  CHECK(t.choose(8, blob, link) == 3);
  // Decode shows 20 GB/s (the link's reads slow the CPU): the rate converges there, the CPU takes fewer.
  for (int i = 0; i < 80; ++i) t.observe(3, blob, 5e-6 + 3 * blob / 20e9);
  CHECK(t.rate().GBps == Catch::Approx(20.0).epsilon(0.01));
  CHECK(t.choose(8, blob, link) == decode_cpu_experts(8, blob, link, t.rate().GBps, 5e-6 + kCpuDecodeTransferS));
  CHECK(t.choose(8, blob, link) == 2);
  // Nothing to learn from no share or no time.
  const double before = t.rate().GBps;
  t.observe(0, blob, 1e-3);
  t.observe(2, blob, 0.0);
  CHECK(t.rate().GBps == before);
}

TEST_CASE("cost: a decode tracker that gives the CPU nothing still probes it with one expert") {
  using strata::core::CpuDecodeRate;
  using strata::core::CpuDecodeTracker;
  const double blob = 2.65e6, link = 55.0;
  CpuDecodeTracker t(CpuDecodeRate{1.0, 0.0});  // a CPU far slower than the link
  for (int round = 0; round < 3; ++round) {
    for (int i = 1; i < CpuDecodeTracker::kProbeEvery; ++i) CHECK(t.choose(8, blob, link) == 0);
    CHECK(t.choose(8, blob, link) == 1);
  }
  CHECK(t.choose(1, blob, link) == 0);  // one expert: the ring's alone
  // Faster than the load said: the probes' times raise the rate until the CPU takes a share on its own.
  for (int i = 0; i < 100; ++i) t.observe(1, blob, blob / 40e9);
  CHECK(t.choose(8, blob, link) >= 2);
}
