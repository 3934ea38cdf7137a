// Sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seed determinism, argument checks.
#include <cmath>
#include <map>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/runtime/sampler.h"

using namespace strata::core;

namespace {

std::vector<float> logits_of(std::initializer_list<float> l) { return std::vector<float>(l); }

// Frequencies of each token over n draws (history off so draws are independent).
std::map<int32_t, int> histogram(SamplerParams p, const std::vector<float>& logits, int n) {
  p.repeat_last_n = 0;
  Sampler s(p);
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) h[s.sample(logits)] += 1;
  return h;
}

}  // namespace

TEST_CASE("greedy takes the first maximum") {
  Sampler s(SamplerParams{});
  CHECK(s.sample(logits_of({0.1f, 2.0f, -1.0f, 2.0f})) == 1);
  CHECK(s.sample(logits_of({-3.0f, -2.0f, -5.0f})) == 1);
}

TEST_CASE("temperature sampling follows the softmax distribution") {
  const auto logits = logits_of({0.0f, std::log(2.0f), std::log(5.0f)});  // p = 1/8, 2/8, 5/8
  SamplerParams p;
  p.temperature = 1.0f;
  p.seed = 99;
  const int n = 40000;
  const auto h = histogram(p, logits, n);
  CHECK(std::abs(h.at(0) / double(n) - 0.125) < 0.01);
  CHECK(std::abs(h.at(1) / double(n) - 0.25) < 0.01);
  CHECK(std::abs(h.at(2) / double(n) - 0.625) < 0.01);
  // A low temperature sharpens towards the maximum.
  p.temperature = 0.1f;
  const auto sharp = histogram(p, logits, 2000);
  CHECK(sharp.at(2) > 1990);
}

TEST_CASE("top-k, top-p and min-p cut the candidate set") {
  const auto logits = logits_of({4.0f, 3.0f, 2.0f, 1.0f, 0.0f});
  SamplerParams p;
  p.temperature = 1.0f;
  p.seed = 7;
  p.top_k = 2;
  for (const auto& [tok, count] : histogram(p, logits, 3000)) CHECK(tok <= 1);
  p.top_k = 0;
  p.top_p = 0.5f;  // p(0) = 0.64 alone reaches 0.5
  CHECK(histogram(p, logits, 500).size() == 1);
  p.top_p = 0.9f;  // 0.64 + 0.24 = 0.88 < 0.9, so three tokens
  const auto h = histogram(p, logits, 5000);
  CHECK(h.size() == 3);
  CHECK(h.count(3) == 0);
  p.top_p = 1.0f;
  p.min_p = 0.3f;  // keeps tokens with p >= 0.3 * 0.64: tokens 0 and 1 (0.235)
  const auto m = histogram(p, logits, 5000);
  CHECK(m.size() == 2);
}

TEST_CASE("the same seed gives the same tokens, and another seed differs") {
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  auto draw = [&](uint64_t seed) {
    SamplerParams p;
    p.temperature = 1.5f;
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits));
    return out;
  };
  CHECK(draw(5) == draw(5));
  CHECK(draw(5) != draw(6));
}

TEST_CASE("repetition penalty lowers recently seen tokens") {
  SamplerParams p;
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 4;
  Sampler s(p);
  s.accept(0);
  // Token 0 (3.0 -> 1.5) falls below token 1 (2.0).
  CHECK(s.sample(logits_of({3.0f, 2.0f, 0.5f})) == 1);
  // Negative logits are multiplied: token 1 was just sampled, -1 -> -2 falls below token 2 (-1.5).
  CHECK(s.sample(logits_of({-3.0f, -1.0f, -1.5f})) == 2);
  // The history forgets beyond repeat_last_n.
  for (int i = 0; i < 4; ++i) s.accept(2);
  CHECK(s.sample(logits_of({3.0f, 2.0f, 0.5f})) == 0);
}

TEST_CASE("sampler parameters out of range are rejected") {
  auto rejects = [](SamplerParams p) {
    try {
      Sampler s(p);
      return false;
    } catch (const Error& e) {
      return e.status() == STRATA_ERR_INVALID_ARGUMENT;
    }
  };
  SamplerParams p;
  p.top_k = -1;
  CHECK(rejects(p));
  p = {};
  p.top_p = 1.5f;
  CHECK(rejects(p));
  p = {};
  p.min_p = 1.0f;
  CHECK(rejects(p));
  p = {};
  p.repeat_penalty = 0.0f;
  CHECK(rejects(p));
  p = {};
  p.temperature = NAN;
  CHECK(rejects(p));
  CHECK_FALSE(rejects(SamplerParams{}));
}
