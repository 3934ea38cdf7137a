// Typed views of a model's tensors inside the mapped GGUF file, checked against the config.
#include "core/model/weights.h"

#include <fmt/ranges.h>

#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/model/registry.h"

namespace strata::core {
namespace {

using Shape = std::array<int64_t, 4>;

class Binder {
 public:
  explicit Binder(const GgufFile& file) : file_(file) {}

  TensorRef get(const std::string& name, const Shape& shape, bool float_only = false) {
    TensorRef t = find(name);
    if (!t.present()) fail(STRATA_ERR_FORMAT, "model: tensor '{}' is missing", name);
    check(t, shape, float_only);
    return t;
  }
  TensorRef optional(const std::string& name, const Shape& shape, bool float_only = false) {
    TensorRef t = find(name);
    if (t.present()) check(t, shape, float_only);
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
  static void check(const TensorRef& t, const Shape& want, bool float_only) {
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

uint64_t layer_bytes(const LayerWeights& l, bool experts) {
  uint64_t bytes = 0;
  for_each_tensor(l, [&](TensorRole role, const TensorRef& t) {
    if ((kind_of(role) == TensorKind::Experts) == experts) bytes += t.nbytes;
  });
  return bytes;
}

}  // namespace

uint64_t layer_expert_bytes(const LayerWeights& l) { return layer_bytes(l, true); }
uint64_t layer_dense_bytes(const LayerWeights& l) { return layer_bytes(l, false); }

ModelWeights bind_weights(const GgufFile& file, const ModelConfig& c) {
  Binder b(file);
  ModelWeights w;
  const int64_t E = c.n_embd;
  w.token_embd = b.get("token_embd.weight", {E, c.n_vocab, 1, 1});
  w.output_norm = b.get("output_norm.weight", {E, 1, 1, 1}, true);
  w.output = b.optional("output.weight", {E, c.n_vocab, 1, 1});
  if (!w.output.present()) w.output = w.token_embd;  // tied embeddings

  w.layers.resize(c.n_layer);
  for (int32_t il = 0; il < c.n_layer; ++il) {
    const std::string p = fmt::format("blk.{}.", il);
    LayerWeights& l = w.layers[il];
    const TensorList list = c.arch->layer_tensors(c, il);
    for (const TensorSpec& s : list.specs()) {
      const TensorKind kind = kind_of(s.role);
      l[s.role] = s.optional ? b.optional(p + s.name, s.ne, kind == TensorKind::Vector)
                             : b.get(p + s.name, s.ne, kind == TensorKind::Vector);
      if (kind == TensorKind::Experts) w.expert_bytes += l[s.role].nbytes;
    }
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
