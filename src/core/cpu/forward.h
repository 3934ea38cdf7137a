// The CPU reference backend: runs chunks through every layer with the plain ops of src/core/cpu.
#pragma once

#include <cstdint>
#include <memory>

#include "core/executor.h"
#include "core/partition.h"

namespace strata::core {

// A backend for one stage's layers, its executors running on n_threads threads.
std::unique_ptr<Backend> make_cpu_backend(const Model& model, const StagePlan& plan, int32_t n_threads);

}  // namespace strata::core
