// PartitionPlan: contiguous layer ranges per logical device (the layer split), balanced and within budgets.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace strata::core {

// The `layer_split` option.
struct LayerSplit {
  enum class Kind {
    Single,  // "" : one stage on the first device (others may still serve as peers)
    Auto,    // "auto": plan_partition picks the ranges
    Counts,  // "24,24": layers per stage, in device order
  };
  Kind kind = Kind::Single;
  std::vector<int32_t> counts;  // Counts only
};

// Parses "" / "auto" / "24,24" (spaces around fields allowed). Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) naming the text for an empty field, a
// field that is not a positive decimal count (0 included: every stage needs a
// layer), or a count above 2^31 - 1.
LayerSplit parse_layer_split(std::string_view text);

// One logical device as the partitioner sees it.
struct StageDevice {
  uint64_t budget = 0;         // its VRAM budget (resolved bytes)
  uint64_t reserve_bytes = 0;  // held whatever the layers: prompt buffers and the minimum ring (stage_buffers.h)
  // Pinned host-to-device rate of its link, for the time of the experts it
  // must stream. Default: PCIe Gen5 x16 as measured on an H200 (pinned host
  // to device about 55 GB/s); the engine passes measured rates.
  double link_GBps = 55.0;
  double speed = 1.0;  // compute speed relative to the device layer_compute was measured on
};

struct PartitionInput {
  // Per layer, bytes that must be in VRAM: dense weights and the KV cache for the context.
  std::vector<uint64_t> layer_bytes;
  // Per layer, routed expert bytes: resident while there is room, streamed
  // beyond it. Empty = no routed experts.
  std::vector<uint64_t> layer_expert_bytes;
  // Per layer, seconds of compute for a reference chunk on a speed-1 device
  // (cost.h: layer_compute_s). Empty = unknown: stages then balance on bytes.
  std::vector<double> layer_compute;
  uint64_t embd_bytes = 0;           // token embedding: on the first stage
  uint64_t head_bytes = 0;           // output norm and head: on the last stage (a tied head still needs its copy there)
  std::vector<StageDevice> devices;  // logical devices in stage order
  LayerSplit split;
};

// One stage: device `device` holds layers [first_layer, first_layer + n_layers).
struct StagePlan {
  int32_t device = 0;
  int32_t first_layer = 0;
  int32_t n_layers = 0;
  bool has_embd = false;
  bool has_head = false;
  uint64_t fixed_bytes = 0;   // embedding and/or head held here
  uint64_t layer_bytes = 0;   // sum of its layers' layer_bytes
  uint64_t expert_bytes = 0;  // sum of its layers' expert bytes
  uint64_t reserve_bytes = 0;
  uint64_t budget = 0;
  uint64_t resident_room = 0;   // budget - reserve - fixed - layer_bytes: what resident experts may take
  uint64_t streamed_bytes = 0;  // expert bytes beyond that room: streamed by every chunk that touches all
  double compute_s = 0;         // sum of layer_compute / speed
  double stream_s = 0;          // streamed_bytes / link
  double time_s = 0;            // compute_s + stream_s: the stage's time in the model below

  int32_t end_layer() const { return first_layer + n_layers; }
  // The stage's own index of model layer il (in [first_layer, end_layer())).
  int32_t local(int32_t il) const { return il - first_layer; }
  uint64_t needed_bytes() const { return fixed_bytes + layer_bytes + reserve_bytes; }
};

struct PartitionPlan {
  std::vector<StagePlan> stages;  // in order; ranges contiguous, covering every layer once
  double max_time_s = 0;

  int32_t n_stage() const { return static_cast<int32_t>(stages.size()); }
  // The stage holding a layer; throws Error(INVALID_ARGUMENT) outside the model.
  int32_t stage_of_layer(int32_t layer) const;
};

// Splits the layers.
// - Single: one stage on devices[0]. Counts: those ranges, in device order.
// - Auto, over all devices: among the contiguous splits whose every stage
//   fits (fixed + layer bytes + reserve <= budget), the one with the smallest
//   largest stage time (compute / speed + streamed expert bytes / link: the
//   pipelined rate; with streaming and no compute it evens the streamed bytes,
//   so a smaller card gets fewer layers), then, among those within 1e-9 of
//   it, the smallest sum over stages of budget * (all bytes wanted /
//   budget)^2: bytes spread in proportion to the budgets, which decides
//   alone when nothing streams and no compute is given. Exact (dynamic programming over split
//   points); ties go to the earliest split points.
// Errors: Error(INVALID_ARGUMENT) for no layers or devices, input vectors of
// another length, a count list whose length is not the number of devices,
// with a zero, or whose sum is not n_layer, more devices than layers (auto),
// a speed or link rate <= 0; Error(OUT_OF_MEMORY) when a stage does not fit,
// naming the stage, its layers and the shortfall in GiB (auto names the split
// that comes closest).
PartitionPlan plan_partition(const PartitionInput& in);

// The stage whose idle card helps `stage` under the stream-only helper: the
// next one, the last stage getting the first's. -1 with one stage.
int32_t helper_stage(int32_t stage, int32_t n_stage);

}  // namespace strata::core
