// A loaded model: the mapped GGUF file, its configuration, weights and tokenizer. Immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/model/arch.h"
#include "core/model/weights.h"
#include "core/plan/partition.h"
#include "core/runtime/devices.h"
#include "core/runtime/executor.h"
#include "core/text/tokenizer.h"

namespace strata::core {

// Returns false to stop a long operation.
using ProgressFn = std::function<bool(uint64_t done, uint64_t total)>;

struct ModelOptions {
  std::string devices;      // "", "cpu", "0", "0,1", "0,0"
  std::string layer_split;  // "", "auto", "24,24"
  uint64_t vram_budget = 0;
  // Streamed experts swapped in for resident ones per request (adaptive
  // residency, residency.h); 0 disables it.
  int32_t adapt_swaps = 16;
  // Routed rows per (layer, expert), flat [layer * n_expert + e] (e.g. a
  // session's expert_counts from a representative run): the placement makes
  // the most-used experts resident first. Empty: the uniform order. Read
  // during load() only, after its length is checked against the model.
  std::span<const uint64_t> expert_profile;
  int32_t n_threads = 0;  // 0: all hardware threads
  // Index into devices of a card that takes a share of the one stage's streamed
  // experts in stream-all chunks (SessionOptions::peer_*); -1: none.
  int32_t peer_device = -1;
  ProgressFn progress;
};

// One stage of the model: a contiguous range of layers on one logical device,
// with the backend that holds its weights there.
struct Stage {
  StagePlan plan;
  LogicalDevice device;
  std::unique_ptr<Backend> backend;
};

class Model {
 public:
  // Maps and validates the file, reads the architecture, binds the weights,
  // builds the tokenizer and splits the layers into stages over the logical
  // devices (one stage unless options.layer_split says otherwise), each
  // stage's weights held by its device's backend; throws Error on any problem.
  static std::shared_ptr<const Model> load(const std::string& path, const ModelOptions& options);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::vector<LogicalDevice>& devices() const { return devices_; }
  int32_t n_threads() const { return n_threads_; }
  // In layer order: stage 0 embeds the tokens, the last holds the output head.
  const std::vector<Stage>& stages() const { return stages_; }
  const char* backend_name() const { return stages_.front().backend->name(); }
  // Device memory all stages' weights take; 0 on the CPU.
  uint64_t device_bytes() const;
  // Over all stages; link_GBps the slowest streaming stage's, chunk the
  // smallest planned chunk of a streaming stage (of any stage when none
  // streams): the sessions' default chunk.
  ExpertResidency residency() const;
  // Adaptive residency between requests: with no session of the model
  // running a prompt or a decode step (else it does nothing and returns
  // false), passes the rows routed since the caller's last request to every
  // stage (Backend::adapt). Sessions call it before each prompt.
  bool adapt(std::span<const uint64_t> routed) const;
  // Held (shared) by a session while it runs chunks: adapt() waits for none.
  std::shared_mutex& residency_mutex() const { return residency_mutex_; }

  // Makes route memory (executor.h) every stage can read and write: from the
  // first stage on a GPU when there is one.
  std::unique_ptr<RouteBuffer> new_route(size_t floats) const;

  // Special ids; -1 when the vocabulary has none.
  int32_t eot_token() const { return eot_; }

 private:
  Model(GgufFile file) : file_(std::move(file)) {}

  GgufFile file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<LogicalDevice> devices_;
  int32_t n_threads_ = 1;
  int32_t eot_ = -1;
  int32_t adapt_swaps_ = 0;
  mutable std::shared_mutex residency_mutex_;
  std::vector<Stage> stages_;  // last: destroyed first, their backends refer to the members above
};

}  // namespace strata::core
