// A model's configuration: the sizes every layer shares, the router, and per layer what it computes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/router.h"

namespace strata::core {

class GgufFile;
struct Architecture;

// Rotary embedding pairing.
enum class RopeStyle {
  Neox,     // pairs (i, i + n_rot/2): qwen3moe
  Adjacent  // pairs (2i, 2i + 1): llama
};

// How a layer rotates q and k: the first n_rot dimensions of each head, the rest pass through.
struct RopeSpec {
  RopeStyle style = RopeStyle::Neox;
  int32_t n_rot = 0;
  float freq_base = 10000.0f;
};

// A layer's token mixer.
enum class Mixer : uint8_t {
  Attention,      // multi-head attention over the KV cache, full or in a sliding window (AttentionSpec::window)
  Mla,            // multi-head latent attention, run as absorbed MQA over a compressed cache (deepseek2)
  GatedDeltaNet,  // a gated delta-rule recurrence with a conv state (qwen3next, qwen35moe)
};

// A layer's feed-forward block.
enum class Ffn : uint8_t {
  Dense,      // one gated FFN (the leading layers of glm4moe and deepseek2)
  Moe,        // routed experts
  MoeShared,  // routed experts plus an always-on shared expert
};

// A norm's kind.
enum class NormKind : uint8_t {
  None,
  Rms,  // x / sqrt(mean(x^2) + eps), times a weight vector
};

struct AttentionSpec {
  NormKind head_norm = NormKind::None;  // of q and k per head, before RoPE (its weights: attn_q_norm, attn_k_norm)
  int32_t window = 0;    // sliding window in tokens; 0 attends to the whole context
  RopeSpec rope;
};

struct LayerSpec {
  Mixer mixer = Mixer::Attention;
  Ffn ffn = Ffn::Moe;
  AttentionSpec attention;  // when mixer == Attention
};

// Read from GGUF metadata by the architecture's registry row (core/model/registry.h).
struct ModelConfig {
  const Architecture* arch = nullptr;  // the registry row that read it (static)
  std::string arch_name;  // GGUF general.architecture
  std::string name;       // general.name, may be empty
  int32_t n_layer = 0;
  int32_t n_embd = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;  // attention.key_length
  int32_t head_dim_v = 0;  // attention.value_length
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_exp = 0;  // hidden size of one routed expert
  int32_t n_ctx_train = 0;
  int32_t n_vocab = 0;   // rows of token_embd
  float rms_eps = 1e-6f;
  RouterSpec router;            // every MoE layer's
  std::vector<LayerSpec> layers;  // one per layer

  const LayerSpec& layer(int32_t il) const { return layers[static_cast<size_t>(il)]; }
  int32_t q_dim() const { return n_head * head_dim_k; }
  int32_t k_dim() const { return n_head_kv * head_dim_k; }
  int32_t v_dim() const { return n_head_kv * head_dim_v; }
};

// Reads and checks the hyperparameters through the registry row of general.architecture; throws Error(FORMAT)
// naming the key that is missing or out of range, Error(UNSUPPORTED) for an architecture without a row or a
// layer this build does not compute.
ModelConfig read_model_config(const GgufFile& file);

}  // namespace strata::core
