// The CPU backend's peer: its ring streams its share of a stage's experts; it computes their rows and returns sums.
#include "cpu/peer_worker.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/runtime/thread_pool.h"
#include "cpu/peer_ops.h"
#include "prefill/pieces.h"
#include "prefill/row_table.h"
#include "prefill/stage_ring.h"

namespace strata::core::cpu {

PeerWorker::PeerWorker(PeerSide side, const StageExperts& x, const uint8_t* arena, const PeerTerms& terms,
                       std::vector<std::vector<int32_t>> lists)
    : side_(side), x_(x), terms_(terms) {
  if (!side_.ring || !side_.pool || !side_.next_slot) fail(STRATA_ERR_INTERNAL, "cpu peer: no ring to stream with");
  if (side_.ring->slot_bytes() < max_blob_bytes(x))
    fail(STRATA_ERR_INTERNAL, "cpu peer: slots of {} bytes for blobs of {}", side_.ring->slot_bytes(),
         max_blob_bytes(x));
  schedule_ = prefill::lists_schedule(std::move(lists), side_.ring->n_slots(), *side_.next_slot);
  *side_.next_slot = schedule_.next_slot;
  side_.ring->start(schedule_, [&x, arena](const prefill::RingLoad& load) {
    return CpuRing::Blob{arena + x.arena_offset(load.layer, load.expert), x.layouts[load.layer].bytes};
  });
}

PeerWorker::~PeerWorker() {
  if (finished_) return;
  try {
    side_.ring->finish();
  } catch (...) {  // an error already on its way out, or one nobody asked for
  }
}

void PeerWorker::finish() {
  finished_ = true;
  side_.ring->finish();
}

void PeerWorker::layer(int32_t li, MoeWeights w, const float* xn, const prefill::RowTable& table,
                       const float* weights, const uint8_t* peer_row, float* out) {
  const int64_t T = table.n_tokens, E = w.n_embd;
  const int k = table.k;
  const int pieces = std::max(1, terms_.pieces);
  // The activations cross: rounded to FP16 piece by piece unless F32.
  const float* X = xn;
  if (!terms_.f32) {
    x_crossed_.resize(static_cast<size_t>(T * E));
    for (int i = 0; i < pieces; ++i) {
      const prefill::PieceBounds b = prefill::handoff_piece(T, pieces, i);
      round_to_f16(xn + b.begin * E, x_crossed_.data() + b.begin * E, b.size() * E);
    }
    X = x_crossed_.data();
  }
  // The peer's experts, as their slots land.
  ptrs_.assign(static_cast<size_t>(3) * w.n_expert, nullptr);
  w.gate.ptrs = &ptrs_[0];
  w.up.ptrs = &ptrs_[w.n_expert];
  w.down.ptrs = &ptrs_[2 * static_cast<size_t>(w.n_expert)];
  MoeChunk moe(w, X, table, side_.pool);
  const BlobLayout& b = x_.layouts[li];
  for (int32_t i = schedule_.layer_begin[li]; i < schedule_.layer_begin[li + 1]; ++i) {
    const uint8_t* slot = side_.ring->wait_loaded(i);
    const int32_t e = schedule_.computes[i].expert;
    ptrs_[e] = slot + b.gate;
    ptrs_[w.n_expert + e] = slot + b.up;
    ptrs_[2 * static_cast<size_t>(w.n_expert) + e] = slot + b.down;
    const int32_t one[1] = {e};
    moe.run(w, one);
    side_.ring->release(i);
  }
  const float* rows = moe.rows();
  if (terms_.exact) {
    for (int64_t r = 0; r < T * k; ++r)
      if (peer_row[r]) std::copy_n(rows + r * E, E, out + r * E);
    return;
  }
  // The sums come back piece by piece, rounded to FP16 unless F32.
  for (int i = 0; i < pieces; ++i) {
    const prefill::PieceBounds p = prefill::handoff_piece(T, pieces, i);
    peer_sums(rows, weights, peer_row, p.begin, p.end, k, E, out);
    if (!terms_.f32) round_to_f16(out + p.begin * E, out + p.begin * E, p.size() * E);
  }
}

}  // namespace strata::core::cpu
