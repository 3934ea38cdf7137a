// Synthetic models: layout and metadata, determinism, weight scales, router skew, errors.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/model/model.h"
#include "core/model/synth.h"
#include "core/quant/quant.h"
#include "core/runtime/session.h"
#include "core/text/vocab_gguf.h"

using namespace strata::core;
namespace fs = std::filesystem;

namespace {

// A scratch folder per test process (ctest runs test cases in parallel).
struct ScratchDir {
  fs::path dir;
  explicit ScratchDir(const std::string& tag)
      : dir(fs::temp_directory_path() / ("strata-synth-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SynthParams tiny(int n_layer = 2) {
  SynthParams p;
  p.n_layer = n_layer;
  p.n_threads = 2;
  return p;
}

template <typename F>
void check_error(F&& f, strata_status status, const std::string& part) {
  try {
    f();
    FAIL("no error, expected " << part);
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.status() == status);
    CHECK(std::string(e.what()).find(part) != std::string::npos);
  }
}

// RMS of rows [r0, r1) of a tensor, dequantized from the file.
double file_rms(const GgufFile& f, const std::string& name, int64_t r0, int64_t r1) {
  const GgufTensorInfo& t = f.tensor(name);
  const auto type = GgmlType(t.type);
  const size_t rb = row_size(type, t.ne[0]);
  std::vector<float> row(size_t(t.ne[0]));
  double ss = 0;
  for (int64_t r = r0; r < r1; ++r) {
    dequantize_row(type, t.data + size_t(r) * rb, row.data(), t.ne[0]);
    for (float v : row) ss += double(v) * v;
  }
  return std::sqrt(ss / double((r1 - r0) * t.ne[0]));
}

}  // namespace

TEST_CASE("synth: tiny model carries the qwen3moe metadata and tensor layout") {
  ScratchDir tmp("layout");
  SynthParams p = tiny(4);
  write_synthetic_model(p, tmp.file("tiny.gguf"));
  const GgufFile f = GgufFile::open(tmp.file("tiny.gguf"));
  const SynthShape s = synth_shape("tiny");

  CHECK(f.get_string("general.architecture") == "qwen3moe");
  CHECK(f.get_string("general.name").find("tiny") != std::string::npos);
  CHECK(f.get_u32("general.alignment") == 32);
  CHECK(f.get_u32("general.file_type") == 15);  // MOSTLY_Q4_K_M
  const std::string a = "qwen3moe.";
  CHECK(f.get_u32(a + "block_count") == 4);
  CHECK(f.get_u32(a + "context_length") == 4096);
  CHECK(f.get_u32(a + "embedding_length") == 256);
  CHECK(f.get_u32(a + "feed_forward_length") == 512);
  CHECK(f.get_u32(a + "expert_feed_forward_length") == 128);
  CHECK(f.get_u32(a + "expert_count") == 8);
  CHECK(f.get_u32(a + "expert_used_count") == 2);
  CHECK(f.get_u32(a + "attention.head_count") == 4);
  CHECK(f.get_u32(a + "attention.head_count_kv") == 2);
  CHECK(f.get_u32(a + "attention.key_length") == 64);
  CHECK(f.get_u32(a + "attention.value_length") == 64);
  CHECK(f.get_f32(a + "attention.layer_norm_rms_epsilon") == 1e-6f);
  CHECK(f.get_f32(a + "rope.freq_base") == 1e6f);
  const Vocab v = vocab_from_gguf(f);
  CHECK(v.tokens.size() == 512);
  CHECK(v.eos_id == 511);

  const int64_t n = 256, nv = 512, qd = 4 * 64, kvd = 2 * 64, ff = 128, ne = 8;
  struct Want {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
  };
  std::vector<Want> want = {{"token_embd.weight", {n, nv}, GgmlType::Q4_K}};
  for (int l = 0; l < 4; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    want.push_back({b + "attn_norm.weight", {n}, GgmlType::F32});
    want.push_back({b + "attn_q.weight", {n, qd}, GgmlType::Q4_K});
    want.push_back({b + "attn_k.weight", {n, kvd}, GgmlType::Q4_K});
    want.push_back({b + "attn_v.weight", {n, kvd}, GgmlType::Q4_K});
    want.push_back({b + "attn_output.weight", {qd, n}, GgmlType::Q4_K});
    want.push_back({b + "attn_q_norm.weight", {64}, GgmlType::F32});
    want.push_back({b + "attn_k_norm.weight", {64}, GgmlType::F32});
    want.push_back({b + "ffn_norm.weight", {n}, GgmlType::F32});
    want.push_back({b + "ffn_gate_inp.weight", {n, ne}, GgmlType::F32});
    want.push_back({b + "ffn_gate_exps.weight", {n, ff, ne}, GgmlType::Q4_K});
    want.push_back({b + "ffn_up_exps.weight", {n, ff, ne}, GgmlType::Q4_K});
    // Rows of 128 are not whole Q4_K blocks: Q8_0, as llama.cpp falls back.
    want.push_back({b + "ffn_down_exps.weight", {ff, n, ne}, GgmlType::Q8_0});
  }
  want.push_back({"output_norm.weight", {n}, GgmlType::F32});
  want.push_back({"output.weight", {n, nv}, GgmlType::Q6_K});

  REQUIRE(f.tensors().size() == want.size());
  for (const Want& w : want) {
    INFO(w.name);
    const GgufTensorInfo* t = f.find_tensor(w.name);
    REQUIRE(t != nullptr);
    CHECK(std::vector<int64_t>(t->dims().begin(), t->dims().end()) == w.dims);
    CHECK(GgmlType(t->type) == w.type);
  }
  CHECK(s.n_layer == 4);
}

TEST_CASE("synth: the file holds the model's rows, quantized") {
  ScratchDir tmp("rows");
  const SynthParams p = tiny(2);
  const SynthModel m(p);
  m.write(tmp.file("m.gguf"));
  const GgufFile f = GgufFile::open(tmp.file("m.gguf"));
  REQUIRE(f.tensors().size() == m.tensors().size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < m.tensors().size(); ++i) {
    const SynthModel::Tensor& t = m.tensors()[i];
    const GgufTensorInfo& ft = f.tensor(t.name);
    bytes += ft.n_bytes;
    const auto type = GgmlType(t.type);
    const size_t rb = row_size(type, t.dims[0]);
    std::vector<float> row(size_t(t.dims[0]));
    std::vector<uint8_t> q(rb);
    for (int64_t r : {int64_t(0), t.n_rows / 2, t.n_rows - 1}) {
      m.row(i, r, row.data());
      quantize_row(type, row.data(), q.data(), t.dims[0]);
      INFO(t.name << " row " << r);
      CHECK(std::equal(q.begin(), q.end(), ft.data + size_t(r) * rb));
    }
  }
  CHECK(bytes == m.data_bytes());
}

TEST_CASE("synth: same seed gives the same bytes, and so does another thread count") {
  ScratchDir tmp("determinism");
  SynthParams p = tiny(2);
  p.n_threads = 1;
  write_synthetic_model(p, tmp.file("a.gguf"));
  p.n_threads = 3;
  write_synthetic_model(p, tmp.file("b.gguf"));
  p.seed = 2;
  write_synthetic_model(p, tmp.file("c.gguf"));
  const std::vector<char> a = read_all(tmp.file("a.gguf")), b = read_all(tmp.file("b.gguf")),
                          c = read_all(tmp.file("c.gguf"));
  REQUIRE(a.size() > 100000);
  CHECK(a == b);
  REQUIRE(c.size() == a.size());
  CHECK(a != c);
  // Another seed changes the weights, not the layout: headers agree up to the data.
  const GgufFile fa = GgufFile::open(tmp.file("a.gguf"));
  CHECK(std::equal(a.begin(), a.begin() + std::ptrdiff_t(fa.data_offset()), c.begin()));
  const GgufTensorInfo& ta = fa.tensor("blk.1.ffn_up_exps.weight");
  CHECK_FALSE(std::equal(a.begin() + std::ptrdiff_t(ta.file_offset),
                         a.begin() + std::ptrdiff_t(ta.file_offset + ta.n_bytes),
                         c.begin() + std::ptrdiff_t(ta.file_offset)));
}

TEST_CASE("synth: weight scales are the documented ones") {
  const SynthShape s4 = synth_shape("tiny");
  const SynthScales sc = synth_scales(s4);
  // The documented formulas for tiny (L = 4, D = 0.5: each sublayer adds 0.5 / sqrt(8)).
  const double step = 0.5 / std::sqrt(8.0);
  CHECK(sc.embd_rms == Catch::Approx(1.0));
  CHECK(sc.v_std == Catch::Approx(1.0 / 16));
  CHECK(sc.o_std == Catch::Approx(step / 16));
  CHECK(sc.down_std == Catch::Approx(step / (0.596 * std::sqrt(128.0))).epsilon(1e-3));
  CHECK(sc.output_std == Catch::Approx(2.0 / 16));
  SynthShape deep = s4;
  deep.n_layer = 94;
  CHECK(synth_scales(deep).down_std < sc.down_std / 4);

  ScratchDir tmp("scales");
  SynthParams p = tiny(4);
  write_synthetic_model(p, tmp.file("m.gguf"));
  const GgufFile f = GgufFile::open(tmp.file("m.gguf"));
  // One token embedding row, and a few: RMS 1 (Q4_K adds a little noise).
  CHECK(file_rms(f, "token_embd.weight", 7, 8) == Catch::Approx(1.0).epsilon(0.12));
  CHECK(file_rms(f, "token_embd.weight", 0, 64) == Catch::Approx(1.0).epsilon(0.03));
  // One expert's down rows (Q8_0), one row, attention, router, norms.
  CHECK(file_rms(f, "blk.3.ffn_down_exps.weight", 256 * 5 + 17, 256 * 5 + 18) ==
        Catch::Approx(sc.down_std).epsilon(0.2));
  CHECK(file_rms(f, "blk.3.ffn_down_exps.weight", 256 * 5, 256 * 6) == Catch::Approx(sc.down_std).epsilon(0.03));
  CHECK(file_rms(f, "blk.2.attn_output.weight", 0, 256) == Catch::Approx(sc.o_std).epsilon(0.05));
  CHECK(file_rms(f, "blk.2.attn_v.weight", 0, 128) == Catch::Approx(sc.v_std).epsilon(0.05));
  CHECK(file_rms(f, "blk.0.ffn_gate_exps.weight", 0, 1024) == Catch::Approx(sc.gate_std).epsilon(0.05));
  CHECK(file_rms(f, "output.weight", 0, 512) == Catch::Approx(sc.output_std).epsilon(0.03));
  CHECK(file_rms(f, "blk.1.attn_q_norm.weight", 0, 1) == Catch::Approx(1.0).epsilon(0.01));
  CHECK(file_rms(f, "output_norm.weight", 0, 1) == Catch::Approx(1.0).epsilon(0.01));
  // Norm weights are near 1 everywhere.
  const GgufTensorInfo& norm = f.tensor("blk.2.ffn_norm.weight");
  const auto* w = reinterpret_cast<const float*>(norm.data);
  for (int64_t i = 0; i < norm.ne[0]; ++i) CHECK(std::abs(w[i] - 1.0f) < 0.08f);
}

namespace {

// Shares of expert assignments at a layer's router for every vocabulary
// token, hidden state = the token's embedding (no attention), sorted
// descending; and how many experts got any token.
std::vector<double> layer_shares(const SynthModel& m, int layer, int* n_used) {
  const SynthShape& s = m.shape();
  const int64_t n = s.n_embd, ne = s.n_expert, k = s.n_expert_used;
  const size_t te = m.tensor_index("token_embd.weight");
  const std::string b = "blk." + std::to_string(layer) + ".";
  const size_t tr = m.tensor_index(b + "ffn_gate_inp.weight");
  std::vector<float> norm(static_cast<size_t>(n)), x(static_cast<size_t>(n)), router(static_cast<size_t>(n * ne));
  m.row(m.tensor_index(b + "ffn_norm.weight"), 0, norm.data());
  for (int64_t e = 0; e < ne; ++e) m.row(tr, e, router.data() + e * n);
  const int64_t n_tok = m.tensors()[te].n_rows;
  std::vector<double> count(size_t(ne), 0.0);
  std::vector<std::pair<double, int64_t>> logit(static_cast<size_t>(ne));
  for (int64_t t = 0; t < n_tok; ++t) {
    m.row(te, t, x.data());
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double r = 1.0 / std::sqrt(ss / double(n) + s.rms_eps);
    for (int64_t e = 0; e < ne; ++e) {
      double d = 0;
      for (int64_t i = 0; i < n; ++i) d += double(router[size_t(e * n + i)]) * x[size_t(i)] * r * norm[size_t(i)];
      logit[size_t(e)] = {d, e};
    }
    std::partial_sort(logit.begin(), logit.begin() + k, logit.end(), std::greater<>());
    for (int64_t j = 0; j < k; ++j) count[size_t(logit[size_t(j)].second)] += 1;
  }
  *n_used = int(std::count_if(count.begin(), count.end(), [](double c) { return c > 0; }));
  for (double& c : count) c /= double(n_tok * k);
  std::sort(count.begin(), count.end(), std::greater<>());
  return count;
}

}  // namespace

TEST_CASE("synth: target shares are Zipf, capped, and sum to 1") {
  const std::vector<double> z = synth_target_shares(128, 8, 1.0f);
  double sum = 0;
  for (double v : z) sum += v;
  CHECK(sum == Catch::Approx(1.0));
  CHECK(z[0] == Catch::Approx(0.5 / 8));  // capped: at most half the tokens
  CHECK(z[20] / z[40] == Catch::Approx(41.0 / 21.0));
  const std::vector<double> u = synth_target_shares(8, 2, 0.0f);
  for (double v : u) CHECK(v == Catch::Approx(1.0 / 8));
  const std::vector<double> t = synth_target_shares(8, 2, 1.0f);
  CHECK(t[1] / t[3] == Catch::Approx(2.0));
}

TEST_CASE("synth: router skew gives the target expert shares at a layer's router") {
  int used = 0;
  {
    SynthParams p = tiny(2);
    p.router_skew = 1.0f;
    const SynthModel m(p);
    const std::vector<double> target = synth_target_shares(8, 2, 1.0f);
    for (int layer : {0, 1}) {
      const std::vector<double> got = layer_shares(m, layer, &used);
      CHECK(used == 8);
      for (size_t k = 0; k < 8; ++k) {
        INFO("layer " << layer << " rank " << k);
        CHECK(std::abs(got[k] - target[k]) < 0.03 + 0.15 * target[k]);
      }
    }
  }
  {
    SynthParams p = tiny(1);
    p.router_skew = 0.0f;
    const SynthModel m(p);
    const std::vector<double> got = layer_shares(m, 0, &used);
    CHECK(got.front() < 0.18);  // uniform is 0.125; 1024 assignments
    CHECK(got.back() > 0.08);
  }
  {
    // 128 experts top-8: a few hot experts, a long tail, nearly every expert used.
    SynthParams p;
    p.shape = "qwen3-30b-a3b";
    p.n_layer = 1;
    const SynthModel m(p);
    const std::vector<double> target = synth_target_shares(128, 8, 1.0f);
    const std::vector<double> got = layer_shares(m, 0, &used);
    CHECK(used >= 120);
    double top8 = 0, want_top8 = 0;
    for (size_t k = 0; k < 8; ++k) top8 += got[k], want_top8 += target[k];
    CHECK(top8 == Catch::Approx(want_top8).epsilon(0.2));
    CHECK(got[0] > 4.0 / 128);   // hot: 4x uniform and more
    CHECK(got[0] < 0.5 / 8 * 1.25);
    CHECK(got[63] < 1.0 / 128);  // the median expert is below uniform
  }
}

TEST_CASE("synth: routing stays spread through every layer of a deep model (CPU forward)") {
  // The failure this guards against: hidden states of different tokens
  // converge with depth and every router picks the same experts. The per-layer
  // steps shrink with depth (D / sqrt(2L)), so a deep tiny model is the test.
  ScratchDir tmp("deep");
  for (const float skew : {1.0f, 0.0f}) {
    INFO("skew " << skew);
    SynthParams p = tiny(24);
    p.router_skew = skew;
    p.seed = 7;
    write_synthetic_model(p, tmp.file("deep.gguf"));
    ModelOptions mo;
    mo.devices = "cpu";
    mo.n_threads = 2;
    const auto model = Model::load(tmp.file("deep.gguf"), mo);
    SessionOptions so;
    so.n_ctx = 512;
    Session session(model, so);
    // Distinct random tokens: repeated words of a real text would skew the
    // shares by themselves.
    std::vector<int32_t> tokens;
    uint32_t x = 1;
    for (int i = 0; i < 256; ++i) {
      x = x * 1664525u + 1013904223u;
      tokens.push_back(int32_t((x >> 8) % 509));
    }
    session.prompt(tokens);
    // Sane activations: finite logits of std ~2 (output std 2/sqrt(n) on a unit-RMS state).
    double sum = 0, sq = 0;
    for (float l : session.logits()) {
      REQUIRE(std::isfinite(l));
      sum += l, sq += double(l) * l;
    }
    const double n = double(session.logits().size());
    CHECK(std::sqrt(sq / n - (sum / n) * (sum / n)) == Catch::Approx(2.0).epsilon(0.3));

    const std::vector<double> target = synth_target_shares(8, 2, skew);
    const std::vector<uint64_t>& counts = session.expert_counts();
    REQUIRE(counts.size() == 24 * 8);
    for (int layer = 0; layer < 24; ++layer) {
      INFO("layer " << layer);
      std::vector<double> share(8);
      for (int e = 0; e < 8; ++e) share[size_t(e)] = double(counts[size_t(layer * 8 + e)]) / double(tokens.size() * 2);
      std::sort(share.begin(), share.end(), std::greater<>());
      CHECK(share[0] < target[0] + 0.1);            // no expert takes (nearly) every token
      CHECK(share[0] + share[1] < target[0] + target[1] + 0.12);
      CHECK(share[7] > target[7] / 3);              // and none is starved
    }
  }
}

TEST_CASE("synth: progress reports bytes, and returning false aborts and leaves no file") {
  ScratchDir tmp("progress");
  SynthParams p = tiny(2);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  p.progress = [&](uint64_t done, uint64_t total) {
    calls.emplace_back(done, total);
    return true;
  };
  const SynthModel m(p);
  m.write(tmp.file("ok.gguf"));
  REQUIRE(calls.size() >= 2);
  CHECK(calls.front().first == 0);
  CHECK(calls.back().first == m.data_bytes());
  for (size_t i = 1; i < calls.size(); ++i) {
    CHECK(calls[i].first >= calls[i - 1].first);
    CHECK(calls[i].second == m.data_bytes());
  }

  int n = 0;
  p.progress = [&](uint64_t, uint64_t) { return ++n < 5; };
  check_error([&] { write_synthetic_model(p, tmp.file("stopped.gguf")); }, STRATA_ABORTED, "progress");
  CHECK(n == 5);
  CHECK_FALSE(fs::exists(tmp.file("stopped.gguf")));
  CHECK_FALSE(fs::exists(tmp.file("stopped.gguf.partial")));
}

TEST_CASE("synth: bad arguments are INVALID_ARGUMENT") {
  ScratchDir tmp("bad");
  const std::string out = tmp.file("bad.gguf");
  auto with = [&](auto edit) {
    SynthParams p = tiny(1);
    edit(p);
    return [p, out] { write_synthetic_model(p, out); };
  };
  check_error(with([](SynthParams& p) { p.shape = "qwen3-7b"; }), STRATA_ERR_INVALID_ARGUMENT, "qwen3-7b");
  check_error(with([](SynthParams& p) { p.quant = "q3_x"; }), STRATA_ERR_INVALID_ARGUMENT, "q3_x");
  check_error(with([](SynthParams& p) { p.quant = "q8_1"; }), STRATA_ERR_INVALID_ARGUMENT, "q8_1");
  check_error(with([](SynthParams& p) { p.n_layer = -1; }), STRATA_ERR_INVALID_ARGUMENT, "n_layer");
  check_error(with([](SynthParams& p) { p.router_skew = -0.5f; }), STRATA_ERR_INVALID_ARGUMENT, "router_skew");
  check_error(with([](SynthParams& p) { p.router_skew = NAN; }), STRATA_ERR_INVALID_ARGUMENT, "router_skew");
  check_error(with([](SynthParams& p) { p.n_threads = -2; }), STRATA_ERR_INVALID_ARGUMENT, "n_threads");
  check_error(with([](SynthParams& p) { p.vocab = ""; }), STRATA_ERR_INVALID_ARGUMENT, "vocab");
  check_error([] { write_synthetic_model(tiny(1), ""); }, STRATA_ERR_INVALID_ARGUMENT, "path");
  CHECK_FALSE(fs::exists(out));
  // A vocabulary path that does not exist is an IO error naming it.
  check_error(with([&](SynthParams& p) { p.vocab = tmp.file("nope.json"); }), STRATA_ERR_IO, "nope.json");
}

TEST_CASE("synth: every quant writes a readable file") {
  ScratchDir tmp("quants");
  for (const char* q : {"q4_k", "q5_k", "q6_k", "q8_0", "f16", "bf16", "f32", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_xs",
                        "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m", "mxfp4", "nvfp4", "q1_0",
                        "q2_0"}) {
    INFO(q);
    SynthParams p = tiny(1);
    p.quant = q;
    write_synthetic_model(p, tmp.file(std::string(q) + ".gguf"));
    const GgufFile f = GgufFile::open(tmp.file(std::string(q) + ".gguf"));
    const GgmlType want = parse_type_name(q);
    CHECK(GgmlType(f.tensor("blk.0.attn_q.weight").type) == want);
    CHECK(GgmlType(f.tensor("blk.0.ffn_up_exps.weight").type) == want);
    const bool k_quant = want == GgmlType::Q4_K || want == GgmlType::Q5_K || want == GgmlType::Q6_K;
    const bool iq = want == GgmlType::IQ4_XS || want == GgmlType::IQ3_XXS || want == GgmlType::IQ3_S ||
                    want == GgmlType::IQ2_XXS || want == GgmlType::IQ2_XS || want == GgmlType::IQ2_S ||
                    want == GgmlType::IQ1_S || want == GgmlType::IQ1_M;
    const bool legacy = want == GgmlType::Q4_0 || want == GgmlType::Q4_1 || want == GgmlType::Q5_0 ||
                        want == GgmlType::Q5_1 || want == GgmlType::Q1_0 || want == GgmlType::Q2_0;
    const bool fp4 = want == GgmlType::MXFP4 || want == GgmlType::NVFP4;
    CHECK(GgmlType(f.tensor("output.weight").type) == (k_quant || iq || legacy || fp4 ? GgmlType::Q6_K : want));
    // Tiny's 128-wide down rows are not whole 256-blocks: Q8_0 under the K-quants, IQ4_NL under the IQ types.
    const GgmlType down = k_quant ? GgmlType::Q8_0 : iq ? GgmlType::IQ4_NL : want;
    CHECK(GgmlType(f.tensor("blk.0.ffn_down_exps.weight").type) == down);
    // Least-squares scales shrink the decoded values: the error is then orthogonal to them, so their RMS is
    // sqrt(1 - e^2) for relative error e. Q1_0 (e = 0.60): 0.80; Q2_0 (e = 0.36): 0.93; IQ2_XXS (e = 0.41;
    // not fully least squares): 0.945 here; IQ1_S, IQ1_M (e = 0.49, 0.44; the same): 0.93, 0.92.
    const bool iq1 = want == GgmlType::IQ1_S || want == GgmlType::IQ1_M;
    const double rms = want == GgmlType::Q1_0 ? 0.8 : want == GgmlType::Q2_0 ? 0.93 : iq1 ? 0.925 : 1.0;
    const double eps = want == GgmlType::IQ2_XXS ? 0.08 : 0.05;
    CHECK(file_rms(f, "token_embd.weight", 0, 32) == Catch::Approx(rms).epsilon(eps));
  }
}

TEST_CASE("synth: a quant mix sets the type of each matching tensor, first rule first") {
  SynthParams p = tiny(2);
  p.quant = "q4_k";
  p.quant_mix = "blk\\.0\\.ffn_down_exps=q5_1, ffn_(gate|up)_exps=iq3_xxs,ffn_down_exps=iq2_s,attn_v=q6_k,"
                "attn=mxfp4,token_embd=q8_0,^output\\.=iq4_nl";
  const SynthModel m(p);
  auto type = [&](const char* name) { return GgmlType(m.tensors()[m.tensor_index(name)].type); };
  CHECK(type("blk.0.ffn_down_exps.weight") == GgmlType::Q5_1);  // the first rule wins over the third
  CHECK(type("blk.1.ffn_down_exps.weight") == GgmlType::IQ4_NL);  // IQ2_S does not fit 128-wide rows
  CHECK(type("blk.1.ffn_gate_exps.weight") == GgmlType::IQ3_XXS);
  CHECK(type("blk.0.ffn_up_exps.weight") == GgmlType::IQ3_XXS);
  CHECK(type("blk.1.attn_v.weight") == GgmlType::Q6_K);
  CHECK(type("blk.1.attn_q.weight") == GgmlType::MXFP4);
  CHECK(type("blk.0.attn_output.weight") == GgmlType::MXFP4);  // "attn" before "^output\."
  CHECK(type("token_embd.weight") == GgmlType::Q8_0);
  CHECK(type("output.weight") == GgmlType::IQ4_NL);
  CHECK(type("blk.0.attn_norm.weight") == GgmlType::F32);  // norms and routers are not weight matrices here
  CHECK(type("blk.0.ffn_gate_inp.weight") == GgmlType::F32);
  // The rows are the unmixed model's: only their quantization differs.
  SynthParams plain = tiny(2);
  const SynthModel u(plain);
  std::vector<float> a(m.shape().n_embd), b(a.size());
  m.row(m.tensor_index("blk.1.ffn_up_exps.weight"), 5, a.data());
  u.row(u.tensor_index("blk.1.ffn_up_exps.weight"), 5, b.data());
  CHECK(a == b);

  // Written, read back: the file holds the same types.
  ScratchDir tmp("mix");
  write_synthetic_model(p, tmp.file("mix.gguf"));
  const GgufFile f = GgufFile::open(tmp.file("mix.gguf"));
  for (const SynthModel::Tensor& t : m.tensors()) CHECK(f.tensor(t.name).type == t.type);
}

TEST_CASE("synth: a bad quant mix is INVALID_ARGUMENT naming the rule") {
  auto mixed = [](const char* mix) {
    return [mix] {
      SynthParams p = tiny(1);
      p.quant_mix = mix;
      SynthModel m(p);
    };
  };
  check_error(mixed("ffn_down_exps"), STRATA_ERR_INVALID_ARGUMENT, "'ffn_down_exps' is not PATTERN=TYPE");
  check_error(mixed("=q4_0"), STRATA_ERR_INVALID_ARGUMENT, "'=q4_0' is not PATTERN=TYPE");
  check_error(mixed("attn="), STRATA_ERR_INVALID_ARGUMENT, "'attn=' is not PATTERN=TYPE");
  check_error(mixed("attn=q4_0,"), STRATA_ERR_INVALID_ARGUMENT, "'' is not PATTERN=TYPE");
  check_error(mixed("attn=q9_9"), STRATA_ERR_INVALID_ARGUMENT, "q9_9");
  check_error(mixed("attn=q8_1"), STRATA_ERR_INVALID_ARGUMENT, "q8_1");
  check_error(mixed("attn_(q=q4_0"), STRATA_ERR_INVALID_ARGUMENT, "bad pattern");
  check_error(mixed("ffn_dwn_exps=q5_1"), STRATA_ERR_INVALID_ARGUMENT, "'ffn_dwn_exps=q5_1' matches no weight matrix");
  check_error(mixed("attn_norm=q8_0"), STRATA_ERR_INVALID_ARGUMENT, "matches no weight matrix");
  check_error(mixed("attn=q8_0,attn_q=q4_0"), STRATA_ERR_INVALID_ARGUMENT, "only ones an earlier rule took");
}

TEST_CASE("synth: data files are found, or the paths tried are named") {
  CHECK(fs::exists(find_data_file("qwen3-tokenizer/tokenizer.json.gz")));
  check_error([] { find_data_file("no-such-dir/no-such-file"); }, STRATA_ERR_IO, "no-such-dir/no-such-file");
}

#ifdef STRATA_HAVE_ZLIB
TEST_CASE("synth: --vocab qwen3 carries the Qwen3 vocabulary and special ids") {
  ScratchDir tmp("qwen3");
  SynthParams p = tiny(1);
  p.vocab = "qwen3";
  write_synthetic_model(p, tmp.file("q.gguf"));
  const GgufFile f = GgufFile::open(tmp.file("q.gguf"));
  const Vocab v = vocab_from_gguf(f);
  CHECK(v.tokens.size() == 151669);
  CHECK(v.merges.size() > 150000);
  CHECK(v.pre == "qwen2");
  CHECK(v.bos_id == 151643);
  CHECK(v.pad_id == 151643);
  CHECK(v.eos_id == 151645);
  CHECK(v.tokens[151643] == "<|endoftext|>");
  CHECK(v.tokens[151645] == "<|im_end|>");
  CHECK_FALSE(v.add_bos);
  const std::vector<int64_t> dims(f.tensor("token_embd.weight").dims().begin(),
                                  f.tensor("token_embd.weight").dims().end());
  CHECK(dims == std::vector<int64_t>{256, 151669});
  CHECK(f.tensor("output.weight").ne[1] == 151669);
}
#endif
