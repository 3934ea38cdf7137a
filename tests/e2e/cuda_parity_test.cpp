// CUDA vs the CPU oracle on whole synthetic models: teacher-forced logits at every position, determinism.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "catch.hpp"
#include "core/error.h"
#include "core/model.h"
#include "core/session.h"
#include "core/synth.h"

using namespace strata::core;

namespace {

struct Case {
  const char* shape;
  int layers;
  const char* vocab;
};

std::string model_path(const Case& c) {
  const auto p = std::filesystem::temp_directory_path() /
                 (std::string("strata-e2e-") + c.shape + "-" + std::to_string(c.layers) + "-" + c.vocab + ".gguf");
  if (!std::filesystem::exists(p)) {
    SynthParams sp;
    sp.shape = c.shape;
    sp.n_layer = c.layers;
    sp.vocab = c.vocab;
    sp.router_skew = 0.0f;  // every expert busy: the GEMM tiles see every group size
    sp.seed = 2026;
    write_synthetic_model(sp, p.string());
  }
  return p.string();
}

std::vector<int32_t> tokens(int n, int32_t n_vocab) {
  std::vector<int32_t> t;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.push_back(static_cast<int32_t>(x % static_cast<uint64_t>(n_vocab)));
  }
  return t;
}

struct Run {
  std::vector<float> logits;
  std::vector<uint64_t> counts;  // routed (layer, expert) counts
};

Run run_counts(const std::string& path, const char* devices, const std::vector<int32_t>& toks, int chunk,
               KvType kv = KvType::F16) {
  ModelOptions mo;
  mo.devices = devices;
  const auto model = Model::load(path, mo);
  SessionOptions so;
  so.n_ctx = static_cast<int32_t>(toks.size()) + 8;
  so.chunk_size = chunk;
  so.kv_type = kv;
  Session s(model, so);
  Run r;
  s.prompt(toks, [&](int32_t, std::span<const float> l) {
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    return true;
  });
  r.counts = s.expert_counts();
  return r;
}

std::vector<float> run(const std::string& path, const char* devices, const std::vector<int32_t>& toks, int chunk,
                       KvType kv = KvType::F16) {
  return run_counts(path, devices, toks, chunk, kv).logits;
}

// Routed (token, layer) choices that differ between two runs.
uint64_t routing_flips(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  uint64_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
  return d / 2;
}

// Top-1 agreement at every position and the largest logit difference relative to the largest logit.
void compare(const std::vector<float>& gpu, const std::vector<float>& cpu, size_t n_vocab, double bound,
             double min_agree = 0.95) {
  REQUIRE(gpu.size() == cpu.size());
  const size_t n_pos = cpu.size() / n_vocab;
  size_t agree = 0, first_bad = n_pos, not_near_tie = 0;
  double max_err = 0, max_ref = 0;
  std::string per_block;
  double block_err = 0;
  for (size_t p = 0; p < n_pos; ++p) {
    const float* g = &gpu[p * n_vocab];
    const float* c = &cpu[p * n_vocab];
    double pos_err = 0;
    for (size_t i = 0; i < n_vocab; ++i) {
      REQUIRE(std::isfinite(g[i]));
      const double e = std::abs(static_cast<double>(g[i]) - c[i]);
      pos_err = std::max(pos_err, e);
      max_ref = std::max(max_ref, std::abs(static_cast<double>(c[i])));
    }
    max_err = std::max(max_err, pos_err);
    block_err = std::max(block_err, pos_err);
    const size_t gt = std::max_element(g, g + n_vocab) - g, ct = std::max_element(c, c + n_vocab) - c;
    agree += gt == ct;
    if (gt != ct && first_bad == n_pos) first_bad = p;
    // A disagreement must be a near-tie: the GPU's choice is within this
    // position's logit error of the CPU's best.
    if (gt != ct && c[gt] < c[ct] - 2 * pos_err) ++not_near_tie;
    if ((p + 1) % 32 == 0 || p + 1 == n_pos) {
      per_block += " " + std::to_string(block_err).substr(0, 6);
      block_err = 0;
    }
  }
  CHECK(not_near_tie == 0);
  std::printf("  first top-1 mismatch at %zu; max |dlogit| per 32 positions:%s\n", first_bad, per_block.c_str());
  const double rel = max_err / max_ref;
  INFO("positions " << n_pos << ", top-1 agreement " << agree << ", max |dlogit| / max |logit| = " << rel);
  CHECK(agree >= min_agree * n_pos);
  CHECK(rel < bound);
  std::printf("  top-1 agree %zu/%zu, max relative logit error %.3g (bound %.0e)\n", agree, n_pos, rel, bound);
}

// Quantized dots are exact integer sums on both sides (the prompt GEMMs even
// equal the CPU's vec_dot bit for bit); what remains is F32 summation order
// (norms, attention's online softmax, the decode matvecs) and expf ulps, about
// 1e-6 relative per op. Prompt attention runs on the tensor cores with Q and
// P split into F16 hi + lo pairs to stay in that class: with them rounded to
// F16 (attention_prompt_f16, ~1e-3), a CPU emulation flipped one route of
// tiny and moved its logits by 6.5%, past the bound below. The router turns such a difference into a different
// expert where two experts' probabilities nearly tie, and one changed expert
// moves that token's logits by up to a few percent (tiny routes top-2 of 8,
// so each expert carries half of the MoE output). Hence the stated bounds:
// routing flips are counted and must stay rare (<= 0.5% of routed choices),
// every top-1 disagreement must be a near-tie (the GPU's token within that
// position's logit error of the CPU's best), top-1 agrees at >= 95%, and the largest logit difference stays
// under 5% of the largest logit; measured on the H200 (2026-11-29): 1 flip in
// 4,096 choices and 255/256 top-1 on 2 layers of qwen3-30b-a3b, 0.7% logit
// error; 17 flips in 16,384 and 250/256 on 8 layers with the 151,669-token
// vocabulary, where random logits leave many near-ties.
constexpr double kBound = 5e-2;
constexpr double kMaxFlipShare = 0.005;

}  // namespace

TEST_CASE("tiny: CUDA prompt logits equal the CPU oracle's at every position") {
  const Case c{"tiny", 4, "small"};
  const std::string path = model_path(c);
  const auto toks = tokens(256, 509);
  for (int chunk : {256, 64, 1}) {
    INFO("chunk " << chunk);
    std::printf("tiny, chunk %d:\n", chunk);
    compare(run(path, "0", toks, chunk), run(path, "cpu", toks, chunk), 512, kBound);
  }
  std::printf("tiny, INT8 KV:\n");
  compare(run(path, "0", toks, 128, KvType::Int8), run(path, "cpu", toks, 128, KvType::Int8), 512, kBound);
}

TEST_CASE("qwen3-30b-a3b, 8 layers: CUDA logits match the CPU oracle's at every position") {
  const Case c{"qwen3-30b-a3b", 8, "qwen3"};
  const std::string path = model_path(c);
  const auto toks = tokens(256, 151643);
  const Run cpu = run_counts(path, "cpu", toks, 256);
  const Run gpu = run_counts(path, "0", toks, 256);
  const uint64_t flips = routing_flips(gpu.counts, cpu.counts);
  std::printf("qwen3-30b-a3b x8, chunk 256: routing flips %llu of %d\n", static_cast<unsigned long long>(flips),
              256 * 8 * 8);
  CHECK(flips <= kMaxFlipShare * 256 * 8 * 8);
  compare(gpu.logits, cpu.logits, 151669, kBound);
  // Decode path (one token at a time) against the same CPU logits.
  std::printf("qwen3-30b-a3b x8, chunk 1 (decode kernels):\n");
  compare(run(path, "0", std::vector<int32_t>(toks.begin(), toks.begin() + 32), 1),
          std::vector<float>(cpu.logits.begin(), cpu.logits.begin() + 32 * 151669), 151669, kBound);
}

// Localizes a disagreement: the GPU's prompt path at several chunk sizes (the
// vector kernels up to 8 rows, the GEMMs above) against one CPU run.
TEST_CASE("qwen3-30b-a3b, 2 layers: GPU chunk sizes against the CPU oracle") {
  const std::string path = model_path({"qwen3-30b-a3b", 2, "small"});
  const auto toks = tokens(256, 509);
  const Run cpu = run_counts(path, "cpu", toks, 256);
  for (int chunk : {256, 128, 64, 16, 9, 8, 1}) {
    const Run gpu = run_counts(path, "0", toks, chunk);
    const uint64_t flips = routing_flips(gpu.counts, cpu.counts);
    std::printf("30b x2 small vocab, GPU chunk %d: routing flips %llu\n", chunk, static_cast<unsigned long long>(flips));
    CHECK(flips <= kMaxFlipShare * 256 * 2 * 8);
    compare(gpu.logits, cpu.logits, 512, kBound);
  }
}

TEST_CASE("the same prompt twice gives bit-identical CUDA logits") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  const auto toks = tokens(200, 151643);
  const auto a = run(path, "0", toks, 128);
  const auto b = run(path, "0", toks, 128);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
