// Architecture configuration of a model, read from GGUF metadata (never hard-coded).
#include "core/model/arch.h"

#include "core/base/error.h"
#include "core/gguf/gguf.h"

namespace strata::core {
namespace {

// Metadata of one architecture lives under "<arch>.<key>".
class ArchKeys {
 public:
  ArchKeys(const GgufFile& file, std::string prefix) : file_(file), prefix_(std::move(prefix)) {}

  int32_t required(const char* key, int64_t lo, int64_t hi) const {
    const std::string k = prefix_ + key;
    return checked(k, static_cast<int64_t>(file_.get_u64(k)), lo, hi);
  }
  int32_t optional(const char* key, int64_t fallback, int64_t lo, int64_t hi) const {
    const std::string k = prefix_ + key;
    return checked(k, static_cast<int64_t>(file_.get_u64_or(k, static_cast<uint64_t>(fallback))), lo, hi);
  }
  float real(const char* key, float fallback) const {
    const std::string k = prefix_ + key;
    const float v = file_.get_f32_or(k, fallback);
    if (!(v > 0.0f)) fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' must be positive, got {}", k, v);
    return v;
  }

 private:
  static int32_t checked(const std::string& key, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' = {} is outside [{}, {}]", key, v, lo, hi);
    return static_cast<int32_t>(v);
  }
  const GgufFile& file_;
  std::string prefix_;
};

}  // namespace

ModelConfig read_model_config(const GgufFile& file) {
  ModelConfig c;
  c.arch_name = file.get_string("general.architecture");
  c.name = file.get_string_or("general.name", "");
  if (c.arch_name == "qwen3moe") {
    c.arch = Arch::Qwen3Moe;
    c.qk_norm = true;
    c.gating = Gating::SoftmaxTopkNorm;  // Qwen3-MoE normalizes the top-k probabilities
    c.rope = RopeStyle::Neox;
  } else if (c.arch_name == "llama") {
    c.arch = Arch::LlamaMoe;
    c.qk_norm = false;
    c.gating = Gating::TopkSoftmax;
    c.rope = RopeStyle::Adjacent;
  } else {
    fail(STRATA_ERR_UNSUPPORTED, "unsupported architecture '{}' (supported: qwen3moe, llama with experts)",
         c.arch_name);
  }

  const ArchKeys k(file, c.arch_name + ".");
  constexpr int64_t kBig = 1 << 20;
  c.n_layer = k.required("block_count", 1, 4096);
  c.n_embd = k.required("embedding_length", 1, kBig);
  c.n_head = k.required("attention.head_count", 1, 4096);
  c.n_head_kv = k.optional("attention.head_count_kv", c.n_head, 1, c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    fail(STRATA_ERR_FORMAT, "gguf: head_count {} is not a multiple of head_count_kv {}", c.n_head, c.n_head_kv);
  c.head_dim_k = k.optional("attention.key_length", c.n_embd / c.n_head, 2, 4096);
  c.head_dim_v = k.optional("attention.value_length", c.head_dim_k, 1, 4096);
  c.n_rot = k.optional("rope.dimension_count", c.head_dim_k, 2, c.head_dim_k);
  if (c.n_rot % 2 != 0) fail(STRATA_ERR_FORMAT, "gguf: rope.dimension_count {} is odd", c.n_rot);
  c.n_expert = k.optional("expert_count", 0, 0, 1 << 16);
  if (c.n_expert < 1)
    fail(STRATA_ERR_UNSUPPORTED, "architecture '{}' without experts ({}expert_count missing or 0): only "
         "Mixture-of-Experts models are supported", c.arch_name, c.arch_name + ".");
  c.n_expert_used = k.required("expert_used_count", 1, c.n_expert);
  c.n_ff_exp = c.arch == Arch::Qwen3Moe ? k.required("expert_feed_forward_length", 1, kBig)
                                        : k.required("feed_forward_length", 1, kBig);
  c.n_ctx_train = k.optional("context_length", 4096, 1, 1 << 24);
  c.rms_eps = k.real("attention.layer_norm_rms_epsilon", 1e-6f);
  c.rope_freq_base = k.real("rope.freq_base", 10000.0f);
  return c;
}

}  // namespace strata::core
