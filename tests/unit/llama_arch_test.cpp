// Mixtral-style `llama` MoE files run through the same engine with the architecture's switches.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "catch.hpp"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/model/model.h"
#include "core/model/registry.h"
#include "core/model/synth.h"
#include "core/runtime/session.h"

using namespace strata::core;

namespace {

// A llama-architecture MoE file made from a synthetic qwen3moe one: the
// "qwen3moe.*" keys become "llama.*" (the expert FFN size is llama's
// feed_forward_length), and the q/k norms, which llama does not have, go.
struct LlamaFiles {
  std::string qwen, llama;
  LlamaFiles() {
    const auto dir = std::filesystem::temp_directory_path();
    const std::string tag = std::to_string(::getpid());
    qwen = (dir / ("strata-llama-src-" + tag + ".gguf")).string();
    llama = (dir / ("strata-llama-" + tag + ".gguf")).string();
    SynthParams sp;
    sp.n_layer = 2;
    sp.seed = 77;
    write_synthetic_model(sp, qwen);
    const GgufFile src = GgufFile::open(qwen);
    GgufWriter w(3);
    for (const GgufKv& kv : src.metadata()) {
      if (kv.key == "general.architecture") {
        w.set(kv.key, GgufValue::string("llama"));
      } else if (kv.key.rfind("qwen3moe.", 0) == 0) {
        const std::string rest = kv.key.substr(9);
        if (rest == "feed_forward_length") continue;
        w.set("llama." + (rest == "expert_feed_forward_length" ? std::string("feed_forward_length") : rest), kv.value);
      } else {
        w.set(kv.key, kv.value);
      }
    }
    for (const GgufTensorInfo& t : src.tensors()) {
      if (t.name.find("attn_q_norm") != std::string::npos || t.name.find("attn_k_norm") != std::string::npos) continue;
      w.add_tensor(t.name, std::vector<int64_t>(t.dims().begin(), t.dims().end()), t.type,
                   std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    w.write(llama);
  }
  ~LlamaFiles() {
    std::filesystem::remove(qwen);
    std::filesystem::remove(llama);
  }
};

const LlamaFiles& files() {
  static const LlamaFiles f;
  return f;
}

std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& toks, int chunk) {
  ModelOptions mo;
  mo.devices = "cpu";
  SessionOptions so;
  so.n_ctx = 64;
  so.chunk_size = chunk;
  Session s(Model::load(path, mo), so);
  std::vector<float> all;
  s.prompt(toks, [&](int32_t, std::span<const float> l) {
    all.insert(all.end(), l.begin(), l.end());
    return true;
  });
  return all;
}

}  // namespace

TEST_CASE("a llama MoE file loads with llama's switches") {
  ModelOptions mo;
  mo.devices = "cpu";
  const auto m = Model::load(files().llama, mo);
  const ModelConfig& c = m->config();
  CHECK(c.arch == find_architecture("llama"));
  CHECK(c.router.mode == RouterMode::TopkSoftmax);
  for (const LayerSpec& l : c.layers) {
    CHECK(l.attention.rope.style == RopeStyle::Adjacent);
    CHECK(l.attention.head_norm == NormKind::None);
  }
  CHECK(c.n_expert == 8);
  CHECK(c.n_ff_exp == 128);
  CHECK_FALSE(m->weights().layers[0][TensorRole::AttnQNorm].present());
}

TEST_CASE("a llama MoE file runs: chunked equals token by token, and differs from the qwen3moe twin") {
  const std::vector<int32_t> toks = {5, 77, 301, 12, 9, 400, 33, 250, 18, 2, 499, 61};
  const auto llama_1 = logits_of(files().llama, toks, 1);
  const auto llama_5 = logits_of(files().llama, toks, 5);
  REQUIRE(llama_1.size() == llama_5.size());
  CHECK(std::memcmp(llama_1.data(), llama_5.data(), llama_1.size() * sizeof(float)) == 0);
  for (float v : llama_1) REQUIRE(std::isfinite(v));
  // Without the q/k norms and with the other RoPE pairing, the logits change
  // after the first position (position 0's attention sees one key only).
  const auto qwen = logits_of(files().qwen, toks, 5);
  const size_t V = qwen.size() / toks.size();
  // The two gatings are the same function (softmax over the chosen k), computed in two ways.
  for (size_t i = 0; i < V; ++i) REQUIRE(std::abs(qwen[i] - llama_1[i]) <= 1e-4f * (1.0f + std::abs(qwen[i])));
  CHECK(std::memcmp(qwen.data() + V, llama_1.data() + V, (qwen.size() - V) * sizeof(float)) != 0);
}
