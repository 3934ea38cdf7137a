// Pipeline: the stages of a session run chunk after chunk, sequentially or overlapped on one thread per stage.
#include "core/runtime/pipeline.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "core/model/model.h"
#include "core/plan/cost.h"
#include "core/plan/partition.h"
#include "core/runtime/session.h"

namespace strata::core {

Pipeline::Pipeline(const Model& model, const SessionOptions& options)
    : n_vocab_(model.config().n_vocab),
      pipeline_(options.pipeline),
      helper_{options.helper, options.helper_share, options.helper_exact} {
  const std::vector<Stage>& stages = model.stages();
  for (const Stage& s : stages) executors_.push_back(s.backend->new_executor(options));
  const size_t route_floats = static_cast<size_t>(options.chunk_size) * model.config().n_embd;
  for (size_t s = 0; s + 1 < stages.size(); ++s) routes_.push_back({model.new_route(route_floats), model.new_route(route_floats)});
}

Pipeline::~Pipeline() = default;

uint64_t Pipeline::kv_bytes() const {
  uint64_t n = 0;
  for (const auto& e : executors_) n += e->kv_bytes();
  return n;
}

uint64_t Pipeline::device_bytes() const {
  uint64_t n = 0;
  for (const auto& e : executors_) n += e->device_bytes();
  return n;
}

float* Pipeline::logits_slot(size_t slot, int64_t rows) {
  std::vector<float>& v = logits_[slot];
  const size_t need = static_cast<size_t>(rows) * n_vocab_;
  if (v.size() < need) v.resize(need);
  return v.data();
}

StageChunk Pipeline::stage_chunk(int32_t stage, const Chunk& chunk, size_t slot) {
  StageChunk sc;
  sc.tokens = chunk.tokens;
  sc.pos0 = chunk.pos0;
  if (stage > 0) sc.in = routes_[stage - 1][slot]->data();
  if (stage + 1 < n_stage()) {
    sc.out = routes_[stage][slot]->data();
  } else {
    sc.first_logit_row = chunk.first_logit_row;
    sc.logits = logits_slot(slot, static_cast<int64_t>(chunk.tokens.size()) - chunk.first_logit_row);
  }
  return sc;
}

void Pipeline::run(std::span<const Chunk> chunks, const Sink& sink, PhaseTimes& times, uint64_t* expert_counts,
                   const std::atomic<bool>& cancel) {
  if (pipeline_ && n_stage() > 1 && chunks.size() > 1)
    run_pipelined(chunks, sink, times, expert_counts, cancel);
  else
    run_sequential(chunks, sink, times, expert_counts, cancel);
}

double Pipeline::helper_share(std::span<const Chunk> chunks) const {
  if (chunks.size() != 1 || n_stage() < 2) return 0;
  const auto T = static_cast<int64_t>(chunks[0].tokens.size());
  if (T <= kMaxHelpedVectorRows) return 0;  // decode steps stay as they are
  return core::helper_share(T, helper_.enabled, helper_.fixed_share, nullptr);
}

void Pipeline::run_sequential(std::span<const Chunk> chunks, const Sink& sink, PhaseTimes& times,
                              uint64_t* expert_counts, const std::atomic<bool>& cancel) {
  // A prompt of one chunk runs the stages one after the other: each stage's
  // idle neighbour helps it as a stream-only helper (helper_share).
  PeerTerms terms;
  terms.share = helper_share(chunks);
  terms.exact = helper_.exact;
  terms.f32 = helper_.exact;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (int32_t s = 0; s < n_stage(); ++s) {
      Executor& e = *executors_[s];
      const bool helped = terms.share > 0 && e.set_helper(executors_[helper_stage(s, n_stage())].get(), terms);
      try {
        e.forward(stage_chunk(s, chunks[c], 0), times, expert_counts, cancel);
      } catch (...) {
        if (helped) e.set_helper(nullptr, {});
        throw;
      }
      if (helped) e.set_helper(nullptr, {});
    }
    const Chunk& ch = chunks[c];
    const size_t rows = ch.tokens.size() - static_cast<size_t>(ch.first_logit_row);
    sink(c, std::span<const float>(logits_[0].data(), rows * n_vocab_));
  }
}

// Stage s may run chunk c once stage s - 1 has finished it (its input slot is
// full) and stage s + 1 has finished chunk c - 2 (its output slot c % 2 is
// free again); the last stage's logits slot is free once the sink has
// received chunk c - 2. `done[s]` counts the chunks stage s has finished.
void Pipeline::run_pipelined(std::span<const Chunk> chunks, const Sink& sink, PhaseTimes& times,
                             uint64_t* expert_counts, const std::atomic<bool>& cancel) {
  const int32_t n = n_stage();
  const int64_t n_chunks = static_cast<int64_t>(chunks.size());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> done(n, 0);
  int64_t delivered = 0;
  bool stop = false;
  std::exception_ptr error;
  std::vector<PhaseTimes> stage_times(n);
  // Sizes the logits slots here: stage threads must not resize them while the sink reads the other.
  for (const Chunk& ch : chunks)
    for (size_t slot = 0; slot < 2; ++slot) logits_slot(slot, static_cast<int64_t>(ch.tokens.size()) - ch.first_logit_row);

  auto fail_all = [&](std::exception_ptr e) {
    std::lock_guard lock(mu);
    if (!error) error = e;
    stop = true;
    cv.notify_all();
  };
  auto stage_loop = [&](int32_t s) {
    try {
      for (int64_t c = 0; c < n_chunks; ++c) {
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] {
            const bool input = s == 0 || done[s - 1] > c;
            const bool output = (s + 1 < n ? done[s + 1] : delivered) >= c - 1;
            return stop || (input && output);
          });
          if (stop) return;
        }
        executors_[s]->forward(stage_chunk(s, chunks[c], static_cast<size_t>(c % 2)), stage_times[s], expert_counts,
                               cancel);
        std::lock_guard lock(mu);
        done[s] = c + 1;
        cv.notify_all();
      }
    } catch (...) {
      fail_all(std::current_exception());
    }
  };

  std::vector<std::thread> threads;
  try {
    for (int32_t s = 0; s < n; ++s) threads.emplace_back(stage_loop, s);
    for (int64_t c = 0; c < n_chunks; ++c) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop || done[n - 1] > c; });
        if (stop) break;
      }
      const Chunk& ch = chunks[c];
      const size_t rows = ch.tokens.size() - static_cast<size_t>(ch.first_logit_row);
      sink(static_cast<size_t>(c), std::span<const float>(logits_[c % 2].data(), rows * n_vocab_));
      std::lock_guard lock(mu);
      delivered = c + 1;
      cv.notify_all();
    }
  } catch (...) {
    fail_all(std::current_exception());
  }
  {
    // Every stage stops after its current chunk once the sink has what it wanted or failed.
    std::lock_guard lock(mu);
    stop = true;
    cv.notify_all();
  }
  for (std::thread& t : threads) t.join();
  for (const PhaseTimes& t : stage_times) times += t;
  if (error) std::rethrow_exception(error);
}

}  // namespace strata::core
