// The CPU reference backend: runs chunks through every layer with the plain ops of src/core/cpu.
#pragma once

#include <cstdint>
#include <memory>

#include "core/executor.h"
#include "core/expert_store.h"
#include "core/model.h"
#include "core/partition.h"

namespace strata::core {

// A backend for one stage's layers, its executors running on n_threads
// threads. A budget (bytes; 0 = none) makes the stage behave like a device of
// that size: the experts that do not fit are packed into a host arena and go
// through the ring (memcpy into slot buffers) as on a GPU, with the same
// placement and schedules (options: adaptive residency, a usage profile).
// Errors: OUT_OF_MEMORY (the budget cannot hold the dense part, or the arena
// cannot be allocated), ABORTED (progress).
std::unique_ptr<Backend> make_cpu_backend(const Model& model, const StagePlan& plan, int32_t n_threads,
                                          uint64_t budget, const ExpertOptions& options, const ProgressFn& progress);

}  // namespace strata::core
