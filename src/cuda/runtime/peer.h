// The peer share on CUDA: a peer card (a peer_device, or an idle stage's card as a stream-only helper) streams and
// computes part of a stage's streamed experts; activations, tables and its sums cross by the host route.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/plan/expert_store.h"
#include "core/runtime/executor.h"
#include "cuda/backend.h"
#include "cuda/moe/moe_gemm.cuh"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/ring.h"
#include "cuda/runtime/stream.h"
#include "prefill/peer_share.h"
#include "prefill/row_table.h"

namespace strata::cuda {

// What the peer computes with, on its device: owned by a PeerStorage (a
// peer_device) or lent by an idle stage's executor (a helper: its own
// stream, ring and prompt buffers, so no memory of its own).
struct PeerScratch {
  int device = -1;
  cudaStream_t stream = nullptr;
  DeviceRing* ring = nullptr;
  int32_t* next_slot = nullptr;  // where the ring's next schedule starts
  int64_t chunk = 0;             // tokens the buffers hold
  float* xn = nullptr;           // [chunk][n_embd]: the activations as they land
  uint16_t* xh = nullptr;        // their F16 copy (what quantized gate/up read)
  float* w = nullptr;            // [chunk][k]: router weights
  MoeScratch moe;                // tiles, h, hh
  float* y = nullptr;            // [chunk * k][n_embd]: rows
  int32_t* table = nullptr;      // the host table's copy (PeerShare::table_ints)
  size_t table_ints = 0;
};

// The scratch of a peer_device, owned: buffers like an executor's prompt
// buffers, a stream and a ring of n_slots.
class PeerStorage {
 public:
  PeerStorage(int device, const core::ModelConfig& c, int64_t chunk, int32_t n_slots, uint64_t slot_bytes);
  PeerScratch scratch();
  uint64_t device_bytes() const;

 private:
  int device_;
  int64_t chunk_;
  Stream stream_;
  DeviceRing ring_;
  int32_t next_slot_ = 0;
  DeviceBuffer xn_, xh_, w_, tiles_, tile_count_, h_, hh_, y_, table_;
  size_t table_ints_ = 0;
};

// The primary's side of the host route and the order of a shared layer: per
// layer, after the grouping, the tables and router weights go to mapped host
// memory and the peer's work is queued on its stream
// (activations read by copy kernels, its experts through its ring, its sums
// or rows written back to mapped memory); the primary's combine adds them.
// With pieces the activations leave before the router and the sums come
// back piece by piece. Made once per executor; begin() starts a chunk.
class PeerShare {
 public:
  PeerShare(int device, const core::ModelConfig& c, int64_t chunk);
  ~PeerShare();

  // Ints a peer's table holds for a chunk of T tokens: pointer tables,
  // offsets, entries, the peer's rows, its expert list, and the row flags.
  static size_t table_ints(const core::ModelConfig& c, int64_t T);

  // Starts a stream-all chunk of T tokens: the peer's ring starts on
  // `peer_lists` (split_stream_all) from the stage's arena.
  void begin(const PeerScratch& peer, const core::PeerTerms& terms, const core::StageExperts& x, const uint8_t* arena,
             std::vector<std::vector<int32_t>> peer_lists, int64_t T);
  // With pieces: the normed activations leave now, before the router.
  void send_early(const float* xn, cudaStream_t s);
  // Layer il (of the stage) after its grouping: the table, the weights and
  // (without pieces) the activations cross; the peer's work is queued.
  void layer(int32_t il, const DeviceLayer& l, const prefill::RowTable& table, const prefill::PeerSharePlan& plan,
             const float* xn, const float* weights, cudaStream_t s);
  // x = x + (own rows' slot-order sum + the peer's sums), or with exact the
  // peer's rows into y and the usual combine. `scratch` is [T][n_embd]
  // device memory free until the combine (the attention output buffer).
  void combine(float* y, const float* weights, float* scratch, float* x, cudaStream_t s);
  // The end of the chunk: waits for the peer's stream.
  void end();
  uint64_t bytes_streamed() const { return peer_.ring ? peer_.ring->bytes_enqueued() - streamed0_ : 0; }

 private:
  int pieces() const { return terms_.pieces > 0 && !terms_.exact ? terms_.pieces : 1; }

  int device_;
  const core::ModelConfig& c_;
  int64_t chunk_;
  PeerScratch peer_;
  core::PeerTerms terms_;
  int64_t T_ = 0;
  uint64_t streamed0_ = 0;
  const core::StageExperts* x_ = nullptr;
  prefill::RingSchedule schedule_;
  Stream x_stream_, h_stream_;  // the primary's: early activations, sums piece by piece
  HostBuffer h_x_, h_sums_, h_tab_, h_rows_;
  std::vector<Event> ev_piece_, ev_sum_;  // primary's x pieces out, peer's sum pieces out
  Event ev_norm_, ev_sent_, ev_done_, ev_o_, ev_h_;
  int32_t n_peer_rows_ = 0;
  const int32_t* rows_dev_ = nullptr;   // the peer's rows, in mapped memory
  const uint8_t* flags_dev_ = nullptr;  // the row flags, in mapped memory
};

}  // namespace strata::cuda
