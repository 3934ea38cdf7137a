// Single-token steps replayed as CUDA graphs against the same steps launched one by one (STRATA_CUDA_GRAPH=0): bit for bit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/model/model.h"
#include "core/runtime/session.h"
#include "e2e/parity.h"

using namespace strata::core;
using namespace strata::e2e;

namespace {

// What a conversation gives: the logits it was asked for, and the routed counts.
struct Trace {
  std::vector<float> logits;
  std::vector<uint64_t> counts;
  double decode_ms = 0;  // the decode steps' wall time (printed, not checked)
  int decode_steps = 0;
};

// One turn: a prompt (its last logits only, or every row's), then decode steps.
struct Turn {
  int prompt = 0;
  bool every_row = false;
  int decode = 0;
};

struct Setup {
  Placement where;
  int32_t n_ctx = 0;
  int32_t chunk = 64;  // prompt chunks of one token run as single-token steps too
  KvType kv = KvType::F16;
};

// The turns on one session made with STRATA_CUDA_GRAPH set as asked (the
// executors read it when the session is created).
Trace converse(const std::string& path, const Setup& setup, const std::vector<Turn>& turns, bool graphs) {
  ModelOptions mo;
  mo.devices = setup.where.devices;
  mo.layer_split = setup.where.layer_split;
  const auto model = Model::load(path, mo);
  SessionOptions so;
  so.n_ctx = setup.n_ctx;
  so.kv_type = setup.kv;
  so.pipeline = setup.where.pipeline;
  so.chunk_size = setup.chunk;
  setenv("STRATA_CUDA_GRAPH", graphs ? "1" : "0", 1);
  std::unique_ptr<Session> s;
  try {
    s = std::make_unique<Session>(model, so);
  } catch (...) {
    unsetenv("STRATA_CUDA_GRAPH");
    throw;
  }
  unsetenv("STRATA_CUDA_GRAPH");
  const int32_t n_vocab = model->config().n_vocab;
  Trace r;
  int total = 0;
  int32_t next = 7;
  for (const Turn& t : turns) {
    const std::vector<int32_t> all = tokens(total + t.prompt, n_vocab);
    const std::vector<int32_t> toks(all.begin() + total, all.end());  // each turn its own tokens
    total += t.prompt;
    if (t.every_row) {
      s->prompt(toks, [&](int32_t, std::span<const float> l) {
        r.logits.insert(r.logits.end(), l.begin(), l.end());
        return true;
      });
    } else {
      s->prompt(toks);
      const std::span<const float> last = s->logits();
      r.logits.insert(r.logits.end(), last.begin(), last.end());
    }
    for (int i = 0; i < t.decode; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::span<const float> l = s->decode(next);
      r.decode_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      r.decode_steps += 1;
      r.logits.insert(r.logits.end(), l.begin(), l.end());
      next = (next * 131 + 17) % n_vocab;
    }
  }
  r.counts = s->expert_counts();
  return r;
}

void check_same(const std::string& path, const Setup& setup, const std::vector<Turn>& turns) {
  const Trace on = converse(path, setup, turns, true);
  const Trace off = converse(path, setup, turns, false);
  REQUIRE(on.logits.size() == off.logits.size());
  size_t first = on.logits.size();
  for (size_t i = 0; i < on.logits.size() && first == on.logits.size(); ++i)
    if (std::memcmp(&on.logits[i], &off.logits[i], sizeof(float)) != 0) first = i;
  INFO("first differing logit at " << first << " of " << on.logits.size());
  CHECK(first == on.logits.size());
  CHECK(on.counts == off.counts);
  // The graph's first step includes its capture.
  std::printf("  %zu logits, graph and launch by launch %s; decode %.3f ms/step with graphs, %.3f without\n",
              on.logits.size(), first == on.logits.size() ? "bit-identical" : "DIFFER",
              on.decode_ms / std::max(1, on.decode_steps), off.decode_ms / std::max(1, off.decode_steps));
}

}  // namespace

// 40 steps from position 232: decode attention goes from one key range to
// two at n_kv 257, inside one graph captured with max_kv = n_ctx.
TEST_CASE("qwen3-30b-a3b, 8 layers: decode steps as a graph equal the launches bit for bit", "[graph]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  for (const int32_t n_ctx : {280, 4096}) {
    std::printf("qwen3-30b-a3b x8, n_ctx %d:\n", n_ctx);
    check_same(path, Setup{Placement{"0"}, n_ctx}, {Turn{232, false, 40}});
  }
}

// Decode crosses n_kv 256 in the second turn.
TEST_CASE("tiny: decode steps as a graph equal the launches bit for bit, F16 and INT8 KV", "[graph]") {
  const std::string path = model_path({"tiny", 4, "small"});
  for (const KvType kv : {KvType::F16, KvType::Int8}) {
    std::printf("tiny, %s KV:\n", kv == KvType::F16 ? "F16" : "INT8");
    check_same(path, Setup{Placement{"0"}, 512, 64, kv}, {Turn{16, false, 40}, Turn{180, false, 40}});
  }
}

// Later turns: a prompt whose every row's logits are wanted grows the logits
// buffer (the graph captured before must not be replayed with the old one);
// with chunks of one token, prompts run through the graphs too, with logits
// (the last row, or every row) and without.
TEST_CASE("qwen3-30b-a3b, 8 layers: graphs across turns, one-token prompt chunks", "[graph]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  std::printf("qwen3-30b-a3b x8, turns:\n");
  check_same(path, Setup{Placement{"0"}, 1024}, {Turn{40, false, 10}, Turn{100, true, 10}, Turn{30, false, 10}});
  std::printf("qwen3-30b-a3b x8, chunks of one token:\n");
  check_same(path, Setup{Placement{"0"}, 1024, 1}, {Turn{12, false, 5}, Turn{6, true, 5}});
}

// Logical devices on one GPU: later stages read the route in, earlier ones
// write it out; pipelined one-token chunks alternate between the two route
// slots, so a stage replays one graph per slot.
TEST_CASE("qwen3-30b-a3b, 8 layers: graphs on split stages, pipelined one-token chunks", "[graph]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  for (const Placement& p : {Placement{"0,0", "auto", true}, Placement{"0,0,0", "3,3,2", true},
                             Placement{"0,0,0", "3,3,2", false}}) {
    std::printf("devices %s, split %s, pipeline %d, chunks of 64:\n", p.devices, p.layer_split, p.pipeline);
    check_same(path, Setup{p, 512}, {Turn{64, false, 20}});
    std::printf("devices %s, split %s, pipeline %d, chunks of one token:\n", p.devices, p.layer_split, p.pipeline);
    check_same(path, Setup{p, 512, 1}, {Turn{24, false, 10}, Turn{8, true, 10}});
  }
}
