// Decode's CPU share of the streamed experts: the host thread, its pool and the cost model.
//
// Per layer of a decode chunk (up to kMaxVectorRows rows) the router's
// choices and norm(x) come down to the host (the executor's host_table), the
// GPU's share of the routed streamed experts streams through the ring, and
// the CPU computes the rest from the pinned arena on a thread of its own
// (start_rows), while the executor queues the GPU's work; finish_rows sends
// the CPU's rows up before the combine (docs/streaming.md).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/model.h"
#include "core/plan/cost.h"
#include "core/plan/expert_store.h"
#include "core/plan/partition.h"
#include "core/runtime/background.h"
#include "core/runtime/thread_pool.h"
#include "cpu/moe.h"
#include "cuda/backend.h"
#include "cuda/runtime/memory.h"
#include "prefill/row_table.h"

namespace strata::cuda {

class DecodeHost {
 public:
  // share: SessionOptions::decode_cpu_share (< 0: the cost model; 0: the
  // GPU takes every expert; > 0: that fraction of a layer's streamed ones).
  // max_rows: the most rows of a decode chunk.
  DecodeHost(const core::Model& model, const core::StagePlan& plan, const DeviceWeights& w, int64_t max_rows,
             double share);
  ~DecodeHost();
  DecodeHost(const DecodeHost&) = delete;
  DecodeHost& operator=(const DecodeHost&) = delete;

  bool takes_share() const { return share_ != 0; }

  // Where host_table's copy kernel puts a chunk's norm(x) rows (mapped, device address).
  float* xn_rows() const { return h_xn_.device_as<float>(); }
  // How many of a layer's n routed streamed experts the CPU takes.
  int32_t cpu_count(int32_t layer, int32_t n);
  // Starts the CPU's rows of `experts` (table's groups; xn_rows holds the
  // chunk's norm(x)) on the host thread; table and experts must live until
  // finish_rows. The rows it writes are the previous layer's, whose uploads
  // finished before the caller's host_table synchronized.
  void start_rows(int32_t layer, const prefill::RowTable& table, const std::vector<int32_t>& experts);
  // Waits for them (rethrowing the thread's error), then queues their upload into y (device [rows * k][n_embd]).
  void finish_rows(int32_t layer, const prefill::RowTable& table, const std::vector<int32_t>& experts, float* y,
                   cudaStream_t stream);
  // Waits for a running share, dropping its error (a failing caller's cleanup).
  void join() noexcept;

 private:
  core::cpu::MoeWeights arena_weights(int32_t layer) const;

  const core::Model& model_;
  const core::ModelConfig& c_;
  const core::StagePlan plan_;
  const DeviceWeights& w_;
  double share_;
  core::ArenaPointers arena_ptrs_;
  std::unique_ptr<core::ThreadPool> pool_;  // run by job_'s thread
  std::unique_ptr<core::Background> job_;
  core::CpuDecodeTracker cpu_rate_{core::CpuDecodeRate{}};
  HostBuffer h_xn_, h_y_;
  double job_s_ = 0;  // the last share's time, written by job_'s thread before its wait returns
};

}  // namespace strata::cuda
