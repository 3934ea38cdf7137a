// PlacementPlan: which routed experts live in VRAM, which stream from the pinned host arena, and the ring size.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::core {

// One routed expert of one layer.
struct ExpertRef {
  int32_t layer = 0;
  int32_t expert = 0;
  friend bool operator==(const ExpertRef&, const ExpertRef&) = default;
};

// What one device (one stage) must hold, and what it may hold. All sizes in
// bytes; the caller computes them from the model (the plan reads no tensors).
struct PlacementInput {
  // Weights that are not per layer and live on this device: the embedding on
  // the first stage, output norm and head on the last (0 when absent).
  uint64_t fixed_bytes = 0;
  // Per layer: attention, norms, router, shared experts (everything but the
  // routed experts). Its size is the number of layers this device holds.
  std::vector<uint64_t> dense_bytes;
  // [layer][expert]: the blob of one routed expert (gate + up + down). A
  // layer may have no routed experts (a dense layer): an empty row.
  std::vector<std::vector<uint64_t>> expert_bytes;
  uint64_t kv_bytes = 0;      // the KV cache for the session's context
  uint64_t prompt_bytes = 0;  // prompt buffers for the chunk size, without the ring (see stage_buffers.h)

  // Ring slots hold any blob, so a slot is the largest blob rounded up to
  // slot_align; 0 means exactly that (a bigger value is allowed, not a smaller).
  uint64_t slot_bytes = 0;
  int32_t min_slots = 3;          // one slot being read, one ready, one filling: fewer stalls the link on jitter
  int32_t ring_slots_wanted = 0;  // depth to reserve before residents (cost::choose_ring_depth); 0 = min_slots
  int32_t max_slots = 0;          // cap on the depth; 0 = two layers' worth (2 x the most experts of a layer)

  uint64_t budget = 0;  // the device's VRAM budget, already resolved (bytes)

  // Optional usage counts [layer][expert] (same shape as expert_bytes) for the
  // ranking; empty means no profile: the uniform order below.
  std::vector<std::vector<double>> profile;

  uint64_t arena_align = 256;  // host arena offsets: DMA wants >= 64; 256 keeps copy engines on their fast path
  uint64_t slot_align = 256;   // device allocations of slots and residents
  // When true every expert gets a host arena offset, the resident ones too,
  // so adaptive residency can evict an expert without re-reading the file;
  // when false (default) the arena holds only the streamed experts.
  bool arena_holds_resident = false;
};

// The decision. Flat per-expert arrays are indexed by index(layer, expert).
struct PlacementPlan {
  int32_t n_layer = 0;
  std::vector<int32_t> layer_base;  // [n_layer + 1]: experts of layer l are flat [layer_base[l], layer_base[l+1])

  // Rank of every expert, hottest first: by profile count, ties (and every
  // expert without a profile) in the uniform order, which takes expert 0 of
  // every layer, then expert 1 of every layer, ... so any prefix spreads
  // residency over the layers as evenly as their expert counts allow.
  std::vector<ExpertRef> rank;
  std::vector<uint8_t> resident;          // flat: 1 = in VRAM for the session's lifetime
  std::vector<uint64_t> resident_offset;  // flat: offset in the resident pool (slot_align), or UINT64_MAX
  std::vector<uint64_t> arena_offset;     // flat: offset in the pinned host arena (arena_align), or UINT64_MAX
  std::vector<ExpertRef> streamed;        // non-resident experts in (layer, expert) order: the long-chunk ring order

  int32_t ring_slots = 0;   // 0 when nothing streams, else in [min_slots, max_slots]
  uint64_t slot_bytes = 0;  // one slot (aligned); the ring takes ring_slots * slot_bytes

  // Bytes by category. Device: fixed + dense + kv + prompt + ring + resident
  // = device_bytes <= budget. Host: arena_bytes (pinned, with alignment gaps).
  uint64_t fixed_bytes = 0;
  uint64_t dense_bytes = 0;
  uint64_t kv_bytes = 0;
  uint64_t prompt_bytes = 0;
  uint64_t ring_bytes = 0;
  uint64_t resident_bytes = 0;  // the resident pool, alignment gaps included
  uint64_t streamed_bytes = 0;  // sum of the streamed blobs (what a stream-all chunk moves)
  uint64_t arena_bytes = 0;
  uint64_t device_bytes = 0;
  uint64_t budget = 0;

  int32_t n_experts(int layer) const { return layer_base[layer + 1] - layer_base[layer]; }
  int32_t index(int layer, int expert) const { return layer_base[layer] + expert; }
  bool is_resident(int layer, int expert) const { return resident[index(layer, expert)] != 0; }
  int32_t n_resident() const;
  // For one layer: true where the expert streams (what the ring and the peer share take).
  std::vector<bool> streamed_mask(int layer) const;
};

// Places experts on one device. Order of claims on the budget: fixed, dense,
// KV, prompt buffers; then, unless every expert fits, ring_slots_wanted ring
// slots (at least min_slots, at most max_slots, as many as fit); then experts
// in rank order, each taken when it still fits (a big blob that does not fit
// lets a smaller later one in). What is left after that first fit is smaller
// than any streamed blob, so smaller than a slot: deeper rings come from
// ring_slots_wanted, which the cost model picks, never from leftovers.
//
// Throws Error(STRATA_ERR_OUT_OF_MEMORY) before anything is allocated when
// fixed + dense + KV + prompt + min_slots slots exceed the budget, naming each
// part and the shortfall in GiB; Error(STRATA_ERR_INVALID_ARGUMENT) for a
// profile of another shape, a zero-byte blob, slot_bytes below the largest
// blob, min_slots < 1, max_slots in (0, min_slots), a negative count or an
// alignment that is not a power of two.
PlacementPlan plan_placement(const PlacementInput& in);

}  // namespace strata::core
