// The registry rows, one file each (src/core/archs/<name>.cpp); core/model/registry.cpp lists them.
#pragma once

#include "core/model/registry.h"

namespace strata::core::archs {

const Architecture& qwen3moe();   // qwen3moe.cpp
const Architecture& llama_moe();  // llama_moe.cpp: general.architecture "llama" with routed experts

}  // namespace strata::core::archs
