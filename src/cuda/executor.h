// The CUDA executor: one session's KV cache and scratch on a device, running chunks through the resident weights.
#pragma once

#include <memory>

#include "core/runtime/executor.h"
#include "cuda/backend.h"

namespace strata::cuda {

// An executor of one stage (plan: its layers, whether it embeds, whether it holds the head).
std::unique_ptr<core::Executor> make_executor(const core::Model& model, const DeviceWeights& weights,
                                              const core::StagePlan& plan, int device,
                                              const core::SessionOptions& options);

}  // namespace strata::cuda
