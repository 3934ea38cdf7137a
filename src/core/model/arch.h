// Architecture configuration of a model, read from GGUF metadata (never hard-coded).
#pragma once

#include <cstdint>
#include <string>

namespace strata::core {

class GgufFile;

enum class Arch { Qwen3Moe, LlamaMoe };

// How router logits become the k expert weights of a token.
enum class Gating {
  SoftmaxTopkNorm,  // softmax over all experts, top-k, renormalize the k weights (Qwen3)
  TopkSoftmax,      // top-k of the logits, softmax over those k (Mixtral)
};

// Rotary embedding pairing.
enum class RopeStyle {
  Neox,     // pairs (i, i + n_rot/2): qwen3moe
  Adjacent  // pairs (2i, 2i + 1): llama
};

struct ModelConfig {
  Arch arch = Arch::Qwen3Moe;
  std::string arch_name;  // GGUF general.architecture
  std::string name;       // general.name, may be empty
  int32_t n_layer = 0;
  int32_t n_embd = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;  // attention.key_length
  int32_t head_dim_v = 0;  // attention.value_length
  int32_t n_rot = 0;       // rotated dimensions per head
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_exp = 0;  // hidden size of one routed expert
  int32_t n_ctx_train = 0;
  int32_t n_vocab = 0;   // rows of token_embd
  float rms_eps = 1e-6f;
  float rope_freq_base = 10000.0f;
  bool qk_norm = false;  // RMS norm of q and k per head before RoPE
  Gating gating = Gating::SoftmaxTopkNorm;
  RopeStyle rope = RopeStyle::Neox;

  int32_t q_dim() const { return n_head * head_dim_k; }
  int32_t k_dim() const { return n_head_kv * head_dim_k; }
  int32_t v_dim() const { return n_head_kv * head_dim_v; }
};

// Reads and checks the hyperparameters; throws Error(FORMAT) naming the key
// that is missing or out of range, Error(UNSUPPORTED) for an unknown architecture.
ModelConfig read_model_config(const GgufFile& file);

}  // namespace strata::core
