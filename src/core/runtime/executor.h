// The interfaces a backend implements: a stage of the model on one logical device, and its per-session executor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace strata::core {

class Model;
struct SessionOptions;

// Wall times of a prompt's phases, summed over layers, chunks and stages.
// transfer_ms is the stage hand-off (writing and reading the route buffers).
struct PhaseTimes {
  double attention_ms = 0, routing_ms = 0, grouping_ms = 0, stream_wait_ms = 0, expert_ms = 0, combine_ms = 0,
         transfer_ms = 0, other_ms = 0;
  uint64_t bytes_streamed = 0;
  // Chunks shared with a peer or a stage helper: the largest share, and the
  // cost model's times of those chunks alone and shared with a second card
  // of the same kind on its own link (what two cards would gain).
  double peer_share = 0, peer_predicted_alone_ms = 0, peer_predicted_ms = 0;

  PhaseTimes& operator+=(const PhaseTimes& o);
  // Records a shared chunk's share and the cost model's times for it.
  void add_peer_prediction(double share, double alone_s, double shared_s);
};

// One chunk as one stage sees it.
struct StageChunk {
  std::span<const int32_t> tokens;  // the chunk's ids (the first stage embeds them)
  int32_t pos0 = 0;                 // position of tokens[0]
  // Residual rows [T][n_embd] F32 from the previous stage, in route memory
  // (Backend::new_route); null on the first stage.
  const float* in = nullptr;
  // Where the stage leaves its residual rows for the next stage, in route
  // memory; null on the last stage.
  float* out = nullptr;
  // Last stage only: n_vocab logits of each row r in [first_logit_row, T) go
  // to logits + (r - first_logit_row) * n_vocab.
  int32_t first_logit_row = 0;
  float* logits = nullptr;
};

// How a chunk's streamed experts are shared with a peer: a `peer_device`
// card that holds no layers, or an idle stage's card as a stream-only helper.
// The peer streams its share of a layer's streamed experts over its own link
// into its own ring, computes their rows and returns them; only chunks that
// stream every expert (RingMode::StreamAll) are shared. Transfers take the
// host route: mapped pinned memory read by copy kernels.
struct PeerTerms {
  double share = 0;     // the peer's fraction of the streamed experts, in [0, 1]
  bool f32 = false;     // activations and sums cross as F32 (else FP16)
  int32_t pieces = 0;   // host-route transfers in pieces (prefill/pieces.h); 0: one transfer each way
  // The peer returns its rows (F32) instead of per-token sums and the combine
  // is the usual slot-order one: the output equals the unshared run bit for
  // bit, for k / 2 times the bytes of FP16 sums (activations cross as F32).
  bool exact = false;
};

// One per session and stage: owns the stage's KV cache and scratch.
class Executor {
 public:
  virtual ~Executor() = default;

  // Runs the chunk through the stage's layers, storing their keys and values,
  // and returns when `out` (or `logits`) is written. Adds each routed
  // (layer, expert) of its layers to expert_counts[layer * n_expert + e].
  // Checks cancel between layers and throws Error(STRATA_ABORTED) when set.
  virtual void forward(const StageChunk& chunk, PhaseTimes& times, uint64_t* expert_counts,
                       const std::atomic<bool>& cancel) = 0;

  // Stream-only stage helper: for the following forward() calls, until
  // cleared with nullptr, `helper` (another stage's executor of the same
  // session, idle while this one runs) takes terms.share of this stage's
  // streamed experts with its own ring and prompt buffers: no memory of its
  // own. Returns false when the pair cannot share (another backend, a helper
  // stage without a ring, slots smaller than this stage's blobs); chunks then
  // run alone.
  virtual bool set_helper(Executor* helper, const PeerTerms& terms) {
    (void)helper, (void)terms;
    return false;
  }

  // Bytes of KV cache held.
  virtual uint64_t kv_bytes() const = 0;
  // Device memory this executor holds (KV cache and scratch); 0 on the CPU.
  virtual uint64_t device_bytes() const { return 0; }
};

// Host memory that carries residual rows from one stage to the next: mapped
// pinned memory on CUDA (read and written by copy kernels on the devices),
// plain memory on the CPU.
class RouteBuffer {
 public:
  virtual ~RouteBuffer() = default;
  virtual float* data() = 0;
};

// How a stage holds its routed experts.
struct ExpertResidency {
  int32_t resident = 0;         // experts in device memory
  int32_t streamed = 0;         // experts in the host arena, through the ring
  uint64_t streamed_bytes = 0;  // their blobs: what a stream-all chunk moves
  int32_t ring_slots = 0;       // per session
  double link_GBps = 0;         // pinned host-to-device rate measured at load (0 when nothing streams)
  int32_t chunk = 2048;         // the prompt chunk the stage's buffers were planned for (the sessions' default)
};

// A backend's per-model state for one stage (e.g. its layers' weights
// uploaded to a device); makes one executor per session. Owned by the Model,
// which outlives it.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual std::unique_ptr<Executor> new_executor(const SessionOptions& options) const = 0;
  // Device memory the stage's weights take; 0 on the CPU.
  virtual uint64_t device_bytes() const { return 0; }
  virtual ExpertResidency residency() const = 0;
  // Between requests, with no executor of the model running: adds the rows
  // routed since the last call (routed[layer * n_expert + e], all of the
  // model's layers) to the decayed usage of the stage's experts and swaps up
  // to max_swaps of them (residency.h). Executors see the change at their next
  // forward (generation()). No-op where nothing streams.
  virtual void adapt(std::span<const uint64_t> routed, int32_t max_swaps) { (void)routed, (void)max_swaps; }
  // Counts the adapt() calls that changed the residency.
  virtual uint64_t generation() const { return 0; }
  // Route memory of `floats` elements that this backend's devices and every
  // other stage's can read and write.
  virtual std::unique_ptr<RouteBuffer> new_route(size_t floats) const;
};

}  // namespace strata::core
