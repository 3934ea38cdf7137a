// Expert streaming on the GPU: budgets that leave experts in pinned host memory; the ring's results equal the
// all-resident GPU run's bit for bit, and the CPU oracle's within the bounds of parity.h.
#include <cstdio>
#include <cstring>

#include "catch.hpp"
#include "core/model/model.h"
#include "core/plan/expert_store.h"
#include "core/runtime/session.h"
#include "e2e/parity.h"

using namespace strata::core;
using namespace strata::e2e;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Budgets of the one-stage model: every expert streamed through 3 and 16
// slots, and about half the experts resident.
struct Budgets {
  uint64_t min3 = 0, min16 = 0, half = 0, streamed_bytes = 0;
};
Budgets budgets(const std::string& path) {
  ModelOptions mo;
  mo.devices = "cpu";
  const auto m = Model::load(path, mo);
  const StagePlan& stage = m->stages()[0].plan;
  Budgets b;
  b.min3 = all_streamed_budget(*m, stage, 3, StageMemory{});
  b.min16 = all_streamed_budget(*m, stage, 16, StageMemory{});
  StageMemory mem;
  mem.budget = b.min3;
  const StageExperts x = place_stage_experts(*m, stage, mem);
  b.streamed_bytes = x.plan.streamed_bytes;
  b.half = b.min16 + x.plan.streamed_bytes / 2;
  return b;
}

// The smallest budget at which the backends' own placement (sized for the
// streaming chunk where it fits) keeps a quarter of the experts resident and
// streams the rest: adaptive residency then has both kinds to swap. (Not
// half: tiny's ring wants 16 slots, and 16 slots plus 16 of its 32 experts
// cost as much as all 32 resident, which the placement then prefers.)
uint64_t half_resident_budget(const std::string& path) {
  ModelOptions mo;
  mo.devices = "cpu";
  const auto m = Model::load(path, mo);
  const StagePlan& stage = m->stages()[0].plan;
  const int32_t n = stage.n_layers * m->config().n_expert;
  ExpertOptions adaptive;
  adaptive.adaptive = true;
  uint64_t budget = all_streamed_budget(*m, stage, 3, StageMemory{});
  for (;;) {
    const StageExperts x = place_for_default_chunk(*m, stage, budget, adaptive);
    REQUIRE(x.streams());  // the loop stops before everything fits
    if (x.plan.n_resident() * 4 >= n) return budget;
    budget += x.layouts[0].bytes * 4;
  }
}

}  // namespace

TEST_CASE("qwen3-30b-a3b, 8 layers: streamed experts give the resident GPU logits bit for bit", "[streaming]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  const auto toks = tokens(256, 151643);
  const Budgets b = budgets(path);
  // 256-token chunks stream every expert (stream-all), 16-token chunks what each layer routes, 4-token chunks
  // take the vector kernels; then 4 decode steps.
  for (int chunk : {256, 16, 4}) {
    const Run resident = run_counts(path, Placement{"0"}, toks, chunk, KvType::F16, 4);
    for (uint64_t budget : {b.min3, b.min16, b.half}) {
      INFO("chunk " << chunk << " budget " << budget);
      Placement p{"0"};
      p.vram_budget = budget;
      p.decode_cpu_share = 0;  // the GPU computes every expert: the same kernels as the resident run
      const Run got = run_counts(path, p, toks, chunk, KvType::F16, 4);
      std::printf("chunk %d, budget %.2f GiB: %.1f MB streamed by the prompt\n", chunk, budget / 1073741824.0,
                  got.bytes_streamed / 1e6);
      CHECK(same_bits(got.logits, resident.logits));
      CHECK(got.counts == resident.counts);
      CHECK(got.bytes_streamed > 0);
      if (chunk == 256 && budget == b.min3) CHECK(got.bytes_streamed == b.streamed_bytes);
    }
  }
}

TEST_CASE("qwen3-30b-a3b, 8 layers: streamed and split against the CPU oracle", "[streaming]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  const auto toks = tokens(128, 151643);
  const Run cpu = run_counts(path, Placement{"cpu"}, toks, 64, KvType::F16, 4);
  const Budgets b = budgets(path);
  Placement one{"0"};
  one.vram_budget = b.min16;
  Placement two{"0,0", "auto"};
  two.vram_budget = b.min16 / 2 + (uint64_t(1) << 30);
  for (const Placement& p : {one, two}) {
    std::printf("devices %s, budget %.2f GiB:\n", p.devices, p.vram_budget / 1073741824.0);
    const Run gpu = run_counts(path, p, toks, 64, KvType::F16, 4);
    CHECK(gpu.bytes_streamed > 0);
    CHECK(routing_flips(gpu.counts, cpu.counts) <= kMaxFlipShare * 132 * 8 * 8);
    compare(gpu.logits, cpu.logits, 151669, kBound);
  }
}

// Tiny's down rows (128 values of Q8_0) take the vector kernels at every chunk size: the masked-entry path.
// In Q4_K, and in Q3_K, Q2_K and IQ4_XS (gate and up through the mma.sync GEMM only; IQ4_XS's down rows are IQ4_NL).
TEST_CASE("tiny: streamed experts give the resident GPU logits bit for bit", "[streaming]") {
  for (const char* quant : {"q4_k", "q3_k", "q2_k", "iq4_xs"}) {
    INFO(quant);
    const std::string path = model_path({"tiny", 4, "small", quant});
    const auto toks = tokens(96, 509);
    const Budgets b = budgets(path);
    for (int chunk : {96, 5}) {
      const Run resident = run_counts(path, Placement{"0"}, toks, chunk, KvType::F16, 3);
      Placement p{"0"};
      p.vram_budget = b.min3;
      p.decode_cpu_share = 0;
      const Run got = run_counts(path, p, toks, chunk, KvType::F16, 3);
      CHECK(same_bits(got.logits, resident.logits));
      CHECK(got.bytes_streamed > 0);
    }
  }
}

// Decode with streamed experts: all streamed by the GPU, all computed by the CPU from the arena, and the
// cost model's mix; each against the CPU oracle (teacher-forced prompt logits, then 24 decode steps), with
// every expert streamed and with half of them resident (both kinds of expert meet in a step).
TEST_CASE("qwen3-30b-a3b, 8 layers: hybrid decode (GPU ring and CPU experts) against the CPU oracle", "[streaming]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  const auto toks = tokens(32, 151643);
  const Run cpu = run_counts(path, Placement{"cpu"}, toks, 8, KvType::F16, 24);
  const Budgets b = budgets(path);
  for (uint64_t budget : {b.min16, b.half}) {
    for (double share : {0.0, 1.0, -1.0}) {
      Placement p{"0"};
      p.vram_budget = budget;
      p.decode_cpu_share = share;
      std::printf("budget %.2f GiB, decode_cpu_share %.1f:\n", budget / 1073741824.0, share);
      const Run gpu = run_counts(path, p, toks, 8, KvType::F16, 24);
      compare(gpu.logits, cpu.logits, 151669, kBound);
    }
  }
}

// Adaptive residency on the GPU: swaps copy blobs between the arena and VRAM between prompts; the logits of a
// sequence of prompts equal those with residency fixed, bit for bit.
TEST_CASE("tiny: adaptive residency swaps experts between prompts without changing a bit", "[streaming]") {
  const std::string path = model_path({"tiny", 4, "small"});
  const uint64_t budget = half_resident_budget(path);
  auto sequence = [&](int32_t swaps, uint64_t* generation) {
    ModelOptions mo;
    mo.devices = "0";
    mo.vram_budget = budget;
    mo.adapt_swaps = swaps;
    const auto m = Model::load(path, mo);
    SessionOptions so;
    so.n_ctx = 200;
    so.chunk_size = 5;
    so.decode_cpu_share = 0;
    Session s(m, so);
    std::vector<float> out;
    for (int i = 0; i < 4; ++i) {
      s.prompt(tokens(30 + i, 509));
      const auto l = s.logits();
      out.insert(out.end(), l.begin(), l.end());
    }
    *generation = m->stages()[0].backend->generation();
    return out;
  };
  uint64_t g_fixed = 0, g_adaptive = 0;
  const auto fixed = sequence(0, &g_fixed);
  const auto adaptive = sequence(8, &g_adaptive);
  CHECK(g_fixed == 0);
  CHECK(g_adaptive > 0);
  CHECK(same_bits(adaptive, fixed));
}

