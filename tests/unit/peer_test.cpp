// The peer share on the CPU backend: a peer_device (seed 004's host route and pieces) and the stream-only stage
// helper (seed 000) take part of a chunk's streamed experts; results against the unshared run.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/model/model.h"
#include "core/plan/expert_store.h"
#include "core/runtime/session.h"
#include "engine_fixtures.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

const std::string& model_path() {
  static const strata::test::TempModel model("peer", 6, 77);
  return model.path;
}

std::shared_ptr<const Model> load(uint64_t budget, const std::string& devices, const std::string& split = "",
                                  int32_t peer = -1) {
  ModelOptions o;
  o.devices = devices;
  o.layer_split = split;
  o.vram_budget = budget;
  o.peer_device = peer;
  o.n_threads = 2;
  return Model::load(model_path(), o);
}

// The budget at which every stage of a model streams every expert through 3 slots.
uint64_t all_streamed(const std::string& devices, const std::string& split) {
  const auto m = load(0, devices, split);
  uint64_t budget = 0;
  for (const Stage& s : m->stages())
    budget = std::max(budget, all_streamed_budget(*m, s.plan, 3, StageMemory{.dense_f16 = false}));
  return budget;
}

struct Run {
  std::vector<float> logits;  // every prompt position's, then three decode steps'
  SessionStats stats;         // of the prompt
};

Run run(std::shared_ptr<const Model> m, const SessionOptions& base, int n_tokens, int chunk) {
  SessionOptions o = base;
  o.n_ctx = 4096;
  o.chunk_size = chunk;
  Session s(m, o);
  Run r;
  s.prompt(strata::test::lcg_tokens(m->config().n_vocab, n_tokens, 5), [&](int32_t, std::span<const float> l) {
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    return true;
  });
  r.stats = s.stats();
  for (int32_t t : {3, 8, 1}) {
    const auto l = s.decode(t);
    r.logits.insert(r.logits.end(), l.begin(), l.end());
  }
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Largest |a - b| over the largest |b|: the bound the shared runs are held to.
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

// FP16 transfers round what the peer reads and returns (~1e-3 relative);
// the next layers' routers turn a few such differences into another expert
// where two nearly tie, and tiny routes 2 of 8, so one changed expert moves
// a token's logits by a few percent (the CUDA parity tests' reasoning,
// tests/e2e/parity.h). The bound: top-1 agrees at >= 95% of the positions
// and the largest logit difference stays under 10% of the largest logit.
void close_enough(const std::vector<float>& got, const std::vector<float>& ref, size_t n_vocab) {
  REQUIRE(got.size() == ref.size());
  const size_t n = ref.size() / n_vocab;
  size_t agree = 0;
  for (size_t p = 0; p < n; ++p) {
    auto top = [&](const std::vector<float>& v) {
      return std::max_element(v.begin() + p * n_vocab, v.begin() + (p + 1) * n_vocab) - v.begin();
    };
    agree += top(got) == top(ref);
  }
  CHECK(agree >= n * 95 / 100);
  CHECK(rel_error(got, ref) < 0.1);
}

}  // namespace

// FP16 transfers are held to close_enough; F32 ones change only the order of
// the additions, and with tiny's two experts a token not even that.
TEST_CASE("peer_device on the CPU: shared chunks against the card alone, pieces change no bit") {
  const uint64_t budget = all_streamed("cpu", "");
  const auto alone = load(budget, "cpu,cpu");
  const auto paired = load(budget, "cpu,cpu", "", 1);
  REQUIRE(alone->residency().resident == 0);
  SessionOptions o;
  const Run ref = run(alone, o, 60, 30);  // two stream-all chunks, then decode (routed: not shared)

  o.peer_share = 0.5;
  o.peer_f32 = true;
  const Run f32 = run(paired, o, 60, 30);
  // Tiny routes k = 2 experts a token: the combine adds two products, and
  // a + b == b + a in floating point, so F32 sharing is even bit-exact here.
  CHECK(same_bits(f32.logits, ref.logits));
  // Each chunk moves every streamed blob once, over the two rings together.
  CHECK(f32.stats.phases.bytes_streamed == ref.stats.phases.bytes_streamed);
  CHECK(same_bits(run(paired, o, 60, 30).logits, f32.logits));  // repeatable

  o.peer_f32 = false;
  const Run f16 = run(paired, o, 60, 30);
  close_enough(f16.logits, ref.logits, alone->config().n_vocab);
  CHECK_FALSE(same_bits(f16.logits, ref.logits));  // the peer's rows did cross as FP16
  for (int32_t pieces : {1, 3, 64}) {
    INFO("pieces " << pieces);
    o.peer_pieces = pieces;
    CHECK(same_bits(run(paired, o, 60, 30).logits, f16.logits));
  }

  // Share 0 is the card alone; the cost model's share gives a valid run.
  o.peer_share = 0;
  CHECK(same_bits(run(paired, o, 60, 30).logits, ref.logits));
  o.peer_share = -1;
  close_enough(run(paired, o, 60, 30).logits, ref.logits, alone->config().n_vocab);
}

TEST_CASE("peer_device and peer options refuse what cannot work, with clear errors") {
  const uint64_t budget = all_streamed("cpu", "");
  CHECK(status_of([&] { load(budget, "cpu,cpu", "", 2); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { load(budget, "cpu,cpu", "", 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { load(budget, "cpu,cpu", "auto", 1); }) == STRATA_ERR_UNSUPPORTED);
  const auto paired = load(budget, "cpu,cpu", "", 1);
  SessionOptions o;
  o.peer_share = 1.5;
  CHECK(status_of([&] { Session s(paired, o); }) == STRATA_ERR_INVALID_ARGUMENT);
  o.peer_share = -1;
  o.peer_pieces = -2;
  CHECK(status_of([&] { Session s(paired, o); }) == STRATA_ERR_INVALID_ARGUMENT);
}

// Seed 000 on CPU stages of 3 + 3 and 2 + 2 + 2 layers, every expert
// streamed. The rule's shares at the seed's prompt lengths are cost_test's;
// the GPU tests run those lengths (tests/e2e/peer_cuda_test.cpp). Here
// prompts of a few hundred tokens keep CI fast: 300 tokens take the rule's
// 0.45, the others fixed shares.
TEST_CASE("stage helper: helped == unhelped within the bound, bit for bit when exact, 2 and 3 stages") {
  for (const std::string devices : {"cpu,cpu", "cpu,cpu,cpu"}) {
    const auto m = load(all_streamed(devices, "auto"), devices, "auto");
    REQUIRE(m->stages().size() == (devices == "cpu,cpu" ? 2u : 3u));
    for (const Stage& s : m->stages()) REQUIRE(s.backend->residency().resident == 0);
    SessionOptions off;
    off.helper = false;
    for (double share : {-1.0, 0.2, 0.6, 1.0}) {
      const int T = share < 0 ? 300 : 150;
      INFO(devices << ", " << T << " tokens, share " << share);
      SessionOptions on, exact;
      on.helper_share = exact.helper_share = share;
      exact.helper_exact = true;
      const Run ref = run(m, off, T, T);
      const Run helped = run(m, on, T, T);
      close_enough(helped.logits, ref.logits, m->config().n_vocab);
      CHECK_FALSE(same_bits(helped.logits, ref.logits));  // the helper did take rows (as FP16)
      CHECK(helped.stats.phases.bytes_streamed == ref.stats.phases.bytes_streamed);
      CHECK(same_bits(run(m, on, T, T).logits, helped.logits));  // repeatable
      CHECK(same_bits(run(m, exact, T, T).logits, ref.logits));
    }
    // Two chunks: the stages pipeline, nobody is idle, nothing is shared.
    CHECK(same_bits(run(m, SessionOptions{}, 300, 150).logits, run(m, off, 300, 150).logits));
    // The environment overrides the options (seed 000's variables).
    setenv("STRATA_PREFILL_HELP", "0", 1);
    const Run env_off = run(m, SessionOptions{}, 300, 300);
    unsetenv("STRATA_PREFILL_HELP");
    CHECK(same_bits(env_off.logits, run(m, off, 300, 300).logits));
  }
}

// The rule's shares at two of the seed's prompt lengths (0.433 at 1,100
// tokens, 0.375 at 2,048) on the CPU, as the GPU test runs them; 3,000 and
// 4,000 tokens (off by the rule) run on the GPU only (tens of seconds each here).
TEST_CASE("stage helper at the seed's prompt lengths on two CPU stages") {
  const auto m = load(all_streamed("cpu,cpu", "auto"), "cpu,cpu", "auto");
  SessionOptions off, exact;
  off.helper = false;
  exact.helper_exact = true;
  for (int T : {1100, 2048}) {
    INFO(T << " tokens");
    const Run ref = run(m, off, T, T);
    const Run helped = run(m, SessionOptions{}, T, T);
    close_enough(helped.logits, ref.logits, m->config().n_vocab);
    CHECK_FALSE(same_bits(helped.logits, ref.logits));
    CHECK(helped.stats.phases.peer_share > 0.3);
    CHECK(helped.stats.phases.peer_predicted_ms > 0);
    if (T == 1100) CHECK(same_bits(run(m, exact, T, T).logits, ref.logits));
  }
}
