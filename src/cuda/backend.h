// The CUDA backend's weights: one stage's tensors in device memory, and the streamed experts' placement and arena.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "core/model/tensors.h"
#include "core/plan/cost.h"
#include "core/plan/expert_store.h"
#include "core/quant/quant.h"
#include "cuda/runtime/memory.h"

namespace strata::cuda {

// Decode's CPU pool (the CPU's share of streamed experts) polls this long for
// its next dispatch before sleeping: longer than a layer's step, so the pool
// stays awake through a decode (a wake-up of every worker costs tens of us).
inline constexpr int kCpuDecodeSpinUs = 2000;

// Decode's CPU pool runs on a thread of its own (core::Background) while the
// executor's thread queues the GPU's work: one thread fewer than the model's.
inline int decode_cpu_threads(int n_threads) { return n_threads > 1 ? n_threads - 1 : 1; }

// A matrix (or a 3-D expert tensor) in device memory, as GGUF lays it out.
struct DeviceTensor {
  core::GgmlType type = core::GgmlType::F32;
  const void* data = nullptr;
  int64_t n_in = 0;      // row length
  int64_t n_out = 0;     // rows (per expert for expert tensors)
  size_t stride = 0;     // bytes from one expert to the next
};

// A layer's tensors in VRAM by role (core::TensorRole), as the model's LayerWeights has them; a vector role
// (a norm weight) holds F32 values whatever its type in the file.
struct DeviceLayer {
  std::array<DeviceTensor, core::kTensorRoles> tensors;
  // attn_q, attn_k and attn_v as one matrix of their rows, when they lie back
  // to back in VRAM with one type and row length (data == nullptr otherwise):
  // a decode row's Q, K and V in one launch.
  DeviceTensor wqkv;
  // Streaming only (the expert tensors then have no data): each expert's blob
  // in VRAM (core::BlobLayout), nullptr for a streamed one.
  std::vector<const uint8_t*> blobs;

  const DeviceTensor& operator[](core::TensorRole r) const { return tensors[static_cast<size_t>(r)]; }
  DeviceTensor& operator[](core::TensorRole r) { return tensors[static_cast<size_t>(r)]; }
  // A vector role's F32 values; nullptr when the layer lacks it.
  const float* f32(core::TensorRole r) const { return static_cast<const float*>((*this)[r].data); }
};

// One stage's weights: layers[i] is model layer plan.first_layer + i; the
// embedding and head are empty (data == nullptr) on stages without them.
struct DeviceWeights {
  DeviceTensor token_embd, output;
  const float* output_norm = nullptr;
  std::vector<DeviceLayer> layers;
  uint64_t bytes = 0;
  // Set when some experts do not fit the budget: their placement, and the
  // pinned host arena the ring streams them from.
  std::unique_ptr<core::StageExperts> experts;
  HostBuffer arena;
  double link_GBps = 0;  // pinned host-to-device copies, measured at load
  core::CpuDecodeRate cpu;  // the CPU's cost of decode rows through streamed experts, measured at load
  uint64_t generation = 0;  // residency changes so far (adaptive residency): executors re-read `blobs` when it moves
  int peer_device = -1;     // the model's peer_device (a CUDA ordinal): sessions stream a share of the experts there
};

}  // namespace strata::cuda
