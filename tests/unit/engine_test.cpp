// The CPU engine end to end on a tiny synthetic model: chunking, KV types, threads, context limits.
#include <cmath>
#include <cstring>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/model/model.h"
#include "core/runtime/session.h"
#include "engine_fixtures.h"

using namespace strata::core;

namespace {

const std::string& tiny_model_path() {
  static const strata::test::TempModel model("engine-tiny", 3, 42);
  return model.path;
}

std::shared_ptr<const Model> load(int n_threads = 2) {
  ModelOptions o;
  o.devices = "cpu";
  o.n_threads = n_threads;
  return Model::load(tiny_model_path(), o);
}

std::vector<int32_t> prompt_tokens(const Model& m, int n) { return strata::test::lcg_tokens(m.config().n_vocab, n, 12345); }

// Logits of every position of a prompt, run in chunks of chunk_size.
std::vector<float> prompt_logits(std::shared_ptr<const Model> m, const std::vector<int32_t>& tokens, int chunk,
                                 KvType kv = KvType::F16) {
  SessionOptions o;
  o.n_ctx = 256;
  o.chunk_size = chunk;
  o.kv_type = kv;
  Session s(m, o);
  std::vector<float> all;
  s.prompt(tokens, [&](int32_t pos, std::span<const float> l) {
    CHECK(static_cast<size_t>(pos) * l.size() == all.size());
    all.insert(all.end(), l.begin(), l.end());
    return true;
  });
  return all;
}

// The same positions, one decode call per token.
std::vector<float> decode_logits(std::shared_ptr<const Model> m, const std::vector<int32_t>& tokens) {
  SessionOptions o;
  o.n_ctx = 256;
  Session s(m, o);
  std::vector<float> all;
  for (int32_t t : tokens) {
    const auto l = s.decode(t);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

double max_rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  REQUIRE(a.size() == ref.size());
  double scale = 0, err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(ref[i])));
    err = std::max(err, std::abs(static_cast<double>(a[i]) - ref[i]));
  }
  return err / scale;
}

}  // namespace

TEST_CASE("chunked prompt equals token-by-token decode for every chunk size") {
  const auto m = load();
  const auto tokens = prompt_tokens(*m, 37);
  const std::vector<float> ref = decode_logits(m, tokens);
  for (int chunk : {1, 2, 5, 8, 16, 36, 37, 64}) {
    INFO("chunk " << chunk);
    const std::vector<float> got = prompt_logits(m, tokens, chunk);
    CHECK(max_rel_err(got, ref) <= 1e-5);
    // Stronger than the bound: every op computes a row the same way whatever the chunk.
    CHECK(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a session's chunk defaults to the model's, and never exceeds the context") {
  const auto m = load();
  SessionOptions o;
  o.n_ctx = 4096;
  CHECK(Session(m, o).options().chunk_size == m->residency().chunk);
  o.n_ctx = 128;  // below the model's chunk: a longer one would never fill
  REQUIRE(m->residency().chunk > 128);
  CHECK(Session(m, o).options().chunk_size == 128);
  o.chunk_size = 5;
  CHECK(Session(m, o).options().chunk_size == 5);
  o.chunk_size = 1000;
  CHECK(Session(m, o).options().chunk_size == 128);
}

TEST_CASE("results do not depend on the thread count") {
  const auto tokens = prompt_tokens(*load(1), 24);
  const auto a = prompt_logits(load(1), tokens, 8);
  const auto b = prompt_logits(load(2), tokens, 8);
  const auto c = prompt_logits(load(3), tokens, 8);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("INT8 KV cache stays within its bound of the F16 cache") {
  const auto m = load();
  const auto tokens = prompt_tokens(*m, 64);
  const auto f16 = prompt_logits(m, tokens, 16, KvType::F16);
  const auto i8 = prompt_logits(m, tokens, 16, KvType::Int8);
  const double err = max_rel_err(i8, f16);
  INFO("max relative logit error INT8 vs F16: " << err);
  CHECK(err < 2e-2);  // per-row int8 (amax/127) on K and V; the measured value is printed on failure
  CHECK(err > 0.0);   // the INT8 path really ran
  // Top-1 agrees at (nearly) every position.
  const int32_t V = m->config().n_vocab;
  int agree = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    auto arg = [&](const std::vector<float>& l) {
      return std::max_element(l.begin() + p * V, l.begin() + (p + 1) * V) - (l.begin() + p * V);
    };
    agree += arg(f16) == arg(i8);
  }
  CHECK(agree >= static_cast<int>(tokens.size()) - 2);
}

TEST_CASE("a prompt longer than the context is refused and nothing is appended") {
  const auto m = load();
  SessionOptions o;
  o.n_ctx = 16;
  Session s(m, o);
  s.prompt(prompt_tokens(*m, 10));
  try {
    s.prompt(prompt_tokens(*m, 7));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_CONTEXT_FULL);
  }
  CHECK(s.n_past() == 10);
  s.prompt(prompt_tokens(*m, 6));
  CHECK(s.n_past() == 16);
}

TEST_CASE("expert counts add up to tokens times k per layer") {
  const auto m = load();
  SessionOptions o;
  o.n_ctx = 64;
  Session s(m, o);
  s.prompt(prompt_tokens(*m, 50));
  const auto& c = m->config();
  for (int l = 0; l < c.n_layer; ++l) {
    uint64_t sum = 0;
    for (int e = 0; e < c.n_expert; ++e) sum += s.expert_counts()[l * c.n_expert + e];
    CHECK(sum == 50u * c.n_expert_used);
  }
}
