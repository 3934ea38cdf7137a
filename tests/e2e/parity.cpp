// Shared by the GPU end-to-end tests: synthetic models, runs through the public engine, comparison with the CPU oracle.
#include "e2e/parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "catch.hpp"
#include "core/model/model.h"
#include "core/model/synth.h"
#include "core/runtime/session.h"

namespace strata::e2e {

using namespace core;


std::string model_path(const Case& c) {
  const auto p = std::filesystem::temp_directory_path() /
                 (std::string("strata-e2e-") + c.shape + "-" + std::to_string(c.layers) + "-" + c.vocab + "-" +
                  c.quant + ".gguf");
  if (!std::filesystem::exists(p)) {
    SynthParams sp;
    sp.shape = c.shape;
    sp.n_layer = c.layers;
    sp.vocab = c.vocab;
    sp.quant = c.quant;
    sp.router_skew = 0.0f;  // every expert busy: the GEMM tiles see every group size
    sp.seed = 2026;
    // Written under a name of this process, then renamed: test processes run
    // at once (ctest -j) never map a file another one is still writing.
    const std::filesystem::path tmp = p.string() + "." + std::to_string(getpid()) + ".tmp";
    write_synthetic_model(sp, tmp.string());
    std::filesystem::rename(tmp, p);
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

Run run_counts(const std::string& path, const Placement& where, const std::vector<int32_t>& toks, int chunk,
               KvType kv, int decode) {
  ModelOptions mo;
  mo.devices = where.devices;
  mo.layer_split = where.layer_split;
  mo.vram_budget = where.vram_budget;
  mo.peer_device = where.peer_device;
  const auto model = Model::load(path, mo);
  SessionOptions so;
  so.n_ctx = static_cast<int32_t>(toks.size()) + 8 + decode;
  so.chunk_size = chunk;
  so.kv_type = kv;
  so.pipeline = where.pipeline;
  so.decode_cpu_share = where.decode_cpu_share;
  so.peer_share = where.peer_share;
  so.peer_f32 = where.peer_f32;
  so.peer_pieces = where.peer_pieces;
  so.helper = where.helper;
  so.helper_share = where.helper_share;
  so.helper_exact = where.helper_exact;
  Session s(model, so);
  Run r;
  s.prompt(toks, [&](int32_t, std::span<const float> l) {
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    return true;
  });
  r.bytes_streamed = s.stats().phases.bytes_streamed;
  r.combine_ms = s.stats().phases.combine_ms;
  for (int i = 0; i < decode; ++i) {
    const auto l = s.decode(1 + i);
    r.logits.insert(r.logits.end(), l.begin(), l.end());
  }
  r.counts = s.expert_counts();
  return r;
}

std::vector<float> run(const std::string& path, const char* devices, const std::vector<int32_t>& toks, int chunk,
                       KvType kv) {
  return run_counts(path, Placement{devices}, toks, chunk, kv).logits;
}

uint64_t routing_flips(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  uint64_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
  return d / 2;
}

void compare(const std::vector<float>& gpu, const std::vector<float>& cpu, size_t n_vocab, double bound,
             double min_agree) {
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

}  // namespace strata::e2e
