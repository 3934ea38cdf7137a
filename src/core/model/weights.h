// Typed views of a model's tensors inside the mapped GGUF file, checked against the config.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/arch.h"
#include "core/model/tensors.h"
#include "core/quant/quant.h"

namespace strata::core {

class GgufFile;

// A tensor in the file: ne[0] is the row length (fastest dimension).
struct TensorRef {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  bool present() const { return data != nullptr; }
  size_t row_bytes() const { return row_size(type, ne[0]); }
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes(); }
  // Expert e of a 3-D expert tensor [n_in, n_out, n_expert].
  size_t expert_bytes() const { return row_bytes() * static_cast<size_t>(ne[1]); }
  const uint8_t* expert(int64_t e) const { return data + static_cast<size_t>(e) * expert_bytes(); }
};

// A layer's tensors by role, bound from its architecture's list; a role the layer lacks stays empty.
struct LayerWeights {
  std::array<TensorRef, kTensorRoles> tensors;

  TensorRef& operator[](TensorRole r) { return tensors[static_cast<size_t>(r)]; }
  const TensorRef& operator[](TensorRole r) const { return tensors[static_cast<size_t>(r)]; }
};

// Calls f(role, tensor) for each tensor the layer has, in role order.
template <class F>
void for_each_tensor(const LayerWeights& l, F&& f) {
  for (size_t i = 0; i < kTensorRoles; ++i)
    if (l.tensors[i].present()) f(static_cast<TensorRole>(i), l.tensors[i]);
}

// Bytes of the layer's routed-expert stacks (TensorKind::Experts), and of everything else it has.
uint64_t layer_expert_bytes(const LayerWeights& l);
uint64_t layer_dense_bytes(const LayerWeights& l);

struct ModelWeights {
  TensorRef token_embd, output_norm, output;  // output may alias token_embd (tied)
  std::vector<LayerWeights> layers;
  uint64_t expert_bytes = 0;  // all routed-expert tensors
  uint64_t dense_bytes = 0;   // everything else
  uint64_t n_params = 0;
};

// Binds every tensor of each layer's list (the architecture's) and the embedding, final norm and head; throws
// Error(FORMAT) naming the tensor when one is missing or has the wrong shape, Error(UNSUPPORTED) for a type this
// build cannot compute with.
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

}  // namespace strata::core
