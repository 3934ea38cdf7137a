// Where a stage's routed experts live: one expert's packed blob (gate | up | down), the stage's placement from its
// budget, and the host arena of the streamed blobs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/model/arch.h"
#include "core/model/model.h"
#include "core/model/weights.h"
#include "core/plan/cost.h"
#include "core/plan/partition.h"
#include "core/plan/placement.h"
#include "core/plan/residency.h"
#include "core/runtime/devices.h"
#include "core/runtime/executor.h"

namespace strata::core {

// Offsets of one expert's three matrices inside its blob, each at a
// kBlobAlign boundary so every row starts where the kernels expect; the same
// for every expert of a layer.
struct BlobLayout {
  uint64_t gate = 0, up = 0, down = 0;
  uint64_t bytes = 0;  // the whole blob (aligned)
};
inline constexpr uint64_t kBlobAlign = 256;

BlobLayout blob_layout(const LayerWeights& layer);
// Copies expert e's gate, up and down matrices from the mapping into dst
// (layout.bytes bytes; alignment gaps are zeroed).
void pack_blob(const LayerWeights& layer, const BlobLayout& layout, int32_t expert, uint8_t* dst);

// Default prompt chunks: with every expert resident a chunk's cost is
// compute, and the GEMMs and the attention run faster on longer chunks
// (8192 tokens as one chunk against four of 2048, as `strata bench` measures them),
// so a model of one stage sizes its buffers for 8192 tokens where every
// expert still fits, else for 2048 where that keeps them all resident. When experts stream,
// each chunk moves every streamed expert once, so chunks are as long as the
// buffers allow up to 8192 tokens (a prompt of 8192 tokens streams once,
// not four times).
inline constexpr int32_t kResidentChunk = 2048;
inline constexpr int32_t kStreamingChunk = 8192;

// Inputs of a stage's placement that are not in the model.
struct StageMemory {
  uint64_t budget = 0;              // the device's budget for this stage (bytes)
  int32_t chunk = kResidentChunk;   // prompt chunk the buffers are sized for
  int32_t n_ctx = 0;                // context the KV cache is sized for; 0 = min(n_ctx_train, 4096)
  bool adaptive = false;            // residency adapts: the arena holds every expert, the resident ones too
  // Routed rows per (layer, expert) of the whole model, flat; empty = none:
  // residents in the uniform order.
  std::span<const uint64_t> profile;
  // The prompt buffers include the GPU's F16 copy of the largest dense matrix
  // and cuBLAS's workspace (stage_buffers.h: dense_f16_bytes); a CPU stage has none.
  bool dense_f16 = true;
};

// What a backend's placement takes from the model options.
struct ExpertOptions {
  bool adaptive = false;
  std::span<const uint64_t> profile;
  // The model's peer_device (of the stage's kind): sessions stream a share of
  // the stage's experts through a ring on it.
  std::optional<LogicalDevice> peer;
  // A model of one stage: where every expert fits, buffers for long chunks.
  // With several stages, chunks pipeline through them (stage i runs chunk
  // c + 1 while stage i + 1 runs c), so resident stages keep short ones.
  bool single_stage = true;
  // StageMemory::dense_f16 of the stage's placements (the CPU backend clears it).
  bool dense_f16 = true;
};

// A stage's experts as placed. Layers are the stage's (0 = stage.first_layer).
struct StageExperts {
  StagePlan stage;
  int32_t chunk = kResidentChunk;  // the prompt chunk its buffers were sized for
  PlacementPlan plan;
  std::vector<BlobLayout> layouts;          // per layer
  std::vector<std::vector<bool>> streamed;  // per layer: true where the expert streams
  // Adaptive residency's decayed routed rows per flat expert index: it starts
  // from the profile's counts where one was given (decayed like any usage at
  // each request), so the first requests do not undo what the profile knew.
  std::vector<double> usage;

  bool streams() const { return plan.ring_slots > 0; }
  uint64_t arena_offset(int32_t layer, int32_t expert) const { return plan.arena_offset[plan.index(layer, expert)]; }
  // Blob bytes per flat expert index (residency.h's sizes).
  std::vector<uint64_t> blob_bytes() const;
  // Applies adaptive-residency swaps to the plan and the streamed masks.
  void apply(std::span<const ExpertSwap> swaps);
};

// The experts of one stage's layers: dense weights, KV (F16) and prompt
// buffers first, a ring as deep as the cost model finds useful for a
// stream-all chunk, then resident experts in the uniform order. Errors as
// plan_placement (over budget: Error(OUT_OF_MEMORY) naming the parts).
StageExperts place_stage_experts(const Model& model, const StagePlan& stage, const StageMemory& memory);

// The placement a backend uses: sized for kStreamingChunk when that keeps
// every expert resident (single_stage only), else for kResidentChunk when
// that does; when both
// stream experts, for kStreamingChunk unless its bigger buffers do not fit
// the budget (then kResidentChunk). Errors as place_stage_experts.
StageExperts place_for_default_chunk(const Model& model, const StagePlan& stage, uint64_t budget,
                                     const ExpertOptions& options);

// The smallest budget at which the stage runs with every expert streamed
// through a ring of n_slots slots: its dense part, KV and prompt buffers (as
// place_stage_experts counts them) plus the slots.
uint64_t all_streamed_budget(const Model& model, const StagePlan& stage, int32_t n_slots, const StageMemory& memory);

// Packs every blob with an arena offset (the streamed ones; all when
// adaptive) into `arena` (plan.arena_bytes bytes), reporting bytes done
// through progress (which may stop it: Error(ABORTED)).
void fill_arena(const Model& model, const StageExperts& experts, uint8_t* arena, const ProgressFn& progress);

// Where the CPU finds each expert's matrices in an arena: [layer * n_expert +
// expert] of the gate, up and down pointer tables (cpu::ExpertTensor::ptrs),
// null for an expert without an arena copy.
struct ArenaPointers {
  std::vector<const uint8_t*> gate, up, down;
};
ArenaPointers arena_pointers(const StageExperts& x, const uint8_t* arena);

// The largest blob of the stage's layers: what a lent slot must hold.
uint64_t max_blob_bytes(const StageExperts& x);

// The cost model's view of a stage sharing a chunk of T tokens with a peer
// (cost.h: choose_peer_share): the stage's streamed experts per layer, both
// cards at the given link rate (0: cost.h's defaults) and default compute
// rates, the host route with the terms' value size and pieces.
PeerSetup peer_setup(const Model& model, const StageExperts& x, int64_t tokens, int64_t ctx_start,
                     const PeerTerms& terms, double link_GBps);

}  // namespace strata::core
