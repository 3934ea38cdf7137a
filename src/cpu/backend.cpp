// The CPU reference backend: runs a chunk of tokens through every layer with the plain ops.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <unistd.h>
#include <vector>

#include "core/base/bytes.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/model/layer_ops.h"
#include "core/model/model.h"
#include "core/model/registry.h"
#include "core/plan/expert_store.h"
#include "core/plan/residency.h"
#include "core/runtime/backends.h"
#include "core/runtime/executor.h"
#include "core/runtime/kv_cache.h"
#include "core/runtime/session.h"
#include "core/runtime/thread_pool.h"
#include "cpu/matmul.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "cpu/peer_ops.h"
#include "cpu/peer_worker.h"
#include "cpu/ring_runner.h"
#include "prefill/peer_share.h"
#include "prefill/row_table.h"
#include "prefill/stage_ring.h"

namespace strata::core {
namespace {

using Clock = std::chrono::steady_clock;

// Adds the time since the last tick to one phase.
class PhaseClock {
 public:
  void tick(double& phase_ms) {
    const auto now = Clock::now();
    phase_ms += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }

 private:
  Clock::time_point last_ = Clock::now();
};

// F32 norm weights as a float pointer (the binder accepts F32/F16/BF16 norms;
// F16/BF16 ones are converted once per executor).
class NormWeights {
 public:
  const float* get(const TensorRef& t) {
    if (!t.present()) return nullptr;
    if (t.type == GgmlType::F32) return reinterpret_cast<const float*>(t.data);
    std::vector<float>& v = converted_.emplace_back(static_cast<size_t>(t.ne[0]));
    dequantize_row(t.type, t.data, v.data(), t.ne[0]);
    return v.data();
  }

 private:
  std::vector<std::vector<float>> converted_;
};

// A stage's streamed experts on the CPU: the placement and the host arena of
// the streamed blobs (the resident ones are read in place from the mapping).
struct CpuStreamed {
  StageExperts experts;
  std::unique_ptr<uint8_t[]> arena;
  uint64_t generation = 0;    // residency changes so far
  bool peer = false;          // the model's peer_device is a CPU device: sessions get a peer ring
};

class CpuExecutor final : public Executor, private LayerOps {
 public:
  CpuExecutor(const Model& model, const StagePlan& plan, int32_t n_threads, const CpuStreamed* streamed,
              const SessionOptions& options)
      : c_(model.config()),
        w_(model.weights()),
        plan_(plan),
        pool_(n_threads),
        kv_(options.kv_type, plan.n_layers, options.n_ctx, c_.n_head_kv, c_.head_dim_k, c_.head_dim_v),
        streamed_(streamed),
        model_(model) {
    peer_terms_.share = options.peer_share;
    peer_terms_.f32 = options.peer_f32;
    peer_terms_.pieces = options.peer_pieces;
    for (int32_t il = plan_.first_layer; il < plan_.end_layer(); ++il) {
      const LayerWeights& l = w_.layers[il];
      LayerVectors& v = vectors_.emplace_back();
      for_each_tensor(l, [&](TensorRole role, const TensorRef& t) {
        if (kind_of(role) == TensorKind::Vector) v[static_cast<size_t>(role)] = norm_.get(t);
      });
    }
    if (plan_.has_head) output_norm_ = norm_.get(w_.output_norm);
    if (streamed_) {
      const PlacementPlan& p = streamed_->experts.plan;
      ring_ = std::make_unique<cpu::CpuRing>(p.ring_slots, p.slot_bytes);
      ptrs_.assign(3, std::vector<const uint8_t*>(static_cast<size_t>(plan.n_layers) * c_.n_expert));
      point_residents();
      if (streamed_->peer) {
        // The peer_device's ring and threads (the CPU's: the pair shares them).
        peer_ring_ = std::make_unique<cpu::CpuRing>(p.ring_slots, p.slot_bytes);
        peer_pool_ = std::make_unique<ThreadPool>(n_threads);
      }
    }
  }

  bool set_helper(Executor* helper, const PeerTerms& terms) override {
    helper_ = {};
    if (!helper) return true;
    auto* h = dynamic_cast<CpuExecutor*>(helper);
    // The helper streams with its own ring: it needs one whose slots hold this stage's blobs.
    if (!h || h == this || !streamed_ || !h->ring_ || h->ring_->slot_bytes() < max_blob_bytes(streamed_->experts))
      return false;
    helper_ = {h->ring_.get(), &h->pool_, &h->next_slot_};
    helper_terms_ = terms;
    return true;
  }

  // Pointer tables: resident experts in place in the mapping; streamed ones
  // are set as their slot fills. Again after the residency changed.
  void point_residents() {
    const StageExperts& x = streamed_->experts;
    for (int32_t l = 0; l < plan_.n_layers; ++l) {
      const LayerWeights& lw = w_.layers[plan_.first_layer + l];
      for (int32_t e = 0; e < c_.n_expert; ++e) {
        if (x.streamed[l][e]) continue;
        const size_t i = static_cast<size_t>(l) * c_.n_expert + e;
        ptrs_[0][i] = lw[TensorRole::FfnGateExps].expert(e);
        ptrs_[1][i] = lw[TensorRole::FfnUpExps].expert(e);
        ptrs_[2][i] = lw[TensorRole::FfnDownExps].expert(e);
      }
    }
    generation_ = streamed_->generation;
  }

  uint64_t kv_bytes() const override { return kv_.bytes(); }

  void forward(const StageChunk& chunk, PhaseTimes& times, uint64_t* expert_counts,
               const std::atomic<bool>& cancel) override {
    const int64_t T = static_cast<int64_t>(chunk.tokens.size());
    const int64_t E = c_.n_embd;
    resize(T);
    run_ = Run{&chunk, &times, expert_counts, &cancel, PhaseClock{}};  // the clock starts now

    if (plan_.has_embd) {
      // Embedding rows, dequantized from the table.
      for (int64_t t = 0; t < T; ++t)
        dequantize_row(w_.token_embd.type, w_.token_embd.row(chunk.tokens[t]), &x_[t * E], E);
      run_.clock.tick(times.other_ms);
    } else {
      std::copy(chunk.in, chunk.in + T * E, x_.begin());
      run_.clock.tick(times.transfer_ms);
    }

    peer_.reset();  // a chunk that failed may have left one
    const uint64_t streamed0 = streamed_ ? ring_->bytes_copied() : 0;
    if (streamed_ && generation_ != streamed_->generation) point_residents();
    if (streamed_) {
      // Long chunks stream every non-resident expert from the start; short ones only what each layer routes.
      mode_ = choose_ring_mode(T, c_.n_expert_used, c_.n_expert);
      if (mode_ == RingMode::StreamAll) start_stream_all(T, chunk.pos0, times);
    }
    c_.arch->program(*this, c_, {plan_.first_layer, plan_.end_layer(), plan_.has_head});
    // The chunk's streaming ends after the last layer's experts (and the head, which reads none of it).
    if (streamed_) {
      ring_->finish();
      times.bytes_streamed += ring_->bytes_copied() - streamed0;
    }
    if (peer_) {
      peer_->finish();
      times.bytes_streamed += peer_->bytes_copied() - peer_copied0_;
      peer_.reset();
    }
    if (plan_.has_head) {
      run_.clock.tick(times.other_ms);  // the streams' finish, in other_ms with the head's
      return;
    }
    std::copy(x_.begin(), x_.begin() + T * E, chunk.out);
    run_.clock.tick(times.transfer_ms);
  }

 private:
  // A layer's norm weights (TensorKind::Vector) as F32, by role.
  struct LayerVectors : std::array<const float*, kTensorRoles> {
    const float* operator[](TensorRole r) const { return at(static_cast<size_t>(r)); }
    using std::array<const float*, kTensorRoles>::operator[];
  };

  // The chunk forward() runs: what the steps read besides the buffers.
  struct Run {
    int64_t T() const { return static_cast<int64_t>(chunk->tokens.size()); }
    const StageChunk* chunk = nullptr;
    PhaseTimes* times = nullptr;
    uint64_t* expert_counts = nullptr;  // [model layer * n_expert + e]
    const std::atomic<bool>* cancel = nullptr;
    PhaseClock clock;
  };

  void resize(int64_t T) {
    const int64_t E = c_.n_embd;
    x_.resize(T * E);
    xn_.resize(T * E);
    q_.resize(T * c_.q_dim());
    k_.resize(T * c_.k_dim());
    v_.resize(T * c_.v_dim());
    att_.resize(T * c_.n_head * c_.head_dim_v);
    o_.resize(T * E);
    router_.resize(T * c_.n_expert);
    ids_.resize(T * c_.n_expert_used);
    weights_.resize(T * c_.n_expert_used);
  }

  const LayerVectors& vectors(int32_t il) const { return vectors_[plan_.local(il)]; }

  // xn = RMSNorm(x) · w for the rows from `first` on, into xn's rows from 0.
  void norm_rows(const float* w, int64_t first = 0) {
    const int64_t E = c_.n_embd;
    for (int64_t t = first; t < run_.T(); ++t) cpu::rmsnorm(&x_[t * E], w, &xn_[(t - first) * E], E, c_.rms_eps);
  }

  // x += o: a block's output onto the residual stream.
  void add_to_residual() {
    for (int64_t i = 0; i < run_.T() * c_.n_embd; ++i) x_[i] += o_[i];
  }

  // ---- the layer ops (core/model/layer_ops.h)

  void begin_layer(int32_t il) override {
    if (run_.cancel->load(std::memory_order_relaxed)) fail(STRATA_ABORTED, "cancelled at layer {}", il);
  }

  void attn_norm(int32_t il) override { norm_rows(vectors(il)[TensorRole::AttnNorm]); }

  void qkv(int32_t il) override {
    const LayerWeights& l = w_.layers[il];
    const int64_t E = c_.n_embd, T = run_.T();
    const TensorRef &wq = l[TensorRole::AttnQ], &wk = l[TensorRole::AttnK], &wv = l[TensorRole::AttnV];
    cpu::matmul_q(wq.type, wq.data, E, c_.q_dim(), xn_.data(), T, q_.data(), &pool_);
    cpu::matmul_q(wk.type, wk.data, E, c_.k_dim(), xn_.data(), T, k_.data(), &pool_);
    cpu::matmul_q(wv.type, wv.data, E, c_.v_dim(), xn_.data(), T, v_.data(), &pool_);
  }

  void attn_inputs(int32_t il, const AttentionSpec& a) override {
    const LayerVectors& n = vectors(il);
    const int kv_layer = plan_.local(il);
    const int hd = c_.head_dim_k;
    const int32_t pos0 = run_.chunk->pos0;
    pool_.parallel_for(run_.T(), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        float* q = &q_[t * c_.q_dim()];
        float* k = &k_[t * c_.k_dim()];
        if (a.head_norm == NormKind::Rms) {
          for (int h = 0; h < c_.n_head; ++h)
            cpu::rmsnorm(q + h * hd, n[TensorRole::AttnQNorm], q + h * hd, hd, c_.rms_eps);
          for (int h = 0; h < c_.n_head_kv; ++h)
            cpu::rmsnorm(k + h * hd, n[TensorRole::AttnKNorm], k + h * hd, hd, c_.rms_eps);
        }
        const int32_t pos = pos0 + static_cast<int32_t>(t);
        auto rope = a.rope.style == RopeStyle::Neox ? cpu::rope_neox : cpu::rope_norm;
        rope(q, c_.n_head, hd, pos, a.rope.freq_base, a.rope.n_rot);
        rope(k, c_.n_head_kv, hd, pos, a.rope.freq_base, a.rope.n_rot);
        kv_.write(kv_layer, pos, k, &v_[t * c_.v_dim()]);
      }
    });
  }

  void attention_out(int32_t il, const AttentionSpec&) override {
    const int kv_layer = plan_.local(il);
    const int64_t E = c_.n_embd, T = run_.T();
    const int32_t pos0 = run_.chunk->pos0;
    const float scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim_k));
    const KvView kv_k = kv_.k_view(kv_layer), kv_v = kv_.v_view(kv_layer);
    const int64_t att_dim = c_.n_head * c_.head_dim_v;
    // Blocks of query rows, each block reading the cached rows once; their
    // scores take about kScoreFloats floats.
    constexpr int64_t kScoreFloats = int64_t{1} << 20;
    const int64_t n_keys = static_cast<int64_t>(pos0) + T;
    const int64_t block = std::clamp<int64_t>(kScoreFloats / (static_cast<int64_t>(c_.n_head) * n_keys), 1, 32);
    // Later blocks have more keys: item i takes blocks from both ends in
    // turn (0, last, 1, last - 1, ...), so each thread's contiguous range of
    // items gets a fair share of the work.
    const int64_t n_blocks = (T + block - 1) / block;
    pool_.parallel_for(n_blocks, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t blk = i % 2 == 0 ? i / 2 : n_blocks - 1 - i / 2;
        const int64_t t = blk * block, n = std::min(block, T - t);
        cpu::attention_rows(&q_[t * c_.q_dim()], n, kv_k, kv_v, c_.n_head, pos0 + static_cast<int32_t>(t) + 1, scale,
                            &att_[t * att_dim]);
      }
    });
    const TensorRef& wo = w_.layers[il][TensorRole::AttnOut];
    cpu::matmul_q(wo.type, wo.data, att_dim, E, att_.data(), T, o_.data(), &pool_);
    add_to_residual();
    run_.clock.tick(run_.times->attention_ms);
  }

  void ffn_norm(int32_t il) override { norm_rows(vectors(il)[TensorRole::FfnNorm]); }

  void router(int32_t il, const RouterSpec&) override {
    const TensorRef& router = w_.layers[il][TensorRole::FfnGateInp];
    cpu::matmul_q(router.type, router.data, c_.n_embd, c_.n_expert, xn_.data(), run_.T(), router_.data(), &pool_);
  }

  void topk(int32_t, const RouterSpec& r) override {
    const int k = c_.n_expert_used;
    for (int64_t t = 0; t < run_.T(); ++t)
      cpu::route_topk(&router_[t * c_.n_expert], c_.n_expert, k, r.mode, &ids_[t * k], &weights_[t * k]);
    run_.clock.tick(run_.times->routing_ms);
  }

  // o = Σ_k w_k · expert_k(xn): the resident experts in place, the streamed ones through the ring.
  void experts(int32_t il) override {
    PhaseTimes& times = *run_.times;
    const prefill::RowTable table =
        prefill::RowTable::build(ids_, static_cast<int>(run_.T()), c_.n_expert_used, c_.n_expert);
    for (int32_t e : table.active) run_.expert_counts[static_cast<size_t>(il) * c_.n_expert + e] += table.rows(e);
    run_.clock.tick(times.grouping_ms);

    cpu::MoeWeights mw = cpu::MoeWeights::of(w_.layers[il]);
    if (!streamed_) {
      cpu::moe_forward(mw, xn_.data(), table, weights_.data(), o_.data(), &pool_);
      run_.clock.tick(times.expert_ms);
    } else {
      moe_streamed(plan_.local(il), mw, table);
    }
  }

  // The next layer's attention norm is made by its attn_norm: the CPU has no launch to share.
  void combine(int32_t, int32_t) override {
    add_to_residual();
    run_.clock.tick(run_.times->combine_ms);
  }

  // Final norm and the output head for the rows that want logits.
  void head() override {
    const StageChunk& chunk = *run_.chunk;
    const int64_t E = c_.n_embd, first = chunk.first_logit_row, rows = run_.T() - first;
    if (rows > 0) {
      norm_rows(output_norm_, first);
      cpu::matmul_q(w_.output.type, w_.output.data, E, c_.n_vocab, xn_.data(), rows, chunk.logits, &pool_);
    }
    run_.clock.tick(run_.times->other_ms);
  }

  // A stream-all chunk: with a helper or a peer_device and a positive share
  // the peer's ring starts on its experts and this ring on the rest.
  void start_stream_all(int64_t T, int32_t pos0, PhaseTimes& times) {
    const StageExperts& x = streamed_->experts;
    cpu::PeerSide side = helper_;
    PeerTerms terms = helper_terms_;
    if (!side.ring && peer_ring_) {
      side = {peer_ring_.get(), peer_pool_.get(), &peer_next_slot_};
      terms = peer_terms_;
      if (terms.share < 0) terms.share = choose_peer_share(peer_setup(model_, x, T, pos0, terms, 0)).share;
    }
    if (!side.ring || terms.share <= 0) {
      start_ring(prefill::stream_all_schedule(x, next_slot_), -1);
      return;
    }
    prefill::SharedStreamAll split = prefill::split_stream_all(x, terms.share);
    start_ring(prefill::lists_schedule(std::move(split.primary), x.plan.ring_slots, next_slot_), -1);
    share_ = terms.share;
    peer_exact_ = terms.exact;
    const PeerSetup setup = peer_setup(model_, x, T, pos0, terms, 0);
    times.add_peer_prediction(terms.share, predict_peer_time_s(setup, 0), predict_peer_time_s(setup, terms.share));
    peer_copied0_ = side.ring->bytes_copied();
    peer_ = std::make_unique<cpu::PeerWorker>(side, x, streamed_->arena.get(), terms, std::move(split.peer));
  }

  // Starts the copy thread on a schedule; its loads of schedule layer 0 belong to `layer` when that is not -1.
  void start_ring(prefill::RingSchedule schedule, int32_t layer) {
    schedule_ = std::move(schedule);
    next_slot_ = schedule_.next_slot;
    const StageExperts& x = streamed_->experts;
    const uint8_t* arena = streamed_->arena.get();
    ring_->start(schedule_, [&x, arena, layer](const prefill::RingLoad& load) {
      const int32_t l = layer >= 0 ? layer : load.layer;
      return cpu::CpuRing::Blob{arena + x.arena_offset(l, load.expert), x.layouts[l].bytes};
    });
  }

  // The experts of layer li (of the stage) with the ring: the resident ones in
  // place, then each streamed one as its slot lands, in schedule order.
  void moe_streamed(int32_t li, cpu::MoeWeights& mw, const prefill::RowTable& table) {
    PhaseClock& clock = run_.clock;
    PhaseTimes& times = *run_.times;
    const StageExperts& x = streamed_->experts;
    const size_t base = static_cast<size_t>(li) * c_.n_expert;
    mw.gate.ptrs = &ptrs_[0][base];
    mw.up.ptrs = &ptrs_[1][base];
    mw.down.ptrs = &ptrs_[2][base];
    cpu::MoeChunk moe(mw, xn_.data(), table, &pool_);
    std::vector<int32_t> resident;
    for (int32_t e : table.active)
      if (!x.streamed[li][e]) resident.push_back(e);
    moe.run(mw, resident);

    int32_t begin = 0, end = 0;
    if (mode_ == RingMode::StreamAll) {
      begin = schedule_.layer_begin[li];
      end = schedule_.layer_begin[li + 1];
    } else {
      start_ring(prefill::routed_schedule(x, prefill::ring_layer_routed(table, x.streamed[li]), next_slot_), li);
      end = static_cast<int32_t>(schedule_.computes.size());
    }
    const double wait0 = ring_->wait_ms();
    const BlobLayout& b = x.layouts[li];
    for (int32_t i = begin; i < end; ++i) {
      const uint8_t* slot = ring_->wait_loaded(i);
      const int32_t e = schedule_.computes[i].expert;
      ptrs_[0][base + e] = slot + b.gate;
      ptrs_[1][base + e] = slot + b.up;
      ptrs_[2][base + e] = slot + b.down;
      const int32_t one[1] = {e};
      moe.run(mw, one);
      ring_->release(i);
    }
    if (mode_ == RingMode::Routed) ring_->finish();
    clock.tick(times.expert_ms);
    const double wait = ring_->wait_ms() - wait0;
    times.expert_ms -= wait;
    times.stream_wait_ms += wait;
    if (!peer_) {
      moe.combine(weights_.data(), o_.data());
      return;
    }
    // The peer's rows or sums, then the combine (its time includes the peer's).
    const prefill::PeerSharePlan plan = prefill::plan_peer_share(table, x.streamed[li], share_, mode_);
    peer_row_.assign(table.entries.size(), 0);
    for (int32_t r : plan.peer_rows) peer_row_[r] = 1;
    if (peer_exact_) {
      peer_->layer(li, mw, xn_.data(), table, weights_.data(), peer_row_.data(), moe.rows());
      moe.combine(weights_.data(), o_.data());
    } else {
      sums_.resize(xn_.size());
      peer_->layer(li, mw, xn_.data(), table, weights_.data(), peer_row_.data(), sums_.data());
      std::fill(o_.begin(), o_.end(), 0.0f);
      cpu::combine_with_peer(moe.rows(), weights_.data(), peer_row_.data(), table.n_tokens, table.k, c_.n_embd,
                             sums_.data(), o_.data());
    }
    clock.tick(times.combine_ms);
  }

  const ModelConfig& c_;
  const ModelWeights& w_;
  const StagePlan plan_;
  ThreadPool pool_;
  KvCache kv_;
  NormWeights norm_;
  std::vector<LayerVectors> vectors_;
  Run run_;
  const float* output_norm_ = nullptr;
  std::vector<float> x_, xn_, q_, k_, v_, att_, o_, router_, weights_;
  std::vector<int32_t> ids_;
  // Streaming (null when every expert of the stage is resident).
  const CpuStreamed* streamed_;
  std::unique_ptr<cpu::CpuRing> ring_;
  prefill::RingSchedule schedule_;
  RingMode mode_ = RingMode::Routed;
  int32_t next_slot_ = 0;
  std::vector<std::vector<const uint8_t*>> ptrs_;  // gate, up, down: [layer * n_expert + e]
  uint64_t generation_ = 0;                        // of the residency ptrs_ reflects
  // Sharing stream-all chunks with a peer: the model's peer_device (its ring
  // and threads owned here) or, for the chunks a pipeline says, a stage helper.
  const Model& model_;
  PeerTerms peer_terms_;
  std::unique_ptr<cpu::CpuRing> peer_ring_;
  std::unique_ptr<ThreadPool> peer_pool_;
  int32_t peer_next_slot_ = 0;
  cpu::PeerSide helper_;
  PeerTerms helper_terms_;
  std::unique_ptr<cpu::PeerWorker> peer_;  // the current chunk's, when shared
  double share_ = 0;
  bool peer_exact_ = false;
  uint64_t peer_copied0_ = 0;
  std::vector<uint8_t> peer_row_;
  std::vector<float> sums_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Model& model, const StagePlan& plan, int32_t n_threads, uint64_t budget,
             const ExpertOptions& options, const ProgressFn& progress)
      : model_(model), plan_(plan), n_threads_(n_threads) {
    if (budget == 0 || model.config().n_expert == 0) return;
    ExpertOptions cpu_options = options;
    cpu_options.dense_f16 = false;  // the F16 copy is the GPU's
    StageExperts experts = place_for_default_chunk(model, plan, budget, cpu_options);
    if (!experts.streams()) return;
    streamed_ = std::make_unique<CpuStreamed>();
    streamed_->experts = std::move(experts);
    const PlacementPlan& p = streamed_->experts.plan;
    streamed_->peer = options.peer.has_value();
    try {
      streamed_->arena.reset(new uint8_t[p.arena_bytes]);
    } catch (const std::bad_alloc&) {
      fail(STRATA_ERR_OUT_OF_MEMORY, "cpu: the host arena of the streamed experts needs {}", format_bytes(p.arena_bytes));
    }
    fill_arena(model, streamed_->experts, streamed_->arena.get(), progress);
    log_info("cpu: layers {}..{}: {} experts resident, {} streamed through a ring of {} slots ({} arena)",
             plan.first_layer, plan.end_layer() - 1, p.n_resident(), p.streamed.size(), p.ring_slots,
             format_bytes(p.arena_bytes));
  }
  const char* name() const override { return "cpu"; }

  void adapt(std::span<const uint64_t> routed, int32_t max_swaps) override {
    if (!streamed_) return;
    StageExperts& x = streamed_->experts;
    const auto n = static_cast<size_t>(model_.config().n_expert);
    decay_usage(x.usage, routed.subspan(plan_.first_layer * n, plan_.n_layers * n));
    const std::vector<ExpertSwap> swaps = plan_swaps(x.plan, x.usage, x.blob_bytes(), max_swaps);
    if (swaps.empty()) return;
    x.apply(swaps);  // the resident ones are read in place from the mapping: nothing to copy
    ++streamed_->generation;
  }
  uint64_t generation() const override { return streamed_ ? streamed_->generation : 0; }

  ExpertResidency residency() const override {
    ExpertResidency r;
    if (!streamed_) {
      r.resident = plan_.n_layers * model_.config().n_expert;
      return r;
    }
    const PlacementPlan& p = streamed_->experts.plan;
    r.resident = p.n_resident();
    r.streamed = static_cast<int32_t>(p.streamed.size());
    r.streamed_bytes = p.streamed_bytes;
    r.ring_slots = p.ring_slots;
    r.chunk = streamed_->experts.chunk;
    return r;
  }
  std::unique_ptr<Executor> new_executor(const SessionOptions& options) const override {
    return std::make_unique<CpuExecutor>(model_, plan_, n_threads_, streamed_.get(), options);
  }

 private:
  const Model& model_;
  const StagePlan plan_;
  const int32_t n_threads_;
  std::unique_ptr<CpuStreamed> streamed_;
};

// The CPU backend: a stage's executors run on its share of the model's threads. The model option vram_budget
// (bytes; 0 = none) makes the stage behave like a device of that size: the experts that do not fit are packed
// into a host arena and go through the ring (memcpy into slot buffers) as on a GPU, with the same placement and
// schedules (options: adaptive residency, a usage profile). Errors: OUT_OF_MEMORY (the budget cannot hold the
// dense part, or the arena cannot be allocated), ABORTED (progress).
constexpr BackendEntry kCpuBackend{
    LogicalDevice::Kind::Cpu, "cpu", [] { return 1; },
    [](int) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX / 4;
    },
    [](const StageLoad& s) -> std::unique_ptr<Backend> {
      return std::make_unique<CpuBackend>(s.model, s.plan, s.threads, s.vram_budget, s.experts, s.progress);
    }};

}  // namespace

STRATA_REGISTER_BACKEND(cpu, kCpuBackend);

}  // namespace strata::core
