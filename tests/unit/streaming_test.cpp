// Expert streaming on the CPU backend: a budget that leaves experts out of "VRAM" sends them through the ring
// (host arena -> slots on a copy thread); the logits equal the all-resident run's bit for bit.
#include <algorithm>
#include <cstring>
#include <shared_mutex>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/model/model.h"
#include "core/plan/expert_store.h"
#include "core/plan/stage_buffers.h"
#include "core/runtime/session.h"
#include "engine_fixtures.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

const std::string& model_path() {
  static const strata::test::TempModel model("streaming", 3, 99);
  return model.path;
}

std::shared_ptr<const Model> load(uint64_t budget, const std::string& devices = "cpu",
                                  const std::string& split = "") {
  ModelOptions o;
  o.devices = devices;
  o.layer_split = split;
  o.vram_budget = budget;
  o.n_threads = 2;
  return Model::load(model_path(), o);
}

// The placement of the whole model as one stage with a budget.
StageExperts placed(uint64_t budget) {
  const auto m = load(0);
  StageMemory mem{.dense_f16 = false};  // as the CPU backend places
  mem.budget = budget;
  return place_stage_experts(*m, m->stages()[0].plan, mem);
}

// Budgets: the dense part, KV and prompt buffers plus 3 ring slots (every
// expert streams), and the deepest ring (2 layers' experts) plus a quarter
// of the experts' bytes (about a quarter resident).
struct Budgets {
  uint64_t all_streamed = 0, half_resident = 0, streamed_bytes = 0;
};
Budgets budgets() {
  const auto m = load(0);
  const PlacementPlan all = placed(uint64_t(1) << 40).plan;
  REQUIRE(all.ring_slots == 0);  // everything fits: nothing streams
  Budgets b;
  b.all_streamed = all_streamed_budget(*m, m->stages()[0].plan, 3, StageMemory{.dense_f16 = false});
  b.half_resident =
      all_streamed_budget(*m, m->stages()[0].plan, 2 * m->config().n_expert, StageMemory{.dense_f16 = false}) +
      all.resident_bytes / 4;
  b.streamed_bytes = placed(b.all_streamed).plan.streamed_bytes;
  return b;
}

struct Run {
  std::vector<float> logits;
  std::vector<uint64_t> counts;
  SessionStats stats;  // of the prompt
  PhaseTimes decode;   // of the three decode steps after it
};

Run run(std::shared_ptr<const Model> m, int n_tokens, int chunk) {
  SessionOptions o;
  o.n_ctx = 128;
  o.chunk_size = chunk;
  Session s(m, o);
  Run r;
  s.prompt(strata::test::lcg_tokens(m->config().n_vocab, n_tokens, 31), [&](int32_t, std::span<const float> l) {
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    return true;
  });
  r.stats = s.stats();
  for (int32_t t : {9, 2, 6}) {
    const auto l = s.decode(t);
    r.logits.insert(r.logits.end(), l.begin(), l.end());
  }
  r.decode = s.stats().decode_phases;
  r.counts = s.expert_counts();
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("placement of a stage: every expert streams at the smallest budget, some at the next") {
  const Budgets b = budgets();
  const StageExperts all = placed(b.all_streamed);
  CHECK(all.plan.n_resident() == 0);
  CHECK(all.plan.ring_slots == 3);
  CHECK(all.plan.streamed_bytes == b.streamed_bytes);
  const StageExperts half = placed(b.half_resident);
  CHECK(half.plan.n_resident() > 0);
  CHECK(half.plan.n_resident() < static_cast<int32_t>(half.plan.resident.size()));
  // Over budget: the dense part alone does not fit.
  CHECK(status_of([&] { load(b.all_streamed - 3 * all.plan.slot_bytes); }) == STRATA_ERR_OUT_OF_MEMORY);
}

TEST_CASE("default prompt chunk: 8192 tokens where every expert fits beside their buffers, else 2048, streaming long") {
  const auto m = load(0);
  const StagePlan& stage = m->stages()[0].plan;
  // The budget at which a chunk's buffers and every expert just fit.
  auto all_resident = [&](int32_t chunk) {
    StageMemory mem;
    mem.budget = uint64_t(1) << 40;
    mem.chunk = chunk;
    const PlacementPlan p = place_stage_experts(*m, stage, mem).plan;
    REQUIRE(p.ring_slots == 0);
    return p.fixed_bytes + p.dense_bytes + p.kv_bytes + p.prompt_bytes + p.resident_bytes;
  };
  const uint64_t small = all_resident(kResidentChunk), large = all_resident(kStreamingChunk);
  REQUIRE(large > small);
  ExpertOptions one, split;
  split.single_stage = false;
  const StageExperts fits = place_for_default_chunk(*m, stage, large, one);
  CHECK(fits.chunk == kStreamingChunk);
  CHECK(!fits.streams());
  // Under a layer split resident stages keep short chunks, which pipeline through the stages.
  CHECK(place_for_default_chunk(*m, stage, large, split).chunk == kResidentChunk);
  // One byte short of the long chunk's buffers: the short chunk keeps every expert resident.
  const StageExperts shorter = place_for_default_chunk(*m, stage, large - 1, one);
  CHECK(shorter.chunk == kResidentChunk);
  CHECK(!shorter.streams());
  // Short of the short chunk's too: it streams (this model's 8192-token buffers alone outweigh its experts).
  const StageExperts tight = place_for_default_chunk(*m, stage, small - 1, one);
  CHECK(tight.chunk == kResidentChunk);
  CHECK(tight.streams());
}

TEST_CASE("streamed experts give the all-resident logits bit for bit, in both ring modes") {
  const Budgets b = budgets();
  const auto resident = load(0);
  // Tiny routes 2 of 8 experts: chunks of 1 and 5 tokens stream what each layer routes, 37 every streamed expert.
  for (int chunk : {1, 5, 37}) {
    const Run ref = run(resident, 37, chunk);
    CHECK(ref.stats.phases.bytes_streamed == 0);
    CHECK(ref.decode.bytes_streamed == 0);
    CHECK(ref.decode.attention_ms > 0);
    for (uint64_t budget : {b.all_streamed, b.half_resident}) {
      INFO("chunk " << chunk << " budget " << budget);
      const Run got = run(load(budget), 37, chunk);
      CHECK(same_bits(got.logits, ref.logits));
      CHECK(got.counts == ref.counts);
      CHECK(got.stats.phases.bytes_streamed > 0);
      if (budget == b.all_streamed && chunk == 37)  // one stream-all chunk moves every blob once
        CHECK(got.stats.phases.bytes_streamed == b.streamed_bytes);
      // Each decode step streams what its layers route.
      if (budget == b.all_streamed) CHECK(got.decode.bytes_streamed > 0);
    }
  }
}

TEST_CASE("streaming under a layer split: two CPU stages, each with its own ring") {
  // The budget where the bigger stage streams every expert.
  const auto split = load(0, "cpu,cpu", "auto");
  uint64_t budget = 0;
  for (const Stage& s : split->stages())
    budget = std::max(budget, all_streamed_budget(*split, s.plan, 3, StageMemory{.dense_f16 = false}));
  const Run ref = run(load(0), 30, 8);
  const Run got = run(load(budget, "cpu,cpu", "auto"), 30, 8);
  CHECK(same_bits(got.logits, ref.logits));
  CHECK(got.stats.phases.bytes_streamed > 0);
}

namespace {

struct Sequence {
  std::vector<float> logits;      // every prompt's last logits
  std::vector<uint64_t> streamed;  // bytes each prompt streamed
  uint64_t generation = 0;         // residency changes at the end
};

// Four prompts in one session, chunks of 5 tokens (each layer streams what it routes).
Sequence run_sequence(std::shared_ptr<const Model> m) {
  SessionOptions o;
  o.n_ctx = 128;
  o.chunk_size = 5;
  Session s(m, o);
  Sequence q;
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    s.prompt(strata::test::lcg_tokens(m->config().n_vocab, 25, seed));
    const auto l = s.logits();
    q.logits.insert(q.logits.end(), l.begin(), l.end());
    q.streamed.push_back(s.stats().phases.bytes_streamed);
  }
  q.generation = m->stages()[0].backend->generation();
  return q;
}

std::shared_ptr<const Model> load_adaptive(uint64_t budget, int32_t swaps) {
  ModelOptions o;
  o.devices = "cpu";
  o.vram_budget = budget;
  o.adapt_swaps = swaps;
  o.n_threads = 2;
  return Model::load(model_path(), o);
}

}  // namespace

TEST_CASE("adaptive residency: hot experts move in between prompts, results unchanged, deterministic") {
  const Budgets b = budgets();
  const Sequence fixed = run_sequence(load_adaptive(b.half_resident, 0));
  const Sequence adaptive = run_sequence(load_adaptive(b.half_resident, 4));
  CHECK(fixed.generation == 0);
  CHECK(adaptive.generation > 0);
  // Residency never changes results.
  CHECK(same_bits(adaptive.logits, fixed.logits));
  // The first prompt runs before any usage is known; after it the hot experts are resident and less streams.
  CHECK(adaptive.streamed[0] == fixed.streamed[0]);
  uint64_t after_fixed = 0, after_adaptive = 0;
  for (size_t i = 1; i < fixed.streamed.size(); ++i) {
    after_fixed += fixed.streamed[i];
    after_adaptive += adaptive.streamed[i];
  }
  CHECK(after_adaptive < after_fixed);
  // The same requests give the same swaps.
  const Sequence again = run_sequence(load_adaptive(b.half_resident, 4));
  CHECK(again.streamed == adaptive.streamed);
  CHECK(again.generation == adaptive.generation);
  // Residency counts are preserved by swaps.
  const auto m = load_adaptive(b.half_resident, 4);
  const ExpertResidency before = m->residency();
  run_sequence(m);
  CHECK(m->residency().resident == before.resident);
  CHECK(m->residency().streamed == before.streamed);
  // Never while a session runs: the swap waits for a later request.
  const std::shared_lock running(m->residency_mutex());
  CHECK_FALSE(m->adapt(std::vector<uint64_t>(static_cast<size_t>(m->config().n_layer) * m->config().n_expert, 9)));
}

namespace {

// A usage profile in which expert e of every layer has count base + step * e: the reverse of the uniform order.
std::vector<uint64_t> rising_profile(const ModelConfig& c, uint64_t base, uint64_t step) {
  std::vector<uint64_t> profile(static_cast<size_t>(c.n_layer) * c.n_expert);
  for (int32_t l = 0; l < c.n_layer; ++l)
    for (int32_t e = 0; e < c.n_expert; ++e) profile[static_cast<size_t>(l) * c.n_expert + e] = base + step * e;
  return profile;
}

}  // namespace

TEST_CASE("adaptive residency starts from the profile's counts: a few requests do not undo a long history") {
  const Budgets b = budgets();
  // A long history: every expert routed millions of times, expert e of each layer (e + 1) million.
  const std::vector<uint64_t> profile = rising_profile(load(0)->config(), 1000000, 1000000);
  ModelOptions o;
  o.devices = "cpu";
  o.vram_budget = b.half_resident;
  o.adapt_swaps = 4;
  o.expert_profile = profile;
  o.n_threads = 2;
  const Sequence with = run_sequence(Model::load(model_path(), o));
  const Sequence without = run_sequence(load_adaptive(b.half_resident, 4));
  // Four requests of 25 tokens route far fewer rows than a million separate any two experts: no swap.
  CHECK(with.generation == 0);
  CHECK(without.generation > 0);
  CHECK(same_bits(with.logits, without.logits));
}

TEST_CASE("an expert profile puts the most-used experts in VRAM first, and changes no result") {
  const Budgets b = budgets();
  const auto m = load(0);
  const ModelConfig& c = m->config();
  // Expert n_expert - 1 of every layer is the busiest, then n_expert - 2: the reverse of the uniform order.
  const std::vector<uint64_t> profile = rising_profile(c, 10, 1);
  StageMemory mem{.dense_f16 = false};  // as the CPU backend places
  mem.budget = b.half_resident;
  mem.profile = profile;
  const PlacementPlan p = place_stage_experts(*m, m->stages()[0].plan, mem).plan;
  REQUIRE(p.n_resident() > 0);
  REQUIRE(p.n_resident() < static_cast<int32_t>(p.resident.size()));
  // Every resident expert is used at least as much as every streamed one of its layer.
  for (int32_t l = 0; l < c.n_layer; ++l)
    for (int32_t r = 0; r < c.n_expert; ++r)
      for (int32_t s = 0; s < c.n_expert; ++s)
        if (p.is_resident(l, r) && !p.is_resident(l, s)) CHECK(r > s);
  CHECK(p.is_resident(0, c.n_expert - 1));
  CHECK_FALSE(p.is_resident(0, 0));

  ModelOptions o;
  o.devices = "cpu";
  o.vram_budget = b.half_resident;
  o.expert_profile = profile;
  o.n_threads = 2;
  const Run with = run(Model::load(model_path(), o), 20, 5);
  const Run without = run(load(b.half_resident), 20, 5);
  CHECK(same_bits(with.logits, without.logits));
  o.expert_profile = o.expert_profile.first(o.expert_profile.size() - 1);
  CHECK(status_of([&] { Model::load(model_path(), o); }) == STRATA_ERR_INVALID_ARGUMENT);
}

TEST_CASE("placement: the GPU's F16 copy of the largest dense matrix counts only where the stage has one") {
  const auto m = load(0);
  const StagePlan& stage = m->stages()[0].plan;
  int64_t largest = 0;
  for (const LayerWeights& l : m->weights().layers)
    for (TensorRole r : {TensorRole::AttnQ, TensorRole::AttnK, TensorRole::AttnV, TensorRole::AttnOut})
      if (const TensorRef* t = &l[r]; activation_kind(t->type) == ActivationKind::Q8A)
        largest = std::max(largest, t->ne[0] * t->ne[1]);
  REQUIRE(largest > 0);  // this model's attention matrices are quantized
  StageMemory gpu, cpu{.dense_f16 = false};
  gpu.budget = cpu.budget = uint64_t(1) << 40;
  const uint64_t with = place_stage_experts(*m, stage, gpu).plan.prompt_bytes;
  const uint64_t without = place_stage_experts(*m, stage, cpu).plan.prompt_bytes;
  CHECK(with - without == dense_f16_bytes(gpu.chunk, largest));
}
