// The architecture registry: rows by general.architecture, the shared and per-row hyperparameters, each row's
// tensor list, and the roles everything after binding walks.
#include <filesystem>
#include <limits>
#include <set>
#include <unistd.h>

#include "catch.hpp"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/model/model.h"
#include "core/model/registry.h"
#include "core/model/synth.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

// A metadata-only GGUF for `arch` with the keys a small MoE model needs; `extra` adds or replaces keys.
struct ConfigFile {
  std::string path;
  explicit ConfigFile(const std::string& arch, const std::vector<GgufKv>& extra = {}) {
    path = (std::filesystem::temp_directory_path() / ("strata-registry-" + std::to_string(::getpid()) + ".gguf"))
               .string();
    GgufWriter w(3);
    const std::string a = arch + ".";
    w.set("general.architecture", GgufValue::string(arch));
    w.set(a + "block_count", GgufValue::u32(3));
    w.set(a + "embedding_length", GgufValue::u32(64));
    w.set(a + "attention.head_count", GgufValue::u32(4));
    w.set(a + "attention.head_count_kv", GgufValue::u32(2));
    w.set(a + "attention.key_length", GgufValue::u32(32));
    w.set(a + "attention.value_length", GgufValue::u32(32));
    w.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(1e-6f));
    w.set(a + "expert_count", GgufValue::u32(8));
    w.set(a + "expert_used_count", GgufValue::u32(2));
    w.set(a + "expert_feed_forward_length", GgufValue::u32(48));
    w.set(a + "feed_forward_length", GgufValue::u32(96));
    for (const GgufKv& kv : extra) w.set(kv.key, kv.value);
    w.write(path);
  }
  ~ConfigFile() { std::filesystem::remove(path); }
  ModelConfig read() const { return read_model_config(GgufFile::open(path)); }
};

std::vector<std::string> names_of(const TensorList& t) {
  std::vector<std::string> names;
  for (const TensorSpec& s : t.specs()) names.push_back(s.name);
  return names;
}

}  // namespace

TEST_CASE("registry: a row per architecture this build runs, none for the others") {
  REQUIRE(find_architecture("qwen3moe") != nullptr);
  REQUIRE(find_architecture("llama") != nullptr);
  CHECK(std::string(find_architecture("qwen3moe")->name) == "qwen3moe");
  CHECK(find_architecture("glm4moe") == nullptr);
  CHECK(find_architecture("") == nullptr);
  CHECK(architecture_names() == "qwen3moe, llama");
  CHECK_FAILS_WITH(ConfigFile("glm4moe").read(), STRATA_ERR_UNSUPPORTED, "this build runs: qwen3moe, llama");
}

TEST_CASE("registry: qwen3moe reads its expert width and norms q and k, every layer the same") {
  const ModelConfig c = ConfigFile("qwen3moe").read();
  CHECK(c.arch == find_architecture("qwen3moe"));
  CHECK(c.n_ff_exp == 48);  // expert_feed_forward_length, not feed_forward_length
  CHECK(c.router.mode == RouterMode::SoftmaxTopkNorm);
  REQUIRE(c.layers.size() == 3);
  for (const LayerSpec& l : c.layers) {
    CHECK(l.mixer == Mixer::Attention);
    CHECK(l.ffn == Ffn::Moe);
    CHECK(l.attention.head_norm == NormKind::Rms);
    CHECK(l.attention.window == 0);
    CHECK(l.attention.rope.style == RopeStyle::Neox);
    CHECK(l.attention.rope.n_rot == 32);  // rope.dimension_count defaults to the key length
    CHECK(l.attention.rope.freq_base == 10000.0f);
  }
  const TensorList t = c.arch->layer_tensors(c, 1);
  CHECK(names_of(t) == std::vector<std::string>{"attn_norm.weight", "attn_q.weight", "attn_k.weight",
                                                "attn_v.weight", "attn_output.weight", "attn_q_norm.weight",
                                                "attn_k_norm.weight", "ffn_norm.weight", "ffn_gate_inp.weight",
                                                "ffn_gate_exps.weight", "ffn_up_exps.weight",
                                                "ffn_down_exps.weight"});
  const std::vector<TensorSpec>& s = t.specs();
  CHECK(s[1].ne == std::array<int64_t, 4>{64, 128, 1, 1});  // q: 4 heads of 32
  CHECK(s[2].ne == std::array<int64_t, 4>{64, 64, 1, 1});   // k: 2 heads of 32
  CHECK(s[5].ne == std::array<int64_t, 4>{32, 1, 1, 1});
  CHECK(s[8].ne == std::array<int64_t, 4>{64, 8, 1, 1});
  CHECK(s[11].ne == std::array<int64_t, 4>{48, 64, 8, 1});
  std::set<TensorRole> roles;
  for (const TensorSpec& x : s) {
    CHECK_FALSE(x.optional);
    CHECK(roles.insert(x.role).second);  // each role once
  }
}

TEST_CASE("registry: llama reads feed_forward_length as the expert width, adjacent RoPE, no q/k norm") {
  const ModelConfig c = ConfigFile("llama", {{"llama.rope.dimension_count", GgufValue::u32(16)},
                                             {"llama.rope.freq_base", GgufValue::f32(5e5f)}})
                            .read();
  CHECK(c.n_ff_exp == 96);
  CHECK(c.router.mode == RouterMode::TopkSoftmax);
  for (const LayerSpec& l : c.layers) {
    CHECK(l.attention.head_norm == NormKind::None);
    CHECK(l.attention.rope.style == RopeStyle::Adjacent);
    CHECK(l.attention.rope.n_rot == 16);
    CHECK(l.attention.rope.freq_base == 5e5f);
  }
  const TensorList t = c.arch->layer_tensors(c, 0);
  CHECK(t.specs().size() == 10);
  for (const TensorSpec& x : t.specs()) CHECK((x.role != TensorRole::AttnQNorm && x.role != TensorRole::AttnKNorm));
}

TEST_CASE("registry: scaled RoPE is refused rather than computed unscaled") {
  CHECK_FAILS_WITH(ConfigFile("qwen3moe", {{"qwen3moe.rope.scaling.type", GgufValue::string("yarn")},
                                           {"qwen3moe.rope.scaling.factor", GgufValue::f32(4.0f)}})
                       .read(),
                   STRATA_ERR_UNSUPPORTED, "RoPE scaling 'yarn' with factor 4");
  CHECK_FAILS_WITH(ConfigFile("llama", {{"llama.rope.scale_linear", GgufValue::f32(2.0f)}}).read(),
                   STRATA_ERR_UNSUPPORTED, "RoPE scaling 'linear' with factor 2 (llama.rope.scale_linear)");
  // No scaling: a factor of 0 or 1, or the type "none".
  CHECK_NOTHROW(ConfigFile("qwen3moe", {{"qwen3moe.rope.scaling.type", GgufValue::string("yarn")},
                                        {"qwen3moe.rope.scaling.factor", GgufValue::f32(1.0f)}})
                    .read());
  CHECK_NOTHROW(ConfigFile("qwen3moe", {{"qwen3moe.rope.scaling.type", GgufValue::string("none")},
                                        {"qwen3moe.rope.scaling.factor", GgufValue::f32(8.0f)}})
                    .read());
  CHECK_NOTHROW(ConfigFile("qwen3moe", {{"qwen3moe.rope.scaling.factor", GgufValue::f32(0.0f)}}).read());
}

TEST_CASE("registry: shared keys are checked before the row reads") {
  CHECK_FAILS_WITH(ConfigFile("qwen3moe", {{"qwen3moe.expert_count", GgufValue::u32(0)}}).read(),
                   STRATA_ERR_UNSUPPORTED, "only Mixture-of-Experts");
  CHECK_FAILS_WITH(ConfigFile("qwen3moe", {{"qwen3moe.attention.head_count_kv", GgufValue::u32(3)}}).read(),
                   STRATA_ERR_FORMAT, "not a multiple of head_count_kv");
  CHECK_FAILS_WITH(ConfigFile("qwen3moe", {{"qwen3moe.rope.dimension_count", GgufValue::u32(7)}}).read(),
                   STRATA_ERR_FORMAT, "rope.dimension_count 7 is odd");
}

TEST_CASE("tensors: every role has a kind, and binding fills the roles of the row's list") {
  for (size_t r = 0; r < kTensorRoles; ++r) CHECK_NOTHROW(kind_of(static_cast<TensorRole>(r)));
  CHECK(kind_of(TensorRole::AttnNorm) == TensorKind::Vector);
  CHECK(kind_of(TensorRole::AttnOut) == TensorKind::Matrix);
  CHECK(kind_of(TensorRole::FfnGateInp) == TensorKind::Router);
  CHECK(kind_of(TensorRole::FfnDownExps) == TensorKind::Experts);

  const std::string path =
      (std::filesystem::temp_directory_path() / ("strata-registry-model-" + std::to_string(::getpid()) + ".gguf"))
          .string();
  SynthParams sp;
  sp.n_layer = 2;
  write_synthetic_model(sp, path);
  {
    ModelOptions mo;
    mo.devices = "cpu";
    const auto m = Model::load(path, mo);
    const ModelConfig& c = m->config();
    uint64_t dense = 0, experts = 0;
    for (int32_t il = 0; il < c.n_layer; ++il) {
      const LayerWeights& l = m->weights().layers[il];
      const TensorList list = c.arch->layer_tensors(c, il);
      size_t present = 0;
      for_each_tensor(l, [&](TensorRole, const TensorRef&) { ++present; });
      CHECK(present == list.specs().size());
      for (const TensorSpec& s : list.specs()) {
        CHECK(l[s.role].name == "blk." + std::to_string(il) + "." + s.name);
        CHECK(l[s.role].ne == s.ne);
      }
      dense += layer_dense_bytes(l);
      experts += layer_expert_bytes(l);
    }
    CHECK(experts == m->weights().expert_bytes);
    const ModelWeights& w = m->weights();
    CHECK(dense + w.token_embd.nbytes + w.output_norm.nbytes + w.output.nbytes == w.dense_bytes);
  }
  std::filesystem::remove(path);
}

TEST_CASE("registry: float hyperparameters are finite and in range") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string eps = "qwen3moe.attention.layer_norm_rms_epsilon";
  const std::string base = "qwen3moe.rope.freq_base";
  for (const float bad : {inf, nan, 0.0f, -1e-6f, 2.0f})
    CHECK_FAILS_WITH(ConfigFile("qwen3moe", {{eps, GgufValue::f32(bad)}}).read(), STRATA_ERR_FORMAT,
                     "metadata '" + eps + "' must be in (0, 1]");
  for (const float bad : {inf, nan, 1e-30f, 1.0f, -1e6f, 1e13f})
    CHECK_FAILS_WITH(ConfigFile("qwen3moe", {{base, GgufValue::f32(bad)}}).read(), STRATA_ERR_FORMAT,
                     "metadata '" + base + "' must be in (1, 1000000000000]");
  const ModelConfig c = ConfigFile("qwen3moe", {{eps, GgufValue::f32(1e-5f)}, {base, GgufValue::f32(1e7f)}}).read();
  CHECK(c.rms_eps == 1e-5f);
  CHECK(c.layers[0].attention.rope.freq_base == 1e7f);
}
