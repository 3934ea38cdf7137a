// Typed views of a model's tensors inside the mapped GGUF file, checked against the config.
#include "core/model/weights.h"

#include <fmt/ranges.h>

#include "core/base/error.h"
#include "core/gguf/gguf.h"

namespace strata::core {
namespace {

class Binder {
 public:
  explicit Binder(const GgufFile& file) : file_(file) {}

  TensorRef get(const std::string& name, std::initializer_list<int64_t> shape, bool float_only = false) {
    TensorRef t = find(name);
    if (!t.present()) fail(STRATA_ERR_FORMAT, "model: tensor '{}' is missing", name);
    check(t, shape, float_only);
    return t;
  }
  TensorRef optional(const std::string& name, std::initializer_list<int64_t> shape) {
    TensorRef t = find(name);
    if (t.present()) check(t, shape, false);
    return t;
  }

 private:
  TensorRef find(const std::string& name) const {
    TensorRef t;
    const GgufTensorInfo* info = file_.find_tensor(name);
    if (!info) return t;
    t.name = name;
    t.type = static_cast<GgmlType>(info->type);
    t.ne = info->ne;
    t.data = info->data;
    t.nbytes = info->n_bytes;
    return t;
  }
  static void check(const TensorRef& t, std::initializer_list<int64_t> shape, bool float_only) {
    std::array<int64_t, 4> want{1, 1, 1, 1};
    size_t i = 0;
    for (int64_t d : shape) want[i++] = d;
    if (t.ne != want)
      fail(STRATA_ERR_FORMAT, "model: tensor '{}' has shape [{}], expected [{}]", t.name, fmt::join(t.ne, ", "),
           fmt::join(want, ", "));
    const TypeTraits& traits = type_traits(t.type);
    if (!traits.computable)
      fail(STRATA_ERR_UNSUPPORTED, "model: tensor '{}' has type {}, which this build cannot compute with", t.name,
           traits.name);
    if (float_only && t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16)
      fail(STRATA_ERR_UNSUPPORTED, "model: tensor '{}' must be F32, F16 or BF16, got {}", t.name, traits.name);
  }
  const GgufFile& file_;
};

}  // namespace

ModelWeights bind_weights(const GgufFile& file, const ModelConfig& c) {
  Binder b(file);
  ModelWeights w;
  const int64_t E = c.n_embd;
  w.token_embd = b.get("token_embd.weight", {E, c.n_vocab});
  w.output_norm = b.get("output_norm.weight", {E}, true);
  w.output = b.optional("output.weight", {E, c.n_vocab});
  if (!w.output.present()) w.output = w.token_embd;  // tied embeddings

  w.layers.resize(c.n_layer);
  for (int32_t il = 0; il < c.n_layer; ++il) {
    const std::string p = fmt::format("blk.{}.", il);
    LayerWeights& l = w.layers[il];
    l.attn_norm = b.get(p + "attn_norm.weight", {E}, true);
    l.wq = b.get(p + "attn_q.weight", {E, c.q_dim()});
    l.wk = b.get(p + "attn_k.weight", {E, c.k_dim()});
    l.wv = b.get(p + "attn_v.weight", {E, c.v_dim()});
    l.wo = b.get(p + "attn_output.weight", {c.n_head * c.head_dim_v, E});
    if (c.qk_norm) {
      l.q_norm = b.get(p + "attn_q_norm.weight", {c.head_dim_k}, true);
      l.k_norm = b.get(p + "attn_k_norm.weight", {c.head_dim_k}, true);
    }
    l.ffn_norm = b.get(p + "ffn_norm.weight", {E}, true);
    l.gate_inp = b.get(p + "ffn_gate_inp.weight", {E, c.n_expert});
    l.gate_exps = b.get(p + "ffn_gate_exps.weight", {E, c.n_ff_exp, c.n_expert});
    l.up_exps = b.get(p + "ffn_up_exps.weight", {E, c.n_ff_exp, c.n_expert});
    l.down_exps = b.get(p + "ffn_down_exps.weight", {c.n_ff_exp, E, c.n_expert});
    w.expert_bytes += l.gate_exps.nbytes + l.up_exps.nbytes + l.down_exps.nbytes;
  }
  uint64_t total = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    w.n_params += static_cast<uint64_t>(t.n_elements);
    total += t.n_bytes;
  }
  w.dense_bytes = total - w.expert_bytes;
  return w;
}

}  // namespace strata::core
