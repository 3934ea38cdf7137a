// Shared by the GPU end-to-end tests: synthetic models, runs through the public engine, comparison with the CPU oracle.
#include "e2e/parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include <unistd.h>

#include "catch.hpp"
#include "core/model/dequantize_file.h"
#include "core/model/model.h"
#include "core/model/synth.h"
#include "core/runtime/session.h"

namespace strata::e2e {

using namespace core;


namespace {

// Path p, written by write(tmp) unless it exists: under a name of this
// process, then renamed, so test processes run at once (ctest -j) never map a
// file another one is still writing.
template <class Write>
std::string made_once(const std::filesystem::path& p, Write write) {
  if (!std::filesystem::exists(p)) {
    const std::filesystem::path tmp = p.string() + "." + std::to_string(getpid()) + ".tmp";
    write(tmp.string());
    std::filesystem::rename(tmp, p);
  }
  return p.string();
}

}  // namespace

std::string model_path(const Case& c) {
  const auto p = std::filesystem::temp_directory_path() /
                 (std::string("strata-e2e-") + c.shape + "-" + std::to_string(c.layers) + "-" + c.vocab + "-" +
                  c.quant + (*c.quant_mix ? "-mix" + std::to_string(std::hash<std::string>{}(c.quant_mix)) : "") +
                  ".gguf");
  return made_once(p, [&](const std::string& tmp) {
    SynthParams sp;
    sp.shape = c.shape;
    sp.n_layer = c.layers;
    sp.vocab = c.vocab;
    sp.quant = c.quant;
    sp.quant_mix = c.quant_mix;
    sp.router_skew = 0.0f;  // every expert busy: the GEMM tiles see every group size
    sp.seed = 2026;
    write_synthetic_model(sp, tmp);
  });
}

std::string exact_path(const std::string& path) {
  const std::filesystem::path p = path.substr(0, path.size() - 5) + "-exact.gguf";
  return made_once(p, [&](const std::string& tmp) { write_dequantized(path, tmp, 0); });
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

namespace {

// compare()'s checks but the bound; returns the largest |dlogit| relative to the largest logit.
double compare_top1(const std::vector<float>& gpu, const std::vector<float>& cpu, size_t n_vocab, double min_agree) {
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
  std::printf("  top-1 agree %zu/%zu, max relative logit error %.3g\n", agree, n_pos, rel);
  return rel;
}

// The mean over positions of each position's largest |a - b|.
double mean_max_diff(const std::vector<float>& a, const std::vector<float>& b, size_t n_vocab) {
  const size_t n_pos = b.size() / n_vocab;
  double sum = 0;
  for (size_t p = 0; p < n_pos; ++p) {
    double m = 0;
    for (size_t i = p * n_vocab; i < (p + 1) * n_vocab; ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
    sum += m;
  }
  return sum / n_pos;
}

}  // namespace

void compare(const std::vector<float>& gpu, const std::vector<float>& cpu, size_t n_vocab, double bound,
             double min_agree) {
  const double rel = compare_top1(gpu, cpu, n_vocab, min_agree);
  INFO("max |dlogit| / max |logit| " << rel << ", bound " << bound);
  CHECK(rel < bound);
}

void compare_judged(const Run& gpu, const Run& cpu, const Run& exact, size_t n_vocab) {
  compare_top1(gpu.logits, cpu.logits, n_vocab, 0.95);
  REQUIRE(gpu.logits.size() == exact.logits.size());
  REQUIRE(cpu.logits.size() == exact.logits.size());
  const double g = mean_max_diff(gpu.logits, exact.logits, n_vocab);
  const double c = mean_max_diff(cpu.logits, exact.logits, n_vocab);
  const uint64_t gf = routing_flips(gpu.counts, exact.counts), cf = routing_flips(cpu.counts, exact.counts);
  std::printf("  against exact math: mean max |dlogit| GPU %.4f, CPU oracle %.4f; routing flips GPU %llu, CPU %llu\n",
              g, c, static_cast<unsigned long long>(gf), static_cast<unsigned long long>(cf));
  CHECK(g <= c);
}

}  // namespace strata::e2e
