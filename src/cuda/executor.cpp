// The CUDA executor: one session's KV cache and scratch on a device, running chunks through the resident weights.
#include "cuda/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/model/layer_ops.h"
#include "core/model/registry.h"
#include "core/model/router.h"
#include "core/plan/expert_store.h"
#include "core/runtime/session.h"
#include "cuda/attention/attention.cuh"
#include "cuda/attention/attn_inputs.cuh"
#include "cuda/attention/kv.cuh"
#include "cuda/decode_host.h"
#include "cuda/gemm/dense_gemm.h"
#include "cuda/gemm/mmq.cuh"
#include "cuda/gemm/mmvq.cuh"
#include "cuda/gemm/type_paths.h"
#include "cuda/moe/moe.cuh"
#include "cuda/moe/moe_gemm.cuh"
#include "cuda/moe/row_table.cuh"
#include "cuda/norm/embed.cuh"
#include "cuda/norm/norm.cuh"
#include "cuda/norm/quantize.cuh"
#include "cuda/norm/rope.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/graph.h"
#include "cuda/runtime/host_route.cuh"
#include "cuda/runtime/launch.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/peer.h"
#include "cuda/runtime/phase_timer.h"
#include "cuda/runtime/ring.h"
#include "cuda/runtime/route.cuh"
#include "cuda/runtime/stream.h"
#include "prefill/row_table.h"
#include "prefill/stage_ring.h"

namespace strata::cuda {
namespace {

using core::BlockQ8A;
using Role = core::TensorRole;

// Rows up to this count take the matrix-vector kernels (and the per-entry
// expert path, which needs no row table on the host); more take the GEMMs.
constexpr int64_t kMaxVectorRows = 8;

// Rows of n activations in their second form: Q8A blocks for the matrix-vector kernels or F16 values for the
// tensor-core GEMMs; a buffer holds either.
size_t act_bytes(int64_t rows, int64_t n) {
  return std::max(static_cast<size_t>(rows) * (n / 32) * sizeof(BlockQ8A), static_cast<size_t>(rows * n) * 2);
}

// The tensor-core GEMMs step over K in whole super-blocks (256 values) for
// quantized weights and in 32 for float ones; other shapes take the
// matrix-vector kernels.
bool gemm_takes(core::GgmlType type, int64_t n_in) {
  return n_in % (q8a_type(type) ? 256 : 32) == 0;
}

// Graphs of single-token steps kept per executor, one per set of route and
// logits pointers (two route slots, logits or not: at most four in use).
constexpr size_t kMaxDecodeGraphs = 4;

class CudaExecutor final : public core::Executor, private core::LayerOps {
 public:
  CudaExecutor(const core::Model& model, const DeviceWeights& w, const core::StagePlan& plan, int device,
               const core::SessionOptions& o)
      : model_(model), c_(model.config()), w_(w), plan_(plan), device_(device), n_ctx_(o.n_ctx), chunk_(o.chunk_size),
        kv_type_(o.kv_type), stream_(device), timer_(device) {
    const int64_t T = chunk_, E = c_.n_embd, k = c_.n_expert_used;
    for (int32_t l = 0; l < plan_.n_layers; ++l) {
      kv_.push_back({DeviceBuffer(device, kv_data_bytes(kv_type_, n_ctx_, c_.n_head_kv, c_.head_dim_k)),
                     DeviceBuffer(device, kv_scale_bytes(kv_type_, n_ctx_, c_.n_head_kv)),
                     DeviceBuffer(device, kv_data_bytes(kv_type_, n_ctx_, c_.n_head_kv, c_.head_dim_v)),
                     DeviceBuffer(device, kv_scale_bytes(kv_type_, n_ctx_, c_.n_head_kv))});
      kv_bytes_ += kv_.back().k.size() + kv_.back().ks.size() + kv_.back().v.size() + kv_.back().vs.size();
    }
    const int64_t att_dim = static_cast<int64_t>(c_.n_head) * c_.head_dim_v;
    const int64_t widest = std::max({E, att_dim, static_cast<int64_t>(c_.n_ff_exp)});
    auto f32 = [&](int64_t n) { return DeviceBuffer(device, static_cast<size_t>(n) * sizeof(float)); };
    x_ = f32(T * E);
    xn_ = f32(T * E);
    xq_ = DeviceBuffer(device, act_bytes(T, widest));
    q_ = f32(T * c_.q_dim() + c_.k_dim() + c_.v_dim());  // one decode row of the fused Q|K|V product fits
    k_ = f32(T * c_.k_dim());
    v_ = f32(T * c_.v_dim());
    att_ = f32(T * att_dim);
    o_ = f32(T * E);
    router_ = f32(T * c_.n_expert);
    weights_ = f32(T * k);
    ids_all_ = DeviceBuffer(device, static_cast<size_t>(plan_.n_layers) * T * k * sizeof(int32_t));
    y_ = f32(T * k * E);
    h_ = f32(T * k * c_.n_ff_exp);
    hq_ = DeviceBuffer(device, act_bytes(T * k, c_.n_ff_exp));
    max_tiles_ = gemm_max_tiles(T * k, c_.n_expert);
    tiles_ = DeviceBuffer(device, static_cast<size_t>(max_tiles_) * sizeof(GemmTile));
    tile_count_ = DeviceBuffer(device, sizeof(int32_t));
    table_ = DeviceBuffer(device, static_cast<size_t>(c_.n_expert + 1 + T * k) * sizeof(int32_t));
    tok_pos_ = DeviceBuffer(device, static_cast<size_t>(2 * T + 1) * sizeof(int32_t));
    // Chunks long enough for the decoded dense path: one F16 copy, of the stage's largest dense matrix.
    if (T >= kDenseGemmMinRows && dense_gemm_enabled()) {
      int64_t most = 0;
      for (const DeviceLayer& l : w_.layers)
        for (size_t r = 0; r < core::kTensorRoles; ++r) {
          const core::TensorKind kind = core::kind_of(static_cast<Role>(r));
          const DeviceTensor& t = l.tensors[r];
          if (t.data != nullptr && (kind == core::TensorKind::Matrix || kind == core::TensorKind::Router))
            most = std::max(most, core::dense_f16_values(t.type, t.n_in, t.n_out, kind == core::TensorKind::Router));
        }
      if (most > 0) dense_ = std::make_unique<DenseGemm>(device, most);
    }
    dec_ws_bytes_ = attention_decode_workspace_bytes(c_.n_head, c_.head_dim_v);
    dec_ws_ = DeviceBuffer(device, dec_ws_bytes_);
    attention_decode_workspace_init(dec_ws_.data(), c_.n_head, stream_.get());
    h_tok_pos_ = HostBuffer(static_cast<size_t>(2 * T + 1) * sizeof(int32_t));
    // Mapped: host_table's copy kernels write into them over the link.
    h_ids_ = HostBuffer(static_cast<size_t>(plan_.n_layers) * T * k * sizeof(int32_t),
                        cudaHostAllocPortable | cudaHostAllocMapped);
    h_table_ = HostBuffer(static_cast<size_t>(c_.n_expert + 1 + T * k) * sizeof(int32_t));
    if (w_.experts) {
      const core::PlacementPlan& p = w_.experts->plan;
      ring_ = std::make_unique<DeviceRing>(device, p.ring_slots, p.slot_bytes);
      // Pointer tables [layer][gate, up, down][expert]: residents fixed, streamed ones set per schedule.
      const size_t n_ptrs = static_cast<size_t>(plan_.n_layers) * 3 * c_.n_expert;
      h_ptrs_ = HostBuffer(n_ptrs * sizeof(const uint8_t*));
      d_ptrs_ = DeviceBuffer(device, n_ptrs * sizeof(const uint8_t*));
      // Decode computes part of the streamed experts on the CPU, from the arena: a fixed share, or the cost
      // model's count from the rates as decode observes them (starting from the load's measurements).
      host_ = std::make_unique<DecodeHost>(model, plan_, w_, kMaxVectorRows, o.decode_cpu_share);
      point_residents();
      stream_.synchronize();
      peer_terms_.share = o.peer_share;
      peer_terms_.f32 = o.peer_f32;
      peer_terms_.pieces = o.peer_pieces;
      // A peer_device's ring: half this one's depth is enough for its share.
      if (w_.peer_device >= 0)
        peer_storage_ = std::make_unique<PeerStorage>(w_.peer_device, c_, chunk_, std::max(3, p.ring_slots / 2),
                                                      p.slot_bytes);
    }
    // Streaming decides per step on the host (schedules, ring waits): only fully resident stages replay graphs.
    graphs_on_ = !ring_ && graphs_enabled();
  }

  uint64_t kv_bytes() const override { return kv_bytes_; }

  uint64_t device_bytes() const override {
    uint64_t n = kv_bytes_;
    for (const DeviceBuffer* b : {&x_, &xn_, &xq_, &q_, &k_, &v_, &att_, &o_, &router_, &weights_, &ids_all_, &y_, &h_,
                                  &hq_, &tiles_, &tile_count_, &table_, &tok_pos_, &dec_ws_, &logits_, &d_ptrs_, &d_lists_})
      n += b->size();
    return n + (ring_ ? ring_->device_bytes() : 0) + (peer_storage_ ? peer_storage_->device_bytes() : 0) +
           (dense_ ? dense_->device_bytes() : 0);
  }

  bool set_helper(core::Executor* helper, const core::PeerTerms& terms) override {
    helper_.reset();
    if (!helper) return true;
    auto* h = dynamic_cast<CudaExecutor*>(helper);
    // The helper streams through its own ring and computes in its own buffers: they must hold this stage's work.
    if (!h || h == this || !ring_ || !h->ring_ || h->ring_->slot_bytes() < core::max_blob_bytes(*w_.experts) ||
        h->chunk_ < chunk_ || h->router_.size() / sizeof(int32_t) < PeerShare::table_ints(c_, chunk_))
      return false;
    helper_ = std::make_unique<PeerScratch>(h->lend());
    helper_terms_ = terms;
    return true;
  }

  // A chunk of one token on a stage whose experts are all resident replays
  // the graph of the whole step (decode_graph): about a thousand launches in
  // one. Other chunks, and every chunk with graphs off, queue the launches
  // one by one (enqueue) and time their phases.
  void forward(const core::StageChunk& chunk, core::PhaseTimes& times, uint64_t* expert_counts,
               const std::atomic<bool>& cancel) override {
    const std::span<const int32_t> tokens = chunk.tokens;
    const int32_t pos0 = chunk.pos0;
    const int64_t T = static_cast<int64_t>(tokens.size());
    if (T < 1 || T > chunk_ || pos0 < 0 || pos0 + T > n_ctx_)
      core::fail(STRATA_ERR_INTERNAL, "cuda: chunk of {} tokens at {} outside the session's buffers", T, pos0);
    const int64_t k = c_.n_expert_used;
    ScopedDevice scope(device_);
    cudaStream_t s = stream_.get();
    const bool graph = T == 1 && graphs_on_;
    if (graph) {
      // The graph runs every layer: the one check comes before it.
      if (cancel.load(std::memory_order_relaxed))
        core::fail(STRATA_ABORTED, "cancelled at layer {}", plan_.first_layer);
      timer_.off();
    } else {
      timer_.start(s);
    }

    const int64_t rows = plan_.has_head ? T - chunk.first_logit_row : 0;
    if (rows > 0) ensure_logits(rows);  // before a capture: no allocation inside one
    // Captured (or found) before anything is queued: a failed capture leaves no copy in flight.
    const GraphExec* exec = graph ? &decode_graph(chunk, rows > 0) : nullptr;

    // Ids, positions and the key count of the last row (attention_decode's
    // n_kv): device memory that the launches, and a replayed graph, read.
    int32_t* h_tp = h_tok_pos_.as<int32_t>();
    std::memcpy(h_tp, tokens.data(), T * sizeof(int32_t));
    for (int64_t t = 0; t < T; ++t) h_tp[T + t] = pos0 + static_cast<int32_t>(t);
    h_tp[2 * T] = pos0 + static_cast<int32_t>(T);
    copy_async(tok_pos_.data(), h_tp, (2 * T + 1) * sizeof(int32_t), s);

    if (ring_ && generation_ != w_.generation) point_residents();
    sharing_ = false;
    const uint64_t streamed0 = ring_ ? ring_->bytes_enqueued() : 0;
    if (exec) {
      exec->launch(s);
    } else {
      // A decode step launched one by one (streamed experts: the host decides per layer) hides its launch gaps
      // the way the captured graph does.
      const PdlScope pdl(T <= kMaxVectorRows);
      enqueue(chunk, T, rows, pos0 + static_cast<int32_t>(T), times, &cancel);
    }
    // Not in the graph: the caller's logits are pageable host memory.
    if (rows > 0) copy_async(chunk.logits, logits_.data(), static_cast<size_t>(rows) * c_.n_vocab * sizeof(float), s);
    timer_.mark(s, &times.other_ms);
    stream_.synchronize();
    timer_.collect();
    if (ring_) times.bytes_streamed += ring_->bytes_enqueued() - streamed0;
    if (sharing_) {
      share_->end();
      times.bytes_streamed += share_->bytes_streamed();
      sharing_ = false;
    }

    const int32_t* ids = h_ids_.as<int32_t>();
    for (int32_t i = 0; i < plan_.n_layers; ++i) {
      uint64_t* counts = expert_counts + static_cast<size_t>(plan_.first_layer + i) * c_.n_expert;
      for (int64_t j = 0; j < T * k; ++j) counts[ids[i * T * k + j]] += 1;
    }
  }

 private:
  struct LayerKv {
    DeviceBuffer k, ks, v, vs;
  };

  // A captured single-token step and the pointers it was captured with
  // (route in and out, logits_ or null); every other buffer it uses is the
  // executor's own, allocated once.
  struct DecodeGraph {
    const float* in;
    const float* out;
    const void* logits;
    GraphExec exec;
  };

  // Queues the chunk's device work on the stream: the embedding (or the
  // route in), the architecture's layer program over the layer ops below (its
  // layers, then the head into logits_ when rows > 0), or else the route out,
  // and the routed ids into h_ids_. Reads ids, positions and n_kv from
  // tok_pos_ (uploaded by forward); max_kv bounds the key count of decode
  // attention (pos0 + 1 for one chunk, n_ctx for a graph that replays at any
  // position). Checks *cancel before each layer (begin_layer); null during a capture.
  void enqueue(const core::StageChunk& chunk, int64_t T, int64_t rows, int32_t max_kv, core::PhaseTimes& times,
               const std::atomic<bool>* cancel) {
    const int64_t E = c_.n_embd, k = c_.n_expert_used;
    cudaStream_t s = stream_.get();
    const int32_t* d_tok = tok_pos_.as<int32_t>();
    run_ = {&chunk, T, rows, d_tok + T, d_tok + 2 * T, max_kv, &times, cancel};
    attn_norm_done_ = false;  // a chunk that failed mid-way may have left it set
    if (plan_.has_embd) {
      get_rows(w_.token_embd.type, w_.token_embd.data, w_.token_embd.n_out, E, d_tok, T, x_.as<float>(), s);
      timer_.mark(s, &times.other_ms);
    } else {
      route_copy(chunk.in, x_.as<float>(), T * E, s);
      timer_.mark(s, &times.transfer_ms);
    }

    if (ring_) {
      // Long chunks stream every non-resident expert from the chunk's start; short ones what each layer routes.
      mode_ = core::choose_ring_mode(T, c_.n_expert_used, c_.n_expert);
      if (mode_ == core::RingMode::StreamAll) {
        schedule_ = start_share(T, chunk.pos0, times) ? std::move(own_lists_schedule_)
                                               : prefill::stream_all_schedule(*w_.experts, next_slot_);
        next_slot_ = schedule_.next_slot;
        for (const prefill::RingCompute& c : schedule_.computes) set_slot_ptrs(c.layer, c);
        copy_async(d_ptrs_.data(), h_ptrs_.data(), d_ptrs_.size(), s);
        if (!sharing_) upload_chunk_lists();
        ring_->begin(schedule_, blob_source(-1));
      }
    }
    c_.arch->program(*this, c_, {plan_.first_layer, plan_.end_layer(), plan_.has_head});
    if (!plan_.has_head) {
      route_copy(x_.as<float>(), chunk.out, T * E, s);
      timer_.mark(s, &times.transfer_ms);
    }
    copy_async(h_ids_.data(), ids_all_.data(), static_cast<size_t>(plan_.n_layers) * T * k * sizeof(int32_t), s);
  }

  // The graph of a single-token step for these route and logits pointers,
  // captured on first use (the capture runs nothing; forward launches it).
  // Replays read the token, its position and n_kv from tok_pos_, so one
  // graph serves every position of the context.
  const GraphExec& decode_graph(const core::StageChunk& chunk, bool logits) {
    const void* at = logits ? logits_.data() : nullptr;
    for (const DecodeGraph& g : graphs_)
      if (g.in == chunk.in && g.out == chunk.out && g.logits == at) return g.exec;
    if (graphs_.size() == kMaxDecodeGraphs) graphs_.erase(graphs_.begin());
    core::PhaseTimes unused;
    GraphExec exec;
    try {
      exec = GraphExec::capture(device_, stream_.get(), [&] {
        const PdlScope pdl(true);  // the step's kernels as programmatic dependents: their launch gaps overlap
        enqueue(chunk, 1, logits ? 1 : 0, n_ctx_, unused, nullptr);
      });
    } catch (const core::Error& e) {
      throw core::Error(e.status(), fmt::format("{} (capturing the decode step as a CUDA graph; STRATA_CUDA_GRAPH=0 "
                                                "runs it launch by launch)", e.what()));
    }
    graphs_.push_back({chunk.in, chunk.out, at, std::move(exec)});
    return graphs_.back().exec;
  }

  KvDeviceView view(const DeviceBuffer& data, const DeviceBuffer& scales, int head_dim) const {
    KvDeviceView v;
    v.type = kv_type_;
    v.data = data.data();
    v.scales = scales.as<float>();
    v.n_ctx = n_ctx_;
    v.n_head_kv = c_.n_head_kv;
    v.head_dim = head_dim;
    return v;
  }

  // Stage layer li's K and V caches.
  std::pair<KvDeviceView, KvDeviceView> kv_views(int32_t li) const {
    const LayerKv& kv = kv_[li];
    return {view(kv.k, kv.ks, c_.head_dim_k), view(kv.v, kv.vs, c_.head_dim_v)};
  }

  void ensure_logits(int64_t rows) {
    const size_t need = static_cast<size_t>(rows) * c_.n_vocab * sizeof(float);
    if (logits_.size() < need) logits_ = DeviceBuffer(device_, need);
  }

  // Whether T rows times w run as a GEMM (else as matrix-vector products).
  static bool gemm_rows(const DeviceTensor& w, int64_t T) { return T > kMaxVectorRows && gemm_takes(w.type, w.n_in); }

  // Y[T][n_out] = X · Wᵀ, with X first in the form the kernel reads when the weights are quantized (into xq_:
  // Q8A rows for the matrix-vector kernels, F16 rows for the GEMMs). y = w · x (epi Store) or y += w · x (epi Add).
  void matmul(const DeviceTensor& w, const float* x, int64_t T, float* y, Epilogue epi = Epilogue::Store) {
    const void* act = x;
    if (q8a_type(w.type)) {
      if (gemm_rows(w, T))
        f32_to_f16(x, xq_.as<uint16_t>(), T * w.n_in, stream_.get());
      else
        quantize_q8a(x, w.n_in, xq_.as<BlockQ8A>(), w.n_in / 32, w.n_in, T, stream_.get());
      act = xq_.data();
    }
    matmul_act(w, act, T, y, epi);
  }

  // As matmul, with X already in the form w's type reads (xq_ for quantized weights).
  void matmul_act(const DeviceTensor& w, const void* act, int64_t T, float* y, Epilogue epi = Epilogue::Store) {
    if (dense_ && dense_->takes(w.type, w.n_in, w.n_out, T)) {
      dense_->run(w.type, w.data, w.n_in, w.n_out, static_cast<const uint16_t*>(act), T, y, epi, stream_.get());
      return;
    }
    if (gemm_rows(w, T)) {
      mmq(w.type, w.data, w.n_in, w.n_out, act, T, y, stream_.get(), epi);
      return;
    }
    const size_t act_row = core::activation_row_size(core::activation_kind(w.type), w.n_in);
    for (int64_t t = 0; t < T; t += kMaxVectorRows) {
      const int n = static_cast<int>(std::min(kMaxVectorRows, T - t));
      mmvq(w.type, w.data, w.n_in, w.n_out, static_cast<const uint8_t*>(act) + t * act_row, n, y + t * w.n_out,
           stream_.get(), epi);
    }
  }

  // router_ = xn · Wᵀ for the router's w. An F32 router over a long chunk runs on the tensor cores as F16 pairs,
  // split into attention's Q buffer (free until the next layer's attention).
  void router_logits(const DeviceTensor& w, const float* xn, int64_t T) {
    if (w.type == core::GgmlType::F32 && dense_ && dense_->takes_f32(w.n_in, w.n_out, T, q_.size())) {
      dense_->run_f32(static_cast<const float*>(w.data), w.n_in, w.n_out, xn, T, router_.as<float>(), Epilogue::Store,
                      q_.data(), q_.size(), stream_.get());
      return;
    }
    matmul(w, xn, T, router_.as<float>());
  }

  // ---- the layer ops (core/model/layer_ops.h), queued on the stream for the chunk in run_

  // Model layer il's weights on this stage.
  const DeviceLayer& layer(int32_t il) const { return w_.layers[plan_.local(il)]; }

  // The routed ids of stage layer li in ids_all_.
  int32_t* ids_of(int32_t li) { return ids_all_.as<int32_t>() + static_cast<int64_t>(li) * run_.T * c_.n_expert_used; }

  void begin_layer(int32_t il) override {
    if (run_.cancel && run_.cancel->load(std::memory_order_relaxed)) {
      stream_.synchronize();
      core::fail(STRATA_ABORTED, "cancelled at layer {}", il);
    }
  }

  // With Q, K and V quantized, norm(x) in the second form once for the three (the same rows each matmul would
  // make), in the norm's launch, or already in the previous layer's combine.
  void attn_norm(int32_t il) override {
    const DeviceLayer& l = layer(il);
    const int64_t T = run_.T;
    if (attention_q8a(l)) {
      if (!std::exchange(attn_norm_done_, false))
        norm_second(x_.as<float>(), l.f32(Role::AttnNorm), xn_.as<float>(), gemm_rows(l[Role::AttnQ], T), T);
    } else {
      rmsnorm(x_.as<float>(), l.f32(Role::AttnNorm), xn_.as<float>(), T, c_.n_embd, c_.rms_eps, stream_.get());
    }
  }

  void qkv(int32_t il) override {
    const DeviceLayer& l = layer(il);
    const int64_t T = run_.T;
    float* q = q_.as<float>();
    layer_.q = q;
    layer_.k = k_.as<float>();
    layer_.v = v_.as<float>();
    if (attention_q8a(l)) {
      if (T == 1 && l.wqkv.data != nullptr) {
        // One launch for the three: the row q | k | v.
        matmul_act(l.wqkv, xq_.data(), 1, q);
        layer_.k = q + l[Role::AttnQ].n_out;
        layer_.v = layer_.k + l[Role::AttnK].n_out;
      } else {
        matmul_act(l[Role::AttnQ], xq_.data(), T, layer_.q);
        matmul_act(l[Role::AttnK], xq_.data(), T, layer_.k);
        matmul_act(l[Role::AttnV], xq_.data(), T, layer_.v);
      }
    } else {
      const float* xn = xn_.as<float>();
      matmul(l[Role::AttnQ], xn, T, layer_.q);
      matmul(l[Role::AttnK], xn, T, layer_.k);
      matmul(l[Role::AttnV], xn, T, layer_.v);
    }
  }

  // One launch for the q/k norm, RoPE and the KV write where the head sizes allow.
  void attn_inputs(int32_t il, const core::AttentionSpec& a) override {
    const DeviceLayer& l = layer(il);
    const int64_t T = run_.T;
    cudaStream_t s = stream_.get();
    float *q = layer_.q, *k = layer_.k, *v = layer_.v;
    const int hd = c_.head_dim_k;
    const auto [kview, vview] = kv_views(plan_.local(il));
    const core::RopeSpec& r = a.rope;
    const bool head_norm = a.head_norm == core::NormKind::Rms;
    const int32_t* d_pos = run_.d_pos;
    if (attention_inputs_take(hd, c_.head_dim_v, r.n_rot, r.style)) {
      attention_inputs(q, k, v, head_norm ? l.f32(Role::AttnQNorm) : nullptr,
                       head_norm ? l.f32(Role::AttnKNorm) : nullptr, c_.rms_eps, d_pos, T, c_.n_head, r.n_rot,
                       r.freq_base, r.style, kview, vview, s);
    } else {
      if (head_norm) {
        rmsnorm(q, l.f32(Role::AttnQNorm), q, T * c_.n_head, hd, c_.rms_eps, s);
        rmsnorm(k, l.f32(Role::AttnKNorm), k, T * c_.n_head_kv, hd, c_.rms_eps, s);
      }
      rope(q, d_pos, T, c_.n_head, hd, r.n_rot, r.freq_base, r.style, s);
      rope(k, d_pos, T, c_.n_head_kv, hd, r.n_rot, r.freq_base, r.style, s);
      kv_write(k, d_pos, T, kview, s);
      kv_write(v, d_pos, T, vview, s);
    }
  }

  // Decode attention reads the key count from run_.d_n_kv (bounded by run_.max_kv); a long chunk's attention
  // writes Wo's F16 rows when Wo's GEMM reads them. The residual add is in Wo's epilogue.
  void attention_out(int32_t il, const core::AttentionSpec&) override {
    const DeviceLayer& l = layer(il);
    const int64_t T = run_.T;
    const int32_t pos0 = run_.chunk->pos0;
    cudaStream_t s = stream_.get();
    float* x = x_.as<float>();
    const auto [kview, vview] = kv_views(plan_.local(il));
    const float scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim_k));
    if (T == 1) {
      attention_decode(layer_.q, kview, vview, c_.n_head, run_.d_n_kv, run_.max_kv, scale, att_.as<float>(),
                       dec_ws_.data(), dec_ws_bytes_, s);
      matmul(l[Role::AttnOut], att_.as<float>(), T, x, Epilogue::Add);
    } else if (q8a_type(l[Role::AttnOut].type) && gemm_rows(l[Role::AttnOut], T)) {
      attention_prompt_to_f16(layer_.q, kview, vview, c_.n_head, T, pos0, scale, att_.as<float>(),
                              xq_.as<uint16_t>(), s);
      matmul_act(l[Role::AttnOut], xq_.data(), T, x, Epilogue::Add);
    } else {
      attention_prompt(layer_.q, kview, vview, c_.n_head, T, pos0, scale, att_.as<float>(), s);
      matmul(l[Role::AttnOut], att_.as<float>(), T, x, Epilogue::Add);
    }
    timer_.mark(s, &run_.times->attention_ms);
  }

  // The experts read norm(x) in the second form when their gate/up are quantized (Q8A rows on the vector path,
  // F16 rows for the GEMMs): made in the norm's launch (the router's matmul, F32 or quantized, leaves xq_ as it
  // is: the same rows).
  void ffn_norm(int32_t il) override {
    const DeviceLayer& l = layer(il);
    const int64_t T = run_.T;
    const DeviceTensor &gate = l[Role::FfnGateExps], &down = l[Role::FfnDownExps];
    layer_.vector_path =
        T <= kMaxVectorRows || !gemm_takes(gate.type, gate.n_in) || !gemm_takes(down.type, down.n_in);
    layer_.xq = nullptr;
    if (q8a_type(gate.type)) {
      norm_second(x_.as<float>(), l.f32(Role::FfnNorm), xn_.as<float>(), !layer_.vector_path, T);
      layer_.xq = xq_.data();
    } else {
      rmsnorm(x_.as<float>(), l.f32(Role::FfnNorm), xn_.as<float>(), T, c_.n_embd, c_.rms_eps, stream_.get());
    }
  }

  // A peer sharing the chunk's experts gets xn as soon as it is made.
  void router(int32_t il, const core::RouterSpec&) override {
    if (sharing_) share_->send_early(xn_.as<float>(), stream_.get());
    router_logits(layer(il)[Role::FfnGateInp], xn_.as<float>(), run_.T);
  }

  void topk(int32_t il, const core::RouterSpec& r) override {
    route_topk(router_.as<float>(), run_.T, c_.n_expert, c_.n_expert_used, r.mode, ids_of(plan_.local(il)),
               weights_.as<float>(), stream_.get());
    timer_.mark(stream_.get(), &run_.times->routing_ms);
  }

  // Streamed through the ring, or resident: per (token, expert) entry on the vector path, else grouped by expert
  // in a row table made on the device (no host round trip between the router and the GEMMs).
  void experts(int32_t il) override {
    const int32_t li = plan_.local(il);
    const DeviceLayer& l = w_.layers[li];
    const int64_t T = run_.T;
    cudaStream_t s = stream_.get();
    const int32_t* ids = ids_of(li);
    const float* xn = xn_.as<float>();
    if (ring_) {
      moe_streamed(li, T, ids, xn, layer_.xq, layer_.vector_path, *run_.times);
    } else {
      const MoeExperts experts{weights_of(l[Role::FfnGateExps]), weights_of(l[Role::FfnUpExps]),
                               weights_of(l[Role::FfnDownExps])};
      if (layer_.vector_path) {
        moe_experts_decode(experts, ids, static_cast<int32_t>(T), c_.n_expert_used, xn,
                           static_cast<const BlockQ8A*>(layer_.xq), h_.as<float>(), hq_.as<BlockQ8A>(), y_.as<float>(),
                           s);
      } else {
        build_table(ids, T);
        timer_.mark(s, &run_.times->grouping_ms);
        moe_experts_prompt(experts, table_view(T), xn, static_cast<const uint16_t*>(layer_.xq), scratch(),
                           y_.as<float>(), s);
      }
    }
    timer_.mark(s, &run_.times->expert_ms);
  }

  // With a peer, its combine (its rows or sums). Else, where layer next's attention reads a second form, its
  // norm in the combine's launch (attn_norm(next) then has nothing to do).
  void combine(int32_t /*il*/, int32_t next) override {
    const int64_t T = run_.T, E = c_.n_embd;
    const int k = c_.n_expert_used;
    cudaStream_t s = stream_.get();
    float* x = x_.as<float>();
    if (sharing_) {
      share_->combine(y_.as<float>(), weights_.as<float>(), o_.as<float>(), x, s);
    } else if (next >= 0 && attention_q8a(layer(next))) {
      const DeviceLayer& l = layer(next);
      if (gemm_rows(l[Role::AttnQ], T))
        moe_combine_rmsnorm_f16(y_.as<float>(), weights_.as<float>(), k, x, l.f32(Role::AttnNorm), xn_.as<float>(),
                                xq_.as<uint16_t>(), T, E, c_.rms_eps, s);
      else
        moe_combine_rmsnorm_q8a(y_.as<float>(), weights_.as<float>(), k, x, l.f32(Role::AttnNorm), xn_.as<float>(),
                                xq_.as<BlockQ8A>(), T, E, c_.rms_eps, s);
      attn_norm_done_ = true;
    } else {
      moe_combine(y_.as<float>(), weights_.as<float>(), T, k, E, x, x, s);
    }
    timer_.mark(s, &run_.times->combine_ms);
  }

  // The logits of the rows from the chunk's first_logit_row into logits_.
  void head() override {
    if (run_.rows == 0) return;
    const int64_t E = c_.n_embd;
    rmsnorm(x_.as<float>() + run_.chunk->first_logit_row * E, w_.output_norm, xn_.as<float>(), run_.rows, E,
            c_.rms_eps, stream_.get());
    matmul(w_.output, xn_.as<float>(), run_.rows, logits_.as<float>());
  }

  // xn = norm(x) with the ffn or attention norm weights w, and its second form into xq_: F16 rows for the GEMMs
  // (gemm) or Q8A rows.
  void norm_second(const float* x, const float* w, float* xn, bool gemm, int64_t T) {
    if (gemm)
      rmsnorm_f16(x, w, xn, xq_.as<uint16_t>(), T, c_.n_embd, c_.rms_eps, stream_.get());
    else
      rmsnorm_q8a(x, w, xn, xq_.as<BlockQ8A>(), T, c_.n_embd, c_.rms_eps, stream_.get());
  }

  // Whether attn_norm and qkv make and read norm(x) in a second form (all of Q, K, V quantized).
  static bool attention_q8a(const DeviceLayer& l) {
    return q8a_type(l[Role::AttnQ].type) && q8a_type(l[Role::AttnK].type) && q8a_type(l[Role::AttnV].type);
  }

  // The row table is a host plan (prefill/row_table): the router's choices come down (a sync), the table goes up.
  // With xn, its T rows come down too (into h_xn_; T <= kMaxVectorRows). They come down by copy kernels
  // writing mapped memory (bits unchanged): a few microseconds sooner than copies on a copy engine.
  prefill::RowTable host_table(const int32_t* ids, int64_t T, const float* xn = nullptr) {
    const int k = c_.n_expert_used;
    int32_t* h_ids = h_ids_.as<int32_t>();
    route_copy(reinterpret_cast<const float*>(ids), static_cast<float*>(h_ids_.device_ptr()), T * k, stream_.get());
    if (xn) route_copy(xn, host_->xn_rows(), T * c_.n_embd, stream_.get());
    stream_.synchronize();
    return prefill::RowTable::build(std::span<const int32_t>(h_ids, T * k), static_cast<int>(T), k, c_.n_expert);
  }

  // The router's choices grouped into table_ on the device (build_row_table).
  void build_table(const int32_t* ids, int64_t T) {
    int32_t* t = table_.as<int32_t>();
    build_row_table(ids, static_cast<int32_t>(T * c_.n_expert_used), c_.n_expert, t, t + c_.n_expert + 1,
                    stream_.get());
  }

  // Uploads the table's offsets and entries, then `extra` ints (lists the
  // launches read), growing the buffers when needed; extra starts at
  // table_extra().
  void upload_table(const prefill::RowTable& table, std::span<const int32_t> extra) {
    const size_t n = table.offsets.size() + table.entries.size() + extra.size();
    if (h_table_.size() < n * sizeof(int32_t)) {
      stream_.synchronize();  // the old buffers may still be read
      h_table_ = HostBuffer(n * sizeof(int32_t));
      table_ = DeviceBuffer(device_, n * sizeof(int32_t));
    }
    int32_t* h = h_table_.as<int32_t>();
    h = std::copy(table.offsets.begin(), table.offsets.end(), h);
    h = std::copy(table.entries.begin(), table.entries.end(), h);
    std::copy(extra.begin(), extra.end(), h);
    copy_async(table_.data(), h_table_.data(), n * sizeof(int32_t), stream_.get());
  }
  const int32_t* table_extra(int64_t T) const {
    return table_.as<int32_t>() + c_.n_expert + 1 + T * c_.n_expert_used;
  }

  MoeScratch scratch() const {
    MoeScratch m;
    m.tiles = tiles_.as<GemmTile>();
    m.tile_count = tile_count_.as<int32_t>();
    m.h = h_.as<float>();
    m.hh = hq_.as<uint16_t>();
    return m;
  }

  RowTableView table_view(int64_t T) const {
    RowTableView view;
    view.offsets = table_.as<int32_t>();
    view.entries = table_.as<int32_t>() + c_.n_expert + 1;
    view.n_tokens = static_cast<int32_t>(T);
    view.k = c_.n_expert_used;
    view.n_expert = c_.n_expert;
    return view;
  }

  // ---- streaming (ring_ set): experts addressed through per-layer pointer tables

  const uint8_t** ptrs_of(int32_t layer, int part) const {
    return h_ptrs_.as<const uint8_t*>() + (static_cast<size_t>(layer) * 3 + part) * c_.n_expert;
  }
  void set_expert_ptrs(int32_t layer, int32_t e, const uint8_t* blob) {
    const core::BlobLayout& b = w_.experts->layouts[layer];
    ptrs_of(layer, 0)[e] = blob ? blob + b.gate : nullptr;
    ptrs_of(layer, 1)[e] = blob ? blob + b.up : nullptr;
    ptrs_of(layer, 2)[e] = blob ? blob + b.down : nullptr;
  }
  // The resident experts' blobs into the pointer tables (streamed ones: null
  // until a schedule names their slot), uploaded on the stream; again after
  // the residency changed.
  void point_residents() {
    for (int32_t l = 0; l < plan_.n_layers; ++l)
      for (int32_t e = 0; e < c_.n_expert; ++e) set_expert_ptrs(l, e, w_.layers[l].blobs[e]);
    copy_async(d_ptrs_.data(), h_ptrs_.data(), d_ptrs_.size(), stream_.get());
    generation_ = w_.generation;
  }

  // A streamed expert lives in its compute's slot for the schedule.
  void set_slot_ptrs(int32_t layer, const prefill::RingCompute& c) { set_expert_ptrs(layer, c.expert, ring_->slot(c.slot)); }

  DeviceRing::Source blob_source(int32_t layer) const {
    const core::StageExperts& x = *w_.experts;
    const uint8_t* arena = w_.arena.as<uint8_t>();
    return [&x, arena, layer](const prefill::RingLoad& load) {
      const int32_t l = layer >= 0 ? layer : load.layer;
      return DeviceRing::Blob{arena + x.arena_offset(l, load.expert), x.layouts[l].bytes};
    };
  }

  WeightSet expert_set(const DeviceTensor& t, int32_t layer, int part) const {
    WeightSet w = weights_of(t);
    w.base = nullptr;
    w.stride = 0;
    w.ptrs = d_ptrs_.as<const uint8_t*>() + (static_cast<size_t>(layer) * 3 + part) * c_.n_expert;
    return w;
  }

  // The experts of layer il with the ring: the resident ones first (in place),
  // then the streamed ones in schedule order, a batch at a time, each batch
  // after its last load has landed; each batch releases its slots.
  // xq: norm(x) as Q8A rows (vector_path) or F16 rows (the GEMMs), null for float gate/up.
  void moe_streamed(int32_t il, int64_t T, const int32_t* ids, const float* xn, const void* xq, bool vector_path,
                    core::PhaseTimes& times) {
    if (mode_ == core::RingMode::StreamAll && !sharing_ && !vector_path) {
      moe_stream_all(il, T, ids, xn, static_cast<const uint16_t*>(xq), times);
      return;
    }
    cudaStream_t s = stream_.get();
    const core::StageExperts& x = *w_.experts;
    const DeviceLayer& l = w_.layers[il];
    const int k = c_.n_expert_used;
    const bool hybrid = T <= kMaxVectorRows && host_->takes_share();
    const prefill::RowTable table = host_table(ids, T, hybrid ? xn : nullptr);
    int32_t begin = 0, end = 0;
    std::vector<int32_t> on_cpu;
    struct JoinOnExit {  // a failure below leaves no job reading table or on_cpu
      DecodeHost& host;
      ~JoinOnExit() { host.join(); }
    } cpu_join{*host_};
    if (mode_ == core::RingMode::StreamAll) {
      begin = schedule_.layer_begin[il];
      end = schedule_.layer_begin[il + 1];
    } else {
      // Decode: the CPU takes the smallest groups (the list's tail) of the routed streamed experts.
      std::vector<int32_t> routed = prefill::ring_layer_routed(table, x.streamed[il]);
      if (hybrid) {
        const auto n_cpu = static_cast<size_t>(host_->cpu_count(il, static_cast<int32_t>(routed.size())));
        on_cpu.assign(routed.end() - static_cast<std::ptrdiff_t>(n_cpu), routed.end());
        routed.resize(routed.size() - n_cpu);
      }
      // The CPU's share starts now, beside the queueing of the GPU's work below.
      if (!on_cpu.empty()) host_->start_rows(il, table, on_cpu);
      schedule_ = prefill::routed_schedule(x, std::move(routed), next_slot_);
      next_slot_ = schedule_.next_slot;
      end = static_cast<int32_t>(schedule_.computes.size());
      for (const prefill::RingCompute& c : schedule_.computes) set_slot_ptrs(il, c);
      const size_t layer_ptrs = static_cast<size_t>(3) * c_.n_expert;
      copy_async(d_ptrs_.as<const uint8_t*>() + il * layer_ptrs, ptrs_of(il, 0), layer_ptrs * sizeof(const uint8_t*), s);
      ring_->begin(schedule_, blob_source(il));
    }
    // Batches of streamed computes (ring_batch_ends): big enough to fill the GPU, small enough to keep loads
    // running ahead.
    const std::vector<int32_t> ends = prefill::ring_batch_ends(begin, end, ring_->n_slots());
    std::vector<std::vector<int32_t>> groups;  // the resident experts, then each batch's
    groups.emplace_back();
    for (int32_t e : table.active)
      if (!x.streamed[il][e]) groups.back().push_back(e);
    for (int32_t b = begin; int32_t e : ends) {
      groups.emplace_back();
      for (; b < e; ++b) groups.back().push_back(schedule_.computes[b].expert);
    }
    // Extra upload: for the GEMMs each group's expert list; for the vector
    // path each group's copy of the router's ids with other experts masked (-1).
    std::vector<int32_t> extra;
    std::vector<size_t> at;
    for (const std::vector<int32_t>& g : groups) {
      at.push_back(extra.size());
      if (!vector_path) {
        extra.insert(extra.end(), g.begin(), g.end());
      } else {
        std::vector<bool> in(c_.n_expert, false);
        for (int32_t e : g) in[e] = true;
        for (int64_t i = 0; i < T * k; ++i) extra.push_back(in[h_ids_.as<int32_t>()[i]] ? h_ids_.as<int32_t>()[i] : -1);
      }
    }
    upload_table(table, extra);
    if (sharing_)
      share_->layer(il, l, table, prefill::plan_peer_share(table, x.streamed[il], share_value_, mode_), xn,
                    weights_.as<float>(), s);
    timer_.mark(s, &times.grouping_ms);

    const MoeExperts experts{expert_set(l[Role::FfnGateExps], il, 0), expert_set(l[Role::FfnUpExps], il, 1),
                             expert_set(l[Role::FfnDownExps], il, 2)};
    auto run = [&](size_t g) {
      const std::vector<int32_t>& list = groups[g];
      if (list.empty()) return;
      const int32_t* dev = table_extra(T) + at[g];
      if (vector_path) {
        moe_experts_decode(experts, dev, static_cast<int32_t>(T), k, xn, static_cast<const BlockQ8A*>(xq),
                           h_.as<float>(), hq_.as<BlockQ8A>(),
                           y_.as<float>(), s);
        return;
      }
      // Stream-all experts this chunk did not route have no tiles: nothing runs.
      moe_experts_listed(experts, table_view(T), dev, static_cast<int32_t>(list.size()), listed_tiles(table, list), xn,
                         static_cast<const uint16_t*>(xq), scratch(), y_.as<float>(), s);
    };
    run(0);
    for (size_t g = 1; g < groups.size(); ++g) {
      const int32_t last = ends[g - 1] - 1;
      timer_.mark(s, &times.expert_ms);
      ring_->wait(last, s);
      timer_.mark(s, &times.stream_wait_ms);
      run(g);
      ring_->release_through(last, s);
    }
    if (!on_cpu.empty()) host_->finish_rows(il, table, on_cpu, y_.as<float>(), s);
  }

  // A stream-all chunk shared with the helper (set_helper) or the
  // peer_device: when the share is positive, starts the peer's ring on its
  // experts and leaves this ring's schedule of the rest in
  // own_lists_schedule_; returns whether the chunk is shared.
  bool start_share(int64_t T, int32_t pos0, core::PhaseTimes& times) {
    PeerScratch peer;
    core::PeerTerms terms = helper_terms_;
    if (helper_) {
      peer = *helper_;
    } else if (peer_storage_) {
      peer = peer_storage_->scratch();
      terms = peer_terms_;
      if (terms.share < 0)
        terms.share = core::choose_peer_share(core::peer_setup(model_, *w_.experts, T, pos0, terms, w_.link_GBps)).share;
    }
    if (!peer.ring || terms.share <= 0) return false;
    const core::StageExperts& x = *w_.experts;
    prefill::SharedStreamAll split = prefill::split_stream_all(x, terms.share);
    own_lists_schedule_ = prefill::lists_schedule(std::move(split.primary), x.plan.ring_slots, next_slot_);
    if (!share_) share_ = std::make_unique<PeerShare>(device_, c_, chunk_);
    share_->begin(peer, terms, x, w_.arena.as<uint8_t>(), std::move(split.peer), T);
    share_value_ = terms.share;
    sharing_ = true;
    const core::PeerSetup setup = core::peer_setup(model_, x, T, pos0, terms, w_.link_GBps);
    times.add_peer_prediction(terms.share, core::predict_peer_time_s(setup, 0), core::predict_peer_time_s(setup, terms.share));
    return true;
  }

  // This executor's stream, ring and prompt buffers, lent to another stage's
  // executor as its helper while this one is idle (the table and pointer
  // tables of the peer's work go into router_, which this stage's next chunk rewrites).
  PeerScratch lend() {
    PeerScratch p;
    p.device = device_;
    p.stream = stream_.get();
    p.ring = ring_.get();
    p.next_slot = &next_slot_;
    p.chunk = chunk_;
    p.xn = xn_.as<float>();
    p.xh = xq_.as<uint16_t>();
    p.w = weights_.as<float>();
    p.moe = scratch();
    p.y = y_.as<float>();
    p.table = router_.as<int32_t>();
    p.table_ints = router_.size() / sizeof(int32_t);
    return p;
  }

  // A stream-all chunk's expert lists, uploaded once at its start: per layer
  // the resident experts (ascending; those the chunk does not route get no
  // tiles), then the streamed ones in schedule order.
  void upload_chunk_lists() {
    const core::StageExperts& x = *w_.experts;
    std::vector<int32_t> lists;
    list_at_.assign(static_cast<size_t>(plan_.n_layers), 0);
    n_listed_resident_.assign(static_cast<size_t>(plan_.n_layers), 0);
    for (int32_t l = 0; l < plan_.n_layers; ++l) {
      list_at_[l] = lists.size();
      for (int32_t e = 0; e < c_.n_expert; ++e)
        if (!x.streamed[l][e]) lists.push_back(e);
      n_listed_resident_[l] = static_cast<int32_t>(lists.size() - list_at_[l]);
      for (int32_t i = schedule_.layer_begin[l]; i < schedule_.layer_begin[l + 1]; ++i)
        lists.push_back(schedule_.computes[i].expert);
    }
    const size_t bytes = lists.size() * sizeof(int32_t);
    if (h_lists_.size() < bytes) {
      h_lists_ = HostBuffer(bytes);
      d_lists_ = DeviceBuffer(device_, bytes);
    }
    std::copy(lists.begin(), lists.end(), h_lists_.as<int32_t>());
    copy_async(d_lists_.data(), h_lists_.data(), bytes, stream_.get());
  }

  // The experts of layer il in a stream-all chunk, queued without waiting
  // for the router on the host: the row table is built on the device, the
  // lists were uploaded at the chunk start, and each group's tile count is
  // read on the device (the host passes a bound). The resident experts run
  // first, then the streamed ones a batch at a time as their loads land.
  void moe_stream_all(int32_t il, int64_t T, const int32_t* ids, const float* xn, const uint16_t* xq,
                      core::PhaseTimes& times) {
    cudaStream_t s = stream_.get();
    const DeviceLayer& l = w_.layers[il];
    const int64_t rows = T * c_.n_expert_used;
    build_table(ids, T);
    timer_.mark(s, &times.grouping_ms);
    const MoeExperts experts{expert_set(l[Role::FfnGateExps], il, 0), expert_set(l[Role::FfnUpExps], il, 1),
                             expert_set(l[Role::FfnDownExps], il, 2)};
    const int32_t* lists = d_lists_.as<int32_t>() + list_at_[il];
    auto run = [&](int32_t first, int32_t n) {
      moe_experts_listed(experts, table_view(T), lists + first, n, gemm_max_tiles(rows, n), xn, xq, scratch(),
                         y_.as<float>(), s);
    };
    const int32_t n_res = n_listed_resident_[il];
    const int32_t begin = schedule_.layer_begin[il], end = schedule_.layer_begin[il + 1];
    const std::vector<int32_t> ends = prefill::ring_batch_ends(begin, end, ring_->n_slots());
    // The resident experts run in the first batch's launch: one launch fewer, each launch's last wave being
    // partly idle (the loads ran ahead across layers, so the first batch has mostly landed by now).
    if (ends.empty()) run(0, n_res);
    for (int32_t first = 0; int32_t e : ends) {
      timer_.mark(s, &times.expert_ms);
      ring_->wait(e - 1, s);
      timer_.mark(s, &times.stream_wait_ms);
      const int32_t to = n_res + (e - begin);
      run(first, to - first);
      first = to;
      ring_->release_through(e - 1, s);
    }
  }

  static WeightSet weights_of(const DeviceTensor& t) {
    WeightSet w;
    w.type = t.type;
    w.base = t.data;
    w.stride = t.stride;
    w.n_in = t.n_in;
    w.n_out = t.n_out;
    return w;
  }

  const core::Model& model_;
  const core::ModelConfig& c_;
  const DeviceWeights& w_;
  const core::StagePlan plan_;
  int device_;
  int32_t n_ctx_, chunk_;
  core::KvType kv_type_;
  Stream stream_;
  PhaseTimer timer_;
  bool graphs_on_ = false;
  // The chunk enqueue is queuing: what the layer ops read besides the buffers. d_pos: the rows' positions on the
  // device; d_n_kv: the key count decode attention reads (pos0 + 1), max_kv its bound; rows: the head's.
  struct Run {
    const core::StageChunk* chunk = nullptr;
    int64_t T = 0;
    int64_t rows = 0;
    const int32_t* d_pos = nullptr;
    const int32_t* d_n_kv = nullptr;
    int32_t max_kv = 0;
    core::PhaseTimes* times = nullptr;
    const std::atomic<bool>* cancel = nullptr;  // null during a capture
  } run_;
  // What one layer's step leaves for the next ones: where q, k and v are (k and v may lie in q's buffer), the
  // experts' path and their second form of xn (null for float gate/up).
  struct LayerState {
    float* q = nullptr;
    float* k = nullptr;
    float* v = nullptr;
    bool vector_path = false;
    const void* xq = nullptr;
  } layer_;
  bool attn_norm_done_ = false;  // the previous layer's combine left the next attention's norm in xn_ / xq_
  // xq_, hq_: activations in their second form for the quantized matrix kernels, Q8A rows (decode) or F16 rows
  // (the GEMMs); act_bytes sizes them for either.
  std::vector<DecodeGraph> graphs_;
  std::vector<LayerKv> kv_;
  uint64_t kv_bytes_ = 0;
  DeviceBuffer x_, xn_, xq_, q_, k_, v_, att_, o_, router_, weights_, ids_all_, y_, h_, hq_, tiles_, tile_count_,
      table_, tok_pos_, dec_ws_, logits_;
  std::unique_ptr<DenseGemm> dense_;  // dense prompt GEMMs of long chunks (null for short chunks or STRATA_GEMM set)
  size_t dec_ws_bytes_ = 0;
  int64_t max_tiles_ = 0;
  HostBuffer h_tok_pos_, h_ids_, h_table_;
  // Streaming (null ring_ when every expert of the stage is resident).
  std::unique_ptr<DeviceRing> ring_;
  prefill::RingSchedule schedule_;
  core::RingMode mode_ = core::RingMode::Routed;
  int32_t next_slot_ = 0;
  HostBuffer h_ptrs_;
  DeviceBuffer d_ptrs_;
  uint64_t generation_ = 0;  // of the residency the pointer tables reflect
  std::unique_ptr<DecodeHost> host_;  // decode's CPU share of the streamed experts
  // A stream-all chunk's expert lists (upload_chunk_lists).
  HostBuffer h_lists_;
  DeviceBuffer d_lists_;
  std::vector<size_t> list_at_;
  std::vector<int32_t> n_listed_resident_;
  // Sharing stream-all chunks: a peer_device (its storage owned here) or a
  // stage helper (another executor's, for the chunks the pipeline says).
  core::PeerTerms peer_terms_, helper_terms_;
  std::unique_ptr<PeerStorage> peer_storage_;
  std::unique_ptr<PeerScratch> helper_;
  std::unique_ptr<PeerShare> share_;
  prefill::RingSchedule own_lists_schedule_;
  bool sharing_ = false;
  double share_value_ = 0;
};

}  // namespace

std::unique_ptr<core::Executor> make_executor(const core::Model& model, const DeviceWeights& weights,
                                              const core::StagePlan& plan, int device,
                                              const core::SessionOptions& options) {
  return std::make_unique<CudaExecutor>(model, weights, plan, device, options);
}

}  // namespace strata::cuda
