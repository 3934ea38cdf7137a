// One conversation: the context (KV cache in the executor), prompt in chunks, decode, stats.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/model/model.h"
#include "core/runtime/executor.h"
#include "core/runtime/kv_cache.h"
#include "core/runtime/pipeline.h"

namespace strata::core {

struct SessionOptions {
  int32_t n_ctx = 0;  // 0: min(model's training context, 4096)
  KvType kv_type = KvType::F16;
  int32_t chunk_size = 0;  // 0: the model's (Model::residency: 8192 where the buffers fit, else 2048); at most n_ctx
  bool pipeline = true;    // with several stages, overlap chunks across stages (pipeline.h)
  // Decode with streamed experts on a GPU: the share of a step's routed
  // streamed experts computed on the CPU from the host arena while the GPU
  // streams the rest; < 0: a count per step from the cost model
  // (decode_cpu_experts: link and CPU rates measured at load).
  double decode_cpu_share = -1;
  // With the model's peer_device: the peer's share of each stream-all
  // chunk's streamed experts (< 0: the cost model's), F32 transfers instead of
  // FP16, host-route pieces (0 off, 1 = 8, K; STRATA_PF_PEER_PIECES overrides).
  double peer_share = -1;
  bool peer_f32 = false;
  int32_t peer_pieces = 0;
  // Under a layer split, a prompt of one chunk lets each stage's idle
  // neighbour stream and compute a share of its streamed experts
  // (STRATA_PREFILL_HELP=0 turns it off). helper_share < 0: the rule
  // min(0.45, 0.5 - T / 16384), off below 0.3 (STRATA_PREFILL_HELP_FRAC fixes
  // it). helper_exact: bit-identical to no helper (PeerTerms::exact).
  bool helper = true;
  double helper_share = -1;
  bool helper_exact = false;
  ProgressFn progress;     // tokens of the prompt done
};

struct SessionStats {
  int64_t prompt_tokens = 0;
  double prompt_ms = 0;
  int64_t decode_tokens = 0;
  double decode_ms = 0;
  PhaseTimes phases;         // of the last prompt
  PhaseTimes decode_phases;  // of the decode steps since, summed (a step replayed as one CUDA graph adds none)
};

// Receives the logits of every prompt position; returns false to stop.
using LogitsFn = std::function<bool(int32_t position, std::span<const float> logits)>;

class Session {
 public:
  Session(std::shared_ptr<const Model> model, SessionOptions options);

  // Appends tokens and runs them in chunks; the last token's logits become
  // current. Throws Error: CONTEXT_FULL (nothing appended), INVALID_ARGUMENT,
  // ABORTED (finished chunks stay), STATE (after a failure; reset() first).
  void prompt(std::span<const int32_t> tokens, const LogitsFn& each = {});
  // Appends one token; returns the new logits.
  std::span<const float> decode(int32_t token);

  std::span<const float> logits() const;
  int32_t n_past() const { return n_past_; }
  int32_t n_ctx() const { return options_.n_ctx; }
  void reset();
  void cancel() { cancel_.store(true); }

  const SessionStats& stats() const { return stats_; }
  // The options as resolved at construction (n_ctx, chunk_size filled in).
  const SessionOptions& options() const { return options_; }
  uint64_t device_bytes() const { return pipeline_->device_bytes(); }
  const std::vector<uint64_t>& expert_counts() const { return expert_counts_; }
  const Model& model() const { return *model_; }

 private:
  void check_tokens(std::span<const int32_t> tokens) const;
  void run_guarded(const std::function<void()>& body);

  std::shared_ptr<const Model> model_;
  SessionOptions options_;
  std::unique_ptr<Pipeline> pipeline_;
  std::vector<float> logits_;  // n_vocab, or empty when there are none
  std::vector<float> next_logits_;  // decode writes here first: a failed step keeps logits_
  std::vector<Pipeline::Chunk> chunks_;
  std::vector<uint64_t> expert_counts_;
  std::vector<uint64_t> adapted_counts_;  // expert_counts_ at the last adaptive-residency call
  int32_t n_past_ = 0;
  bool failed_ = false;
  std::atomic<bool> cancel_{false};
  SessionStats stats_;
};

}  // namespace strata::core
