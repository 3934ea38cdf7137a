// The model's layer split: per-layer bytes from the bound weights, budgets from the devices, then plan_partition.
#include "core/plan/stages.h"

#include <algorithm>


namespace strata::core {
namespace {

// Left free on each GPU for the driver, cuBLAS and the sessions' scratch.
constexpr uint64_t kGpuReserve = uint64_t(1) << 30;

uint64_t bytes_of(const TensorRef& t) { return t.present() ? t.nbytes : 0; }

}  // namespace

PartitionInput partition_input(const ModelConfig& c, const ModelWeights& w) {
  PartitionInput in;
  const int32_t ctx = std::min(c.n_ctx_train, kPlanContext);
  const uint64_t kv = uint64_t(2) * ctx * c.n_head_kv * (c.head_dim_k + c.head_dim_v);  // F16 K and V rows
  for (const LayerWeights& l : w.layers) {
    in.layer_bytes.push_back(kv + layer_dense_bytes(l));
    in.layer_expert_bytes.push_back(layer_expert_bytes(l));
  }
  in.embd_bytes = bytes_of(w.token_embd);
  in.head_bytes = bytes_of(w.output) + bytes_of(w.output_norm);
  return in;
}

std::vector<StageDevice> stage_devices(const std::vector<LogicalDevice>& devices, uint64_t vram_budget,
                                       const std::vector<uint64_t>& free_bytes, uint64_t host_bytes) {
  std::vector<StageDevice> out;
  for (const LogicalDevice& d : devices) {
    StageDevice s;
    if (d.is_cpu()) {
      s.budget = host_bytes;
    } else if (vram_budget > 0) {
      s.budget = vram_budget;
    } else {
      const auto sharing = std::count_if(devices.begin(), devices.end(), [&](const LogicalDevice& o) {
        return !o.is_cpu() && o.ordinal == d.ordinal;
      });
      const uint64_t share = free_bytes.at(static_cast<size_t>(d.ordinal)) / static_cast<uint64_t>(sharing);
      s.budget = share > kGpuReserve ? share - kGpuReserve : 0;
    }
    out.push_back(s);
  }
  return out;
}

PartitionPlan plan_stages(const ModelConfig& config, const ModelWeights& weights,
                          const std::vector<StageDevice>& devices, const LayerSplit& split) {
  PartitionInput in = partition_input(config, weights);
  in.devices = devices;
  in.split = split;
  return plan_partition(in);
}

}  // namespace strata::core
