// The layer programs: the steps each family's program calls on a backend's layer ops, in order, with the specs
// of the layer it runs.
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/model/layer_ops.h"
#include "core/model/registry.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

// Records each step as "name il" (combine adds its next layer) and, for the steps that take a spec, the spec.
class RecordingOps final : public LayerOps {
 public:
  std::vector<std::string> steps;
  std::vector<const void*> specs;  // in call order
  int32_t cancel_at = -1;          // begin_layer throws ABORTED at this layer

  void begin_layer(int32_t il) override {
    if (il == cancel_at) fail(STRATA_ABORTED, "cancelled at layer {}", il);
    add("begin_layer", il);
  }
  void attn_norm(int32_t il) override { add("attn_norm", il); }
  void qkv(int32_t il) override { add("qkv", il); }
  void attn_inputs(int32_t il, const AttentionSpec& a) override { add("attn_inputs", il, &a); }
  void attention_out(int32_t il, const AttentionSpec& a) override { add("attention_out", il, &a); }
  void ffn_norm(int32_t il) override { add("ffn_norm", il); }
  void router(int32_t il, const RouterSpec& r) override { add("router", il, &r); }
  void topk(int32_t il, const RouterSpec& r) override { add("topk", il, &r); }
  void experts(int32_t il) override { add("experts", il); }
  void combine(int32_t il, int32_t next) override { add("combine", il, nullptr, " next " + std::to_string(next)); }
  void head() override { steps.emplace_back("head"); }

 private:
  void add(const char* name, int32_t il, const void* spec = nullptr, const std::string& more = "") {
    steps.push_back(std::string(name) + " " + std::to_string(il) + more);
    if (spec) specs.push_back(spec);
  }
};

// A config of n layers for a row: default layer specs (the row's reader is not run).
ModelConfig config_of(const char* arch, int32_t n_layers) {
  ModelConfig c;
  c.arch = find_architecture(arch);
  REQUIRE(c.arch != nullptr);
  c.n_layer = n_layers;
  c.layers.resize(static_cast<size_t>(n_layers));
  return c;
}

// The steps of one layer of attention then routed experts.
std::vector<std::string> attention_moe_layer(int32_t il, int32_t next) {
  const std::string i = " " + std::to_string(il);
  return {"begin_layer" + i, "attn_norm" + i, "qkv" + i,    "attn_inputs" + i,
          "attention_out" + i, "ffn_norm" + i, "router" + i, "topk" + i,
          "experts" + i,       "combine" + i + " next " + std::to_string(next)};
}

std::vector<std::string> concat(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> all;
  for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

}  // namespace

TEST_CASE("layer programs: every registry row has one") {
  const std::string names = architecture_names() + ", ";
  int rows = 0;
  for (size_t b = 0, e; (e = names.find(", ", b)) != std::string::npos; b = e + 2, ++rows) {
    const Architecture* row = find_architecture(names.substr(b, e - b));
    REQUIRE(row != nullptr);
    CHECK(row->program != nullptr);
  }
  CHECK(rows == 2);
}

TEST_CASE("layer programs: qwen3moe and llama run attention then routed experts per layer, the head last") {
  for (const char* name : {"qwen3moe", "llama"}) {
    INFO(name);
    const ModelConfig c = config_of(name, 4);
    SECTION("a middle stage: its layers only, the last combine with no next layer") {
      RecordingOps ops;
      c.arch->program(ops, c, {1, 3, false});
      CHECK(ops.steps == concat({attention_moe_layer(1, 2), attention_moe_layer(2, -1)}));
    }
    SECTION("the last stage ends with the head") {
      RecordingOps ops;
      c.arch->program(ops, c, {3, 4, true});
      CHECK(ops.steps == concat({attention_moe_layer(3, -1), {"head"}}));
    }
    SECTION("each step gets its layer's attention spec and the model's router spec") {
      RecordingOps ops;
      c.arch->program(ops, c, {0, 4, true});
      std::vector<const void*> want;
      for (const LayerSpec& l : c.layers) want.insert(want.end(), {&l.attention, &l.attention, &c.router, &c.router});
      CHECK(ops.specs == want);
    }
  }
}

TEST_CASE("layer programs: a cancel at begin_layer stops the program before that layer's steps") {
  const ModelConfig c = config_of("qwen3moe", 3);
  RecordingOps ops;
  ops.cancel_at = 1;
  CHECK_FAILS_WITH(c.arch->program(ops, c, {0, 3, true}), STRATA_ABORTED, "cancelled at layer 1");
  CHECK(ops.steps == attention_moe_layer(0, 1));
}
