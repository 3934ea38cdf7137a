// Synthetic qwen3moe models: shapes, weight scales, router skew, and the parallel writer.
//
// Weight scales, and why (E = embedding RMS, n = n_embd, L = n_layer):
//
//   Every sublayer input goes through an RMS norm, so only the *ratio* of
//   the per-layer updates to the embedding matters. With plain random
//   weights the updates are as large as the embedding and the hidden states
//   of different tokens converge through the layers (attention adds the same
//   context average to every token); every router then sends almost every
//   token to the same 20-30 experts and every benchmark measures the wrong
//   thing. So each token's residual stream stays dominated by its own
//   embedding: E = 1 and the layers together add a drift of RMS about
//   D = 0.5 (independent updates add in quadrature: each of the 2L
//   sublayers adds D / sqrt(2L)).
//
//   token_embd     E * (c * mu + sqrt(1 - c^2) * g_t), RMS E = 1. mu is one
//                  shared direction (element RMS 1), g_t the token's own
//                  noise; c = 0.3 (9% of the energy is shared) is what the
//                  router skew below keys on.
//   attn_q, attn_k std 1/sqrt(n): q, k of RMS ~1 (q/k norms rescale anyway),
//                  scores of std ~1, so attention is neither flat nor one-hot.
//   attn_v         std 1/sqrt(n): v of RMS ~1.
//   attn_output    std (D / sqrt(2L)) / sqrt(n_head * head_dim): the
//                  attention update has RMS <= D / sqrt(2L) (0.18 for tiny,
//                  0.05 for 48 layers).
//   ffn_gate/up    std 1/sqrt(n): pre-activations of RMS 1; silu(g) * u then
//                  has RMS 0.596.
//   ffn_down       std (D / sqrt(2L)) / (0.596 * sqrt(n_ff_exp)): one expert's
//                  output has RMS D / sqrt(2L); the top-k mix (weights sum to
//                  1) is no larger.
//   router         logit_e = tau * xi_e(t) + beta_e with tau = 2 and xi
//                  independent per (token, expert): row e is random noise
//                  orthogonal to mu plus beta_e / (c sqrt(n)) times the unit
//                  vector along mu (the normed hidden state's projection on
//                  mu is ~c sqrt(n) for every token).
//   output         std 2/sqrt(n): logits of std ~2.
//   norm weights   1 + 0.02 * noise (attn, ffn, output, q and k norms).
//
// Router skew Z: expert e of layer l has a popularity rank (a per-layer
// random permutation) and beta_e = beta[rank]. The betas are calibrated by a
// deterministic Monte Carlo of the logit model above (top-k of tau * xi +
// beta with the mu projection's token noise) so that the expected share of
// all assignments going to rank k is proportional to (k + 1)^-Z, capped so
// that no expert is picked by more than half of the tokens (exact Zipf
// would otherwise ask for more than every token for the hottest expert).
// Z = 0 gives beta = 0: uniform routing.
//
// Measured (tests/unit/synth_test.cpp, and by hand on 30B shapes): with a
// CPU forward of random tokens every layer's expert shares stay near these
// targets, through 24 layers of tiny and 48 of qwen3-30b-a3b.
//
// Values come from a counter-based generator keyed by (seed, tensor index,
// row): five Gaussian values per 64-bit hash, looked up in a 4096-level
// quantile table, so the bytes never depend on thread count or order. Rows
// are generated and quantized straight into the mapped output file, never as
// a whole float tensor. Rows that are not whole blocks of the asked type
// (tiny's 128-wide expert down rows) take a 32-block type (fit_type).
#include "core/model/synth.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <regex>
#include <span>
#include <thread>

#include "core/base/env.h"
#include "core/base/error.h"
#include "core/base/fields.h"
#include "core/gguf/gguf_writer.h"
#include "core/quant/quant.h"
#include "core/runtime/thread_pool.h"
#include "core/text/small_vocab.h"
#include "core/text/tokenizer.h"
#include "core/text/vocab_gguf.h"

namespace strata::core {

namespace {

constexpr float kEmbdRms = 1.0f;
constexpr float kEmbdShared = 0.3f;
constexpr float kDrift = 0.5f;
constexpr float kSiluGluRms = 0.596f;  // RMS of silu(g) * u for g, u ~ N(0, 1)
constexpr float kRouterNoise = 2.0f;
constexpr float kOutputScale = 2.0f;
constexpr float kNormJitter = 0.02f;
constexpr double kMaxTokenFraction = 0.5;  // hottest expert: at most half of the tokens

// ---- counter-based random numbers ----------------------------------------

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

inline uint64_t mix64(uint64_t x) {  // the splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

inline uint64_t stream_key(uint64_t seed, uint64_t a, uint64_t b) {
  return mix64(mix64(mix64(seed ^ 0x5354524154415359ull) + a * kGolden) + b);
}

// Standard normal quantiles at the centres of 4096 equal-probability bins,
// scaled to variance exactly 1: a Gaussian of 4096 levels, bounded at +-3.7.
// (Found by bisection on erfc, once per process.)
const float* normal_table() {
  static const std::array<float, 4096> table = [] {
    std::array<double, 4096> q{};
    double ss = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      const double p = (double(i) + 0.5) / double(q.size());
      double lo = -10, hi = 10;
      for (int it = 0; it < 64; ++it) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
      }
      q[i] = 0.5 * (lo + hi);
      ss += q[i] * q[i];
    }
    const double scale = 1.0 / std::sqrt(ss / double(q.size()));
    std::array<float, 4096> t{};
    for (size_t i = 0; i < q.size(); ++i) t[i] = float(q[i] * scale);
    return t;
  }();
  return table.data();
}

// out[i] = scale * N(0,1)-distributed values of the stream `key`: five
// values per 64-bit hash (12 bits each, looked up in normal_table()).
inline void normal_fill(uint64_t key, float scale, float* out, int64_t n) {
  const float* table = normal_table();
  uint64_t counter = key;
  int64_t i = 0;
  for (; i + 5 <= n; i += 5) {
    const uint64_t u = mix64(counter += kGolden);
    out[i] = scale * table[u & 4095];
    out[i + 1] = scale * table[(u >> 12) & 4095];
    out[i + 2] = scale * table[(u >> 24) & 4095];
    out[i + 3] = scale * table[(u >> 36) & 4095];
    out[i + 4] = scale * table[(u >> 48) & 4095];
  }
  for (uint64_t u = mix64(counter += kGolden); i < n; ++i, u >>= 12) out[i] = scale * table[u & 4095];
}

inline double unit_uniform(uint64_t key, uint64_t i) {  // [0, 1)
  return double(mix64(key + (i + 1) * kGolden) >> 11) * (1.0 / 9007199254740992.0);
}

// Stream ids for values that are not rows of a tensor.
enum : uint64_t { kStreamMu = ~0ull, kStreamPerm = ~0ull - 1, kStreamCalib = ~0ull - 2 };

// ---- the tensor plan ------------------------------------------------------

enum class Fill { Embedding, Norm, Matrix, Router };

struct TensorPlan {
  std::string name;
  std::vector<int64_t> dims;  // ne0 first
  GgmlType type;
  Fill fill;
  float std = 0;   // Matrix: element std
  int layer = -1;  // Router: which layer
  int64_t row_len = 0, n_rows = 0;
  size_t row_bytes = 0;
};

// The output matrix's type: Q6_K under the legacy 4- and 5-bit types, Q1_0,
// Q2_0, the K-quants, the IQ and the FP4 types (as llama.cpp's mixes keep it), the wanted type otherwise.
GgmlType output_type(GgmlType quant) {
  switch (quant) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q1_0:
    case GgmlType::Q2_0:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ1_S:
    case GgmlType::IQ1_M:
    case GgmlType::MXFP4:
    case GgmlType::NVFP4: return GgmlType::Q6_K;
    default: return quant;
  }
}

// The type for a matrix whose rows have `row_len` elements: `want`, or a
// 32-block type where the row is not a whole number of `want` blocks (tiny's
// 128-wide expert down rows under a K-quant), as llama.cpp's quantizer also
// falls back (Q5_0, IQ4_NL or Q8_0 by the wanted type): IQ4_NL for the IQ
// types, Q8_0 for the others.
GgmlType fit_type(GgmlType want, int64_t row_len) {
  if (row_len % type_traits(want).block_size == 0) return want;
  const bool iq = want == GgmlType::IQ4_XS || want == GgmlType::IQ3_XXS || want == GgmlType::IQ3_S ||
                  want == GgmlType::IQ2_XXS || want == GgmlType::IQ2_XS || want == GgmlType::IQ2_S ||
                  want == GgmlType::IQ1_S || want == GgmlType::IQ1_M;
  if (row_len % 32 == 0) return iq ? GgmlType::IQ4_NL : GgmlType::Q8_0;
  return GgmlType::F16;
}

// The weight types this generator writes, each with llama.cpp's
// general.file_type (llama_ftype) for it: Q2_K, the other K-quants as their _M mixes,
// which is what this file's output/embedding choice mirrors, the legacy and IQ types as theirs,
// MXFP4 as MXFP4_MOE (38), NVFP4 as 39, Q1_0 as 40, Q2_0 as 41.
struct SynthQuant {
  GgmlType type;
  uint32_t llama_ftype;
};
constexpr SynthQuant kSynthQuants[] = {
    {GgmlType::Q2_K, 10},   {GgmlType::Q3_K, 12},   {GgmlType::Q4_K, 15},   {GgmlType::Q5_K, 17},
    {GgmlType::Q6_K, 18},   {GgmlType::Q8_0, 7},    {GgmlType::F16, 1},     {GgmlType::BF16, 32},
    {GgmlType::F32, 0},     {GgmlType::Q4_0, 2},    {GgmlType::Q4_1, 3},    {GgmlType::Q5_0, 8},
    {GgmlType::Q5_1, 9},    {GgmlType::IQ4_NL, 25}, {GgmlType::IQ4_XS, 30}, {GgmlType::IQ3_XXS, 23},
    {GgmlType::IQ3_S, 26},  {GgmlType::IQ2_XXS, 19}, {GgmlType::IQ2_XS, 20},  {GgmlType::IQ2_S, 28},
    {GgmlType::IQ1_S, 24},  {GgmlType::IQ1_M, 31},  {GgmlType::MXFP4, 38},  {GgmlType::NVFP4, 39},
    {GgmlType::Q1_0, 40},   {GgmlType::Q2_0, 41},
};

// nullptr for a type this generator does not write.
const SynthQuant* find_synth_quant(GgmlType t) {
  for (const SynthQuant& q : kSynthQuants) {
    if (q.type == t) return &q;
  }
  return nullptr;
}

GgmlType parse_synth_quant(const std::string& name) {
  const auto allowed = [] {
    std::string names;
    for (const SynthQuant& q : kSynthQuants) {
      if (!names.empty()) names += ", ";
      names += type_traits(q.type).name;
    }
    return names;
  };
  GgmlType t{};
  try {
    t = parse_type_name(name);
  } catch (const Error&) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: unknown quant '{}' (use one of {})", name, allowed());
  }
  if (find_synth_quant(t) == nullptr) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: quant '{}' is not supported here (use one of {})", name,
         allowed());
  }
  return t;
}

// One rule of SynthParams::quant_mix.
struct MixRule {
  std::string text;  // "PATTERN=TYPE", for messages
  std::regex pattern;
  GgmlType type;
};

std::vector<MixRule> parse_quant_mix(const std::string& spec) {
  std::vector<MixRule> rules;
  if (spec.empty()) return rules;
  for (const std::string_view field : split_fields(spec)) {
    const std::string text(trim_blanks(field));
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: quant mix rule '{}' is not PATTERN=TYPE", text);
    MixRule r{text, {}, {}};
    try {
      r.pattern = std::regex(text.substr(0, eq), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: quant mix rule '{}': bad pattern ({})", text, e.what());
    }
    try {
      r.type = parse_synth_quant(text.substr(eq + 1));
    } catch (const Error& e) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "quant mix rule '{}': {}", text, e.what());
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

// `quant` for every weight matrix but the output (output_type(quant)), unless a rule of `mix` matches its name;
// each rule must match at least one.
std::vector<TensorPlan> make_plan(const SynthShape& s, GgmlType quant, const std::vector<MixRule>& mix,
                                  int64_t n_vocab) {
  const SynthScales sc = synth_scales(s);
  std::vector<TensorPlan> plan;
  std::vector<bool> used(mix.size(), false);
  auto add = [&](std::string name, std::vector<int64_t> dims, GgmlType type, Fill fill, float std = 0,
                 int layer = -1) {
    TensorPlan t{std::move(name), std::move(dims), type, fill, std, layer};
    t.row_len = t.dims[0];
    t.n_rows = 1;
    for (size_t i = 1; i < t.dims.size(); ++i) t.n_rows *= t.dims[i];
    if (fill == Fill::Matrix || fill == Fill::Embedding) {
      for (size_t i = 0; i < mix.size(); ++i) {
        if (std::regex_search(t.name, mix[i].pattern)) {
          t.type = mix[i].type;
          used[i] = true;
          break;
        }
      }
      t.type = fit_type(t.type, t.row_len);
    }
    t.row_bytes = row_size(t.type, t.row_len);
    plan.push_back(std::move(t));
  };
  const int64_t n = s.n_embd, q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  const int64_t ne = s.n_expert, ff = s.n_ff_exp;
  add("token_embd.weight", {n, n_vocab}, quant, Fill::Embedding);
  for (int l = 0; l < s.n_layer; ++l) {
    auto b = [l](const char* what) { return "blk." + std::to_string(l) + "." + what + ".weight"; };
    add(b("attn_norm"), {n}, GgmlType::F32, Fill::Norm);
    add(b("attn_q"), {n, q_dim}, quant, Fill::Matrix, sc.q_std);
    add(b("attn_k"), {n, kv_dim}, quant, Fill::Matrix, sc.k_std);
    add(b("attn_v"), {n, kv_dim}, quant, Fill::Matrix, sc.v_std);
    add(b("attn_output"), {q_dim, n}, quant, Fill::Matrix, sc.o_std);
    add(b("attn_q_norm"), {s.head_dim}, GgmlType::F32, Fill::Norm);
    add(b("attn_k_norm"), {s.head_dim}, GgmlType::F32, Fill::Norm);
    add(b("ffn_norm"), {n}, GgmlType::F32, Fill::Norm);
    add(b("ffn_gate_inp"), {n, ne}, GgmlType::F32, Fill::Router, 0, l);
    add(b("ffn_gate_exps"), {n, ff, ne}, quant, Fill::Matrix, sc.gate_std);
    add(b("ffn_up_exps"), {n, ff, ne}, quant, Fill::Matrix, sc.up_std);
    add(b("ffn_down_exps"), {ff, n, ne}, quant, Fill::Matrix, sc.down_std);
  }
  add("output_norm.weight", {n}, GgmlType::F32, Fill::Norm);
  add("output.weight", {n, n_vocab}, output_type(quant), Fill::Matrix, sc.output_std);
  for (size_t i = 0; i < mix.size(); ++i) {
    if (!used[i])
      fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: quant mix rule '{}' matches no weight matrix{}", mix[i].text,
           i > 0 ? " (or only ones an earlier rule took)" : "");
  }
  return plan;
}

// ---- router skew ------------------------------------------------------------

// beta[rank] such that top-k of (tau * xi_e + beta_e * (1 + zeta * r)) gives
// the target shares, where zeta ~ N(0,1) per token is the noise of the hidden
// state's projection on mu relative to its mean (r = sqrt(1-c^2) / (c sqrt(n))).
std::vector<double> calibrate_router_bias(const SynthShape& s, float skew, uint64_t seed) {
  const int64_t ne = s.n_expert, k = s.n_expert_used;
  std::vector<double> beta(size_t(ne), 0.0);
  if (skew == 0.0f) return beta;
  const std::vector<double> target = synth_target_shares(ne, k, skew);
  const double r = std::sqrt(1.0 - double(kEmbdShared) * kEmbdShared) / (kEmbdShared * std::sqrt(double(s.n_embd)));
  const double tau = kRouterNoise;
  // Common random numbers for every iteration, so the fit is smooth and exact to repeat.
  const int64_t n_tok = std::max<int64_t>(2048, 48 * ne);
  std::vector<float> xi(static_cast<size_t>(n_tok * ne)), zeta(static_cast<size_t>(n_tok));
  const uint64_t key = stream_key(seed, kStreamCalib, 0);
  normal_fill(key, 1.0f, xi.data(), n_tok * ne);
  normal_fill(key + 1, 1.0f, zeta.data(), n_tok);
  // Start from the Gumbel-max approximation (Gaussian noise ~ Gumbel of scale 0.78 tau).
  for (int64_t e = 0; e < ne; ++e) beta[size_t(e)] = 0.78 * tau * std::log(target[size_t(e)] / target[0]);
  std::vector<double> count(static_cast<size_t>(ne));
  std::vector<std::pair<double, int>> logits(static_cast<size_t>(ne));
  for (int iter = 0; iter < 60; ++iter) {
    std::fill(count.begin(), count.end(), 0.0);
    for (int64_t t = 0; t < n_tok; ++t) {
      const double scale = 1.0 + zeta[size_t(t)] * r;
      for (int64_t e = 0; e < ne; ++e)
        logits[size_t(e)] = {tau * xi[size_t(t * ne + e)] + beta[size_t(e)] * scale, int(e)};
      std::nth_element(logits.begin(), logits.begin() + (k - 1), logits.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (int64_t j = 0; j < k; ++j) count[size_t(logits[size_t(j)].second)] += 1.0;
    }
    const double total = double(n_tok * k);
    for (int64_t e = 0; e < ne; ++e) {
      const double seen = std::max(count[size_t(e)], 0.5) / total;
      beta[size_t(e)] += 0.7 * tau * (std::log(target[size_t(e)]) - std::log(seen));
    }
    const double b0 = beta[0];
    for (double& b : beta) b -= b0;
  }
  return beta;
}

// ---- row generation ---------------------------------------------------------

struct Generator {
  SynthShape shape;
  uint64_t seed = 1;
  std::vector<float> mu;                 // shared direction, element RMS 1
  std::vector<std::vector<float>> bias;  // per layer, per expert: router offset along mu

  Generator(const SynthShape& s, uint64_t seed_, float skew) : shape(s), seed(seed_) {
    const int64_t n = s.n_embd;
    mu.resize(size_t(n));
    const uint64_t key = stream_key(seed, kStreamMu, 0);
    normal_fill(key, 1.0f, mu.data(), n);
    double ss = 0;
    for (float v : mu) ss += double(v) * v;
    const float norm = float(std::sqrt(double(n) / ss));
    for (float& v : mu) v *= norm;
    const std::vector<double> beta = calibrate_router_bias(s, skew, seed);
    bias.resize(size_t(s.n_layer));
    for (int64_t l = 0; l < s.n_layer; ++l) {
      // Popularity rank of each expert: a per-layer random permutation (Fisher-Yates).
      std::vector<int> expert_of_rank(size_t(s.n_expert));
      std::iota(expert_of_rank.begin(), expert_of_rank.end(), 0);
      const uint64_t pk = stream_key(seed, kStreamPerm, uint64_t(l));
      for (int64_t i = s.n_expert - 1; i > 0; --i) {
        const auto j = int64_t(unit_uniform(pk, uint64_t(i)) * double(i + 1));
        std::swap(expert_of_rank[size_t(i)], expert_of_rank[size_t(j)]);
      }
      auto& b = bias[size_t(l)];
      b.resize(size_t(s.n_expert));
      for (int64_t rank = 0; rank < s.n_expert; ++rank) b[size_t(expert_of_rank[size_t(rank)])] = float(beta[size_t(rank)]);
    }
  }

  // Writes the float values of row `row` of tensor `index`.
  void row(const TensorPlan& t, size_t index, int64_t row_i, float* out) const {
    const uint64_t key = stream_key(seed, index, uint64_t(row_i));
    const int64_t n = t.row_len;
    switch (t.fill) {
      case Fill::Norm:
        normal_fill(key, kNormJitter, out, n);
        for (int64_t i = 0; i < n; ++i) out[i] += 1.0f;
        break;
      case Fill::Matrix:
        normal_fill(key, t.std, out, n);
        break;
      case Fill::Embedding: {
        const float own = kEmbdRms * std::sqrt(1.0f - kEmbdShared * kEmbdShared), shared = kEmbdRms * kEmbdShared;
        normal_fill(key, own, out, n);
        for (int64_t i = 0; i < n; ++i) out[i] += shared * mu[size_t(i)];
        break;
      }
      case Fill::Router: {
        // Noise orthogonal to mu, scaled so the token-dependent logit part has
        // std tau, plus the popularity offset along mu.
        normal_fill(key, 1.0f, out, n);
        double dot = 0;
        for (int64_t i = 0; i < n; ++i) dot += double(out[i]) * mu[size_t(i)];
        const float proj = float(dot / double(n));
        const float inv_sqrt_n = 1.0f / std::sqrt(float(n));
        const float noise = kRouterNoise / std::sqrt(1.0f - kEmbdShared * kEmbdShared) * inv_sqrt_n;
        const float along = bias[size_t(t.layer)][size_t(row_i)] / (kEmbdShared * float(n));
        for (int64_t i = 0; i < n; ++i) out[i] = noise * (out[i] - proj * mu[size_t(i)]) + along * mu[size_t(i)];
        break;
      }
    }
  }
};

// ---- vocabulary ----------------------------------------------------------

Vocab synth_vocab(const std::string& which) {
  if (which == "small") return small_vocab();
  if (which == "qwen3") {
    Vocab v = load_hf_tokenizer(find_data_file("qwen3-tokenizer/tokenizer.json.gz"));
    // The special ids of Qwen's own Qwen3 GGUF files, whatever the
    // tokenizer_config.json next to the data says (or if it is absent).
    auto id_of = [&](std::string_view text) {
      const auto it = std::find(v.tokens.begin(), v.tokens.end(), text);
      if (it == v.tokens.end()) fail(STRATA_ERR_FORMAT, "qwen3 vocabulary: no token {}", text);
      return int32_t(it - v.tokens.begin());
    };
    v.bos_id = v.pad_id = id_of("<|endoftext|>");
    v.eos_id = id_of("<|im_end|>");
    v.add_bos = false;
    return v;
  }
  if (which.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: empty vocab (use small, qwen3 or a path)");
  return load_hf_tokenizer(which);
}

int resolve_threads(int n) {
  if (n < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: n_threads {} is negative", n);
  if (n == 0) n = int(std::max(1u, std::thread::hardware_concurrency()));
  return n;
}

}  // namespace

SynthShape synth_shape(std::string_view name) {
  if (name == "tiny") return {"tiny", 256, 4, 2, 64, 8, 2, 128, 512, 4, 4096, 1e6f, 1e-6f};
  if (name == "qwen3-30b-a3b") return {"qwen3-30b-a3b", 2048, 32, 4, 128, 128, 8, 768, 6144, 48, 40960, 1e6f, 1e-6f};
  if (name == "qwen3-235b-a22b")
    return {"qwen3-235b-a22b", 4096, 64, 4, 128, 128, 8, 1536, 12288, 94, 40960, 1e6f, 1e-6f};
  fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: unknown shape '{}' (use tiny, qwen3-30b-a3b or qwen3-235b-a22b)",
       name);
}

SynthScales synth_scales(const SynthShape& s) {
  const float step = kDrift / std::sqrt(2.0f * float(std::max<int64_t>(1, s.n_layer)));
  const float inv_sqrt_n = 1.0f / std::sqrt(float(s.n_embd));
  SynthScales sc{};
  sc.embd_rms = kEmbdRms;
  sc.embd_shared = kEmbdShared;
  sc.q_std = sc.k_std = sc.v_std = inv_sqrt_n;
  sc.o_std = step / std::sqrt(float(s.n_head * s.head_dim));
  sc.gate_std = sc.up_std = inv_sqrt_n;
  sc.down_std = step / (kSiluGluRms * std::sqrt(float(s.n_ff_exp)));
  sc.router_noise = kRouterNoise;
  sc.output_std = kOutputScale * inv_sqrt_n;
  sc.norm_jitter = kNormJitter;
  return sc;
}

std::vector<double> synth_target_shares(int64_t n_expert, int64_t n_used, float skew) {
  // Water-filling: cap the hottest, spread the rest by (k+1)^-skew.
  const double cap = kMaxTokenFraction / double(n_used);
  std::vector<double> w(static_cast<size_t>(n_expert)), share(static_cast<size_t>(n_expert), 0.0);
  for (int64_t k = 0; k < n_expert; ++k) w[size_t(k)] = std::pow(double(k + 1), -double(skew));
  int64_t n_capped = 0;
  for (;;) {
    double free_mass = 1.0 - double(n_capped) * cap, wsum = 0;
    for (int64_t k = n_capped; k < n_expert; ++k) wsum += w[size_t(k)];
    const double lambda = free_mass / wsum;
    if (n_capped < n_expert && lambda * w[size_t(n_capped)] > cap) {
      ++n_capped;  // weights fall with k, so the capped set is a prefix
      continue;
    }
    for (int64_t k = 0; k < n_expert; ++k) share[size_t(k)] = k < n_capped ? cap : lambda * w[size_t(k)];
    return share;
  }
}

std::string find_data_file(const std::string& rel) {
  std::vector<std::string> tried;
  auto probe = [&](const char* dir) -> bool {
    if (!dir || !*dir) return false;
    const std::string p = (std::filesystem::path(dir) / rel).string();
    tried.push_back(p);
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec);
  };
  if (probe(env_value(EnvVar::DataDir))) return tried.back();
#ifdef STRATA_BUILD_DATA_DIR
  if (probe(STRATA_BUILD_DATA_DIR)) return tried.back();
#endif
#ifdef STRATA_INSTALL_DATA_DIR
  if (probe(STRATA_INSTALL_DATA_DIR)) return tried.back();
#endif
  std::string list;
  for (const auto& p : tried) list += (list.empty() ? "" : ", ") + p;
  fail(STRATA_ERR_IO, "data file {} not found (set STRATA_DATA_DIR; tried: {})", rel, list.empty() ? "nothing" : list);
}

struct SynthModel::Impl {
  SynthParams params;
  SynthShape shape;
  GgmlType quant{};
  int n_threads = 1;
  Vocab vocab;
  std::vector<TensorPlan> plan;
  std::vector<Tensor> tensors;
  std::unique_ptr<Generator> gen;
};

SynthModel::SynthModel(const SynthParams& p) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.params = p;
  m.shape = synth_shape(p.shape);
  if (p.n_layer < 0 || p.n_layer > 4096)
    fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: n_layer {} outside [0, 4096]", p.n_layer);
  if (p.n_layer > 0) m.shape.n_layer = p.n_layer;
  if (!std::isfinite(p.router_skew) || p.router_skew < 0 || p.router_skew > 8)
    fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: router_skew {} outside [0, 8]", p.router_skew);
  m.quant = parse_synth_quant(p.quant);
  m.n_threads = resolve_threads(p.n_threads);
  m.vocab = synth_vocab(p.vocab);
  m.plan = make_plan(m.shape, m.quant, parse_quant_mix(p.quant_mix), int64_t(m.vocab.tokens.size()));
  for (const TensorPlan& t : m.plan) m.tensors.push_back({t.name, t.dims, uint32_t(t.type), t.n_rows});
  m.gen = std::make_unique<Generator>(m.shape, p.seed, p.router_skew);
}

SynthModel::~SynthModel() = default;
SynthModel::SynthModel(SynthModel&&) noexcept = default;
SynthModel& SynthModel::operator=(SynthModel&&) noexcept = default;

const SynthShape& SynthModel::shape() const { return impl_->shape; }
const Vocab& SynthModel::vocab() const { return impl_->vocab; }
const std::vector<SynthModel::Tensor>& SynthModel::tensors() const { return impl_->tensors; }

size_t SynthModel::tensor_index(std::string_view name) const {
  for (size_t i = 0; i < impl_->plan.size(); ++i)
    if (impl_->plan[i].name == name) return i;
  fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: no tensor '{}'", name);
}

void SynthModel::row(size_t tensor, int64_t row, float* out) const {
  if (tensor >= impl_->plan.size() || row < 0 || row >= impl_->plan[tensor].n_rows)
    fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: no row {} of tensor {}", row, tensor);
  impl_->gen->row(impl_->plan[tensor], tensor, row, out);
}

uint64_t SynthModel::data_bytes() const {
  uint64_t total = 0;
  for (const TensorPlan& t : impl_->plan) total += uint64_t(t.row_bytes) * uint64_t(t.n_rows);
  return total;
}

void SynthModel::write(const std::string& path) const {
  const Impl& m = *impl_;
  const SynthShape& shape = m.shape;
  if (path.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "synthetic model: empty output path");

  GgufWriter w;
  auto u32 = [&](const std::string& key, int64_t v) { w.set(key, GgufValue::u32(uint32_t(v))); };
  auto f32 = [&](const std::string& key, float v) { w.set(key, GgufValue::f32(v)); };
  const std::string a = "qwen3moe.";
  w.set("general.architecture", GgufValue::string("qwen3moe"));
  w.set("general.type", GgufValue::string("model"));
  w.set("general.name", GgufValue::string("strata synthetic " + shape.name));
  u32("general.alignment", 32);
  u32(a + "block_count", shape.n_layer);
  u32(a + "context_length", shape.n_ctx);
  u32(a + "embedding_length", shape.n_embd);
  u32(a + "feed_forward_length", shape.n_ff);
  u32(a + "expert_feed_forward_length", shape.n_ff_exp);
  u32(a + "expert_count", shape.n_expert);
  u32(a + "expert_used_count", shape.n_expert_used);
  u32(a + "attention.head_count", shape.n_head);
  u32(a + "attention.head_count_kv", shape.n_head_kv);
  u32(a + "attention.key_length", shape.head_dim);
  u32(a + "attention.value_length", shape.head_dim);
  f32(a + "attention.layer_norm_rms_epsilon", shape.rms_eps);
  f32(a + "rope.freq_base", shape.rope_base);
  u32("general.file_type", find_synth_quant(m.quant)->llama_ftype);  // set by parse_synth_quant: in the table
  u32("general.quantization_version", 2);
  vocab_to_gguf(m.vocab, w);
  for (const TensorPlan& t : m.plan) w.add_tensor(t.name, t.dims, uint32_t(t.type));

  const uint64_t total = data_bytes();
  const auto& progress = m.params.progress;
  auto report = [&](uint64_t done) {
    if (progress && !progress(done, total)) fail(STRATA_ABORTED, "synthetic model: stopped by the progress callback");
  };
  report(0);
  ThreadPool pool(m.n_threads);
  uint64_t done = 0;
  // The writer calls fill once per tensor on this thread (threads = 1); the
  // rows of each tensor are spread over the pool in batches of about 32 MiB,
  // with a progress report (always from this thread) after each batch.
  auto fill = [&](size_t index, std::span<uint8_t> dst) {
    const TensorPlan& t = m.plan[index];
    const int64_t batch = std::max<int64_t>(1, int64_t((size_t(32) << 20) / t.row_bytes));
    for (int64_t r0 = 0; r0 < t.n_rows; r0 += batch) {
      const int64_t r1 = std::min(t.n_rows, r0 + batch);
      pool.parallel_for(r1 - r0, [&](int64_t b, int64_t e) {
        std::vector<float> buf(size_t(t.row_len));
        for (int64_t r = r0 + b; r < r0 + e; ++r) {
          m.gen->row(t, index, r, buf.data());
          quantize_row(t.type, buf.data(), dst.data() + size_t(r) * t.row_bytes, t.row_len);
        }
      });
      done += uint64_t(r1 - r0) * t.row_bytes;
      report(done);
    }
  };
  w.write(path, fill, 1);  // on failure the writer removes its partial file
}

void write_synthetic_model(const SynthParams& params, const std::string& path) { SynthModel(params).write(path); }

}  // namespace strata::core
