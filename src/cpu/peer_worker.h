// PeerWorker: the peer's side of a shared stream-all chunk on the CPU backend (a peer_device or a stage helper).
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/expert_store.h"
#include "core/runtime/executor.h"
#include "cpu/moe.h"
#include "cpu/ring_runner.h"
#include "prefill/ring.h"

namespace strata::core {
class ThreadPool;
}

namespace strata::core::cpu {

// What a peer computes with: a ring, a thread pool and where the ring's next
// schedule starts. Owned by the executor for a peer_device; an idle stage's
// own for a stage helper (no memory of its own).
struct PeerSide {
  CpuRing* ring = nullptr;
  ThreadPool* pool = nullptr;
  int32_t* next_slot = nullptr;
};

// One chunk's peer work for one stage. From construction on, the peer's ring
// streams the peer's experts of every layer (`lists`, split_stream_all) from
// the stage's host arena; layer() computes one layer's peer rows from the
// activations as they crossed the host route and hands back what would cross
// back. The CPU has one memory, so "crossing" is the rounding of FP16
// transfers, done piece by piece as the CUDA backend does, with the same
// piece bounds: the results are the CUDA backend's, bit for bit.
class PeerWorker {
 public:
  PeerWorker(PeerSide side, const StageExperts& x, const uint8_t* arena, const PeerTerms& terms,
             std::vector<std::vector<int32_t>> lists);
  ~PeerWorker();
  PeerWorker(const PeerWorker&) = delete;
  PeerWorker& operator=(const PeerWorker&) = delete;

  // Layer li of the stage: the rows of its peer experts. w is the layer's
  // weights (the worker points them at its slots); xn the chunk's normed
  // activations [T][n_embd]; weights the router's [T][k]; peer_row [T * k]
  // nonzero where a row is the peer's. Writes `out`: with terms.exact the
  // peer's rows into their rows of a [T * k][n_embd] array (others
  // untouched); else the per-token sums [T][n_embd] (cpu::peer_sums), FP16
  // rounded unless terms.f32.
  void layer(int32_t li, MoeWeights w, const float* xn, const prefill::RowTable& table, const float* weights,
             const uint8_t* peer_row, float* out);
  // Waits for the ring's copies (rethrowing their error); the destructor does it without rethrowing.
  void finish();
  uint64_t bytes_copied() const { return side_.ring->bytes_copied(); }

 private:
  PeerSide side_;
  const StageExperts& x_;
  PeerTerms terms_;
  prefill::RingSchedule schedule_;
  std::vector<const uint8_t*> ptrs_;  // gate, up, down pointer tables of the current layer: [3][n_expert]
  std::vector<float> x_crossed_;      // the activations as the peer received them
  bool finished_ = false;
};

}  // namespace strata::core::cpu
