// The interface a backend implements to run a model's layers for a session.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

namespace strata::core {

class Model;
struct SessionOptions;

// Wall times of a prompt's phases, summed over layers and chunks.
struct PhaseTimes {
  double attention_ms = 0, routing_ms = 0, grouping_ms = 0, stream_wait_ms = 0, expert_ms = 0, combine_ms = 0,
         transfer_ms = 0, other_ms = 0;
  uint64_t bytes_streamed = 0;
};

// One per session: owns the KV cache and the scratch of one backend.
class Executor {
 public:
  virtual ~Executor() = default;

  // Runs tokens at positions [pos0, pos0 + n) through every layer and stores
  // their keys and values. Writes n_vocab logits for each row r in
  // [first_logit_row, n) to logits + (r - first_logit_row) * n_vocab.
  // Adds each routed (layer, expert) to expert_counts[layer * n_expert + e].
  // Checks cancel between layers and throws Error(STRATA_ABORTED) when set.
  virtual void forward(std::span<const int32_t> tokens, int32_t pos0, int32_t first_logit_row, float* logits,
                       PhaseTimes& times, uint64_t* expert_counts, const std::atomic<bool>& cancel) = 0;

  // Bytes of KV cache held.
  virtual uint64_t kv_bytes() const = 0;
  // Device memory this executor holds (KV cache and scratch); 0 on the CPU.
  virtual uint64_t device_bytes() const { return 0; }
};

// A backend's per-model state (e.g. weights uploaded to a device); makes one
// executor per session. Owned by the Model, which outlives it.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual std::unique_ptr<Executor> new_executor(const SessionOptions& options) const = 0;
  // Device memory the model's weights take; 0 on the CPU.
  virtual uint64_t device_bytes() const { return 0; }
};


}  // namespace strata::core
