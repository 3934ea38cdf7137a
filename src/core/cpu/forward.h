// The CPU reference backend: runs chunks through every layer with the plain ops of src/core/cpu.
#pragma once

#include <memory>

#include "core/executor.h"

namespace strata::core {

std::unique_ptr<Backend> make_cpu_backend(const Model& model);

}  // namespace strata::core
