// A model's configuration, read from GGUF metadata by its architecture's registry row.
#include "core/model/arch.h"

#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/model/registry.h"

namespace strata::core {
namespace {

// The keys every architecture shares (the "<arch>." keys llama.cpp reads for all of them).
void read_shared(const HParams& k, ModelConfig& c) {
  c.n_layer = k.required("block_count", 1, 4096);
  c.n_embd = k.required("embedding_length", 1, HParams::kMaxSize);
  c.n_head = k.required("attention.head_count", 1, 4096);
  c.n_head_kv = k.optional("attention.head_count_kv", c.n_head, 1, c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    fail(STRATA_ERR_FORMAT, "gguf: head_count {} is not a multiple of head_count_kv {}", c.n_head, c.n_head_kv);
  c.head_dim_k = k.optional("attention.key_length", c.n_embd / c.n_head, 2, 4096);
  c.head_dim_v = k.optional("attention.value_length", c.head_dim_k, 1, 4096);
  RopeSpec rope;
  rope.n_rot = k.optional("rope.dimension_count", c.head_dim_k, 2, c.head_dim_k);
  if (rope.n_rot % 2 != 0) fail(STRATA_ERR_FORMAT, "gguf: rope.dimension_count {} is odd", rope.n_rot);
  // Real bases run from 1e4 to 1e7; at or below 1 the rotations do not slow with the dimension.
  rope.freq_base = k.real_in("rope.freq_base", 10000.0f, 1.0f, 1e12f);
  // Scaled RoPE (linear or YaRN) changes every rotation; computing it unscaled would be silently wrong.
  const std::string scaling = k.string("rope.scaling.type", "linear");
  const char* factor_key = k.has("rope.scaling.factor") ? "rope.scaling.factor" : "rope.scale_linear";
  const float factor = k.real(factor_key, 0.0f);
  if (scaling != "none" && factor != 0.0f && factor != 1.0f)
    fail(STRATA_ERR_UNSUPPORTED, "model: RoPE scaling '{}' with factor {} ({}) is not supported yet", scaling,
         factor, k.full_name(factor_key));
  c.n_expert = k.optional("expert_count", 0, 0, 1 << 16);
  if (c.n_expert < 1)
    fail(STRATA_ERR_UNSUPPORTED, "architecture '{}' without experts ({} missing or 0): only Mixture-of-Experts "
         "models are supported", c.arch_name, k.full_name("expert_count"));
  c.n_expert_used = k.required("expert_used_count", 1, c.n_expert);
  c.n_ctx_train = k.optional("context_length", 4096, 1, 1 << 24);
  c.rms_eps = k.real_in("attention.layer_norm_rms_epsilon", 1e-6f, 0.0f, 1.0f);  // real files: 1e-6 and 1e-5
  LayerSpec layer;
  layer.attention.rope = rope;
  c.layers.assign(static_cast<size_t>(c.n_layer), layer);
}

const char* mixer_name(Mixer m) {
  switch (m) {
    case Mixer::Attention: return "attention";
    case Mixer::Mla: return "multi-head latent attention";
    case Mixer::GatedDeltaNet: return "a gated delta net";
  }
  return "?";
}

const char* ffn_name(Ffn f) {
  switch (f) {
    case Ffn::Dense: return "a dense FFN";
    case Ffn::Moe: return "routed experts";
    case Ffn::MoeShared: return "routed experts with a shared expert";
  }
  return "?";
}

// The backends compute full attention and routed experts; a row that asks for more fails here, at load.
void check_runnable(const ModelConfig& c) {
  for (int32_t il = 0; il < c.n_layer; ++il) {
    const LayerSpec& l = c.layer(il);
    if (l.mixer != Mixer::Attention || l.ffn != Ffn::Moe || l.attention.window != 0)
      fail(STRATA_ERR_UNSUPPORTED, "model: layer {} of '{}' computes {}{} and {}, which this build does not run",
           il, c.arch_name, mixer_name(l.mixer), l.attention.window ? " in a sliding window" : "", ffn_name(l.ffn));
  }
}

}  // namespace

ModelConfig read_model_config(const GgufFile& file) {
  ModelConfig c;
  c.arch_name = file.get_string("general.architecture");
  c.name = file.get_string_or("general.name", "");
  c.arch = find_architecture(c.arch_name);
  if (!c.arch)
    fail(STRATA_ERR_UNSUPPORTED, "unsupported architecture '{}' (this build runs: {})", c.arch_name,
         architecture_names());
  const HParams keys(file, c.arch_name + ".");
  read_shared(keys, c);
  c.arch->read(keys, c);
  check_runnable(c);
  return c;
}

}  // namespace strata::core
