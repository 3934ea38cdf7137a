// The model's layer split: the partitioner's input from the weights and the logical devices, and the plan.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/arch.h"
#include "core/model/weights.h"
#include "core/plan/partition.h"
#include "core/runtime/devices.h"

namespace strata::core {

// Context the partitioner sizes each layer's KV cache for (F16): the
// sessions' default context.
inline constexpr int32_t kPlanContext = 4096;

// Per layer: dense bytes (attention, norms, router) plus the F16 KV cache of
// min(n_ctx_train, kPlanContext) positions, and routed-expert bytes; the
// embedding and the output head (its own copy even when tied).
PartitionInput partition_input(const ModelConfig& config, const ModelWeights& weights);

// A logical device's budget for the partitioner: `vram_budget` when set,
// else the free memory of its GPU shared evenly by the logical devices on
// that GPU, less a reserve; for the CPU, `host_bytes` (physical memory).
// `free_bytes[ordinal]` is each GPU's free memory.
std::vector<StageDevice> stage_devices(const std::vector<LogicalDevice>& devices, uint64_t vram_budget,
                                       const std::vector<uint64_t>& free_bytes, uint64_t host_bytes);

// The split of the model's layers over `devices` as `split` asks (one stage
// on devices[0] when it is Single). Errors as plan_partition.
PartitionPlan plan_stages(const ModelConfig& config, const ModelWeights& weights,
                          const std::vector<StageDevice>& devices, const LayerSplit& split);

}  // namespace strata::core
