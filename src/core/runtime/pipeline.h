// Pipeline: a session's chunks through the model's stages, residual rows handed stage to stage over route memory.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/runtime/executor.h"

namespace strata::core {

class Model;
struct SessionOptions;

// One executor per stage (each with its own KV cache for its layers) and
// the route memory between them. With one stage it runs the chunks one after
// the other on the calling thread. With several and options.pipeline set,
// every stage runs on its own thread and stage i works on chunk c + 1 while
// stage i + 1 works on chunk c; each route has two slots, so a stage may run
// at most two chunks ahead of the next. Results do not depend on
// pipelining: each stage sees the same rows in the same order, and routes
// carry F32 rows unchanged.
class Pipeline {
 public:
  Pipeline(const Model& model, const SessionOptions& options);
  ~Pipeline();

  struct Chunk {
    std::span<const int32_t> tokens;
    int32_t pos0 = 0;
    int32_t first_logit_row = 0;  // logits for rows [first_logit_row, T)
  };
  // Receives each chunk's logits ((T - first_logit_row) * n_vocab floats),
  // in chunk order, on the thread that called run(). May throw to stop.
  using Sink = std::function<void(size_t chunk, std::span<const float> logits)>;

  // Runs the chunks. Stage times add into `times` (so with pipelining the
  // phases sum to more than the wall time). On an error in any stage or the
  // sink, the other stages stop after their current chunk and the first
  // error is rethrown; chunks the sink has received stay in the KV caches.
  void run(std::span<const Chunk> chunks, const Sink& sink, PhaseTimes& times, uint64_t* expert_counts,
           const std::atomic<bool>& cancel);

  uint64_t kv_bytes() const;
  uint64_t device_bytes() const;
  int32_t n_stage() const { return static_cast<int32_t>(executors_.size()); }

 private:
  StageChunk stage_chunk(int32_t stage, const Chunk& chunk, size_t slot);
  void run_sequential(std::span<const Chunk> chunks, const Sink& sink, PhaseTimes& times, uint64_t* expert_counts,
                      const std::atomic<bool>& cancel);
  void run_pipelined(std::span<const Chunk> chunks, const Sink& sink, PhaseTimes& times, uint64_t* expert_counts,
                     const std::atomic<bool>& cancel);
  float* logits_slot(size_t slot, int64_t rows);
  // The stage helper's share for these chunks: cost.h's rule for a prompt of
  // one chunk under a split, 0 otherwise (and for decode-sized chunks).
  double helper_share(std::span<const Chunk> chunks) const;
  static constexpr int64_t kMaxHelpedVectorRows = 8;

  struct HelperOptions {
    bool enabled = true;
    double fixed_share = -1;
    bool exact = false;
  };

  int32_t n_vocab_ = 0;
  bool pipeline_ = true;
  HelperOptions helper_;
  std::vector<std::unique_ptr<Executor>> executors_;
  // routes_[s][slot]: rows from stage s to stage s + 1.
  std::vector<std::array<std::unique_ptr<RouteBuffer>, 2>> routes_;
  std::array<std::vector<float>, 2> logits_;
};

}  // namespace strata::core
