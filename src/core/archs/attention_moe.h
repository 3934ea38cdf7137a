// The attention + routed experts family: every layer grouped-query attention, then routed SwiGLU experts
// (qwen3moe, and llama with experts: Mixtral). Its rows differ only in their specs.
#pragma once

#include "core/model/layer_ops.h"
#include "core/model/tensors.h"

namespace strata::core::archs {

// Layer il's tensors: the attention's (as its LayerSpec says), then the routed experts'.
TensorList attention_moe_tensors(const ModelConfig& c, int32_t il);

// The family's layer program.
void attention_moe_program(LayerOps& ops, const ModelConfig& c, const StageRange& stage);

}  // namespace strata::core::archs
