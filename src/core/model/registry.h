// The architecture registry: one row per GGUF general.architecture this build runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/model/arch.h"
#include "core/model/layer_ops.h"
#include "core/model/tensors.h"

namespace strata::core {

// A row reads the architecture's own hyperparameters (the keys every architecture shares are read before it) and
// gives each layer's tensor list. Each row lives in src/core/archs/<name>.cpp; registry.cpp lists them.

// Reads "<architecture>.<key>" metadata, checked: a missing required key or a value out of range throws
// Error(FORMAT) naming the key.
class HParams {
 public:
  static constexpr int64_t kMaxSize = 1 << 20;  // the bound of a width (embedding, FFN) a row reads

  HParams(const GgufFile& file, std::string prefix) : file_(file), prefix_(std::move(prefix)) {}

  bool has(const char* key) const;

  int32_t required(const char* key, int64_t lo, int64_t hi) const;
  int32_t optional(const char* key, int64_t fallback, int64_t lo, int64_t hi) const;
  float real(const char* key, float fallback) const;
  float real_in(const char* key, float fallback, float lo, float hi) const;  // real(), in (lo, hi]: finite
  std::string string(const char* key, std::string_view fallback) const;
  std::string full_name(const char* key) const { return prefix_ + key; }

 private:
  const GgufFile& file_;
  std::string prefix_;
};

struct Architecture {
  const char* name = "";  // general.architecture
  // Reads the architecture's own keys into c. When it runs, c holds the shared sizes (layers, embedding,
  // heads, head dims, experts, context, rms eps) and one default LayerSpec per layer: attention with the file's
  // RoPE dimensions and base, and routed experts; the row sets what differs.
  void (*read)(const HParams& keys, ModelConfig& c) = nullptr;
  // The tensors of layer il, in file order.
  TensorList (*layer_tensors)(const ModelConfig& c, int32_t il) = nullptr;
  // The layers' math over the backends' ops (core/model/layer_ops.h).
  LayerProgram program = nullptr;
};

// The row of an architecture; nullptr when this build has none.
const Architecture* find_architecture(std::string_view name);

// The names of every row, comma separated: for messages.
std::string architecture_names();

}  // namespace strata::core
