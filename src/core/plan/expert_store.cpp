// Blob layout and packing, a stage's expert placement from the model's sizes, and the host arena fill.
#include "core/plan/expert_store.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/base/bytes.h"
#include "core/base/error.h"
#include "core/plan/cost.h"
#include "core/plan/stage_buffers.h"
#include "core/quant/quant.h"

namespace strata::core {
namespace {

uint64_t bytes_of(const TensorRef& t) { return t.present() ? t.nbytes : 0; }

}  // namespace

BlobLayout blob_layout(const LayerWeights& l) {
  BlobLayout b;
  b.gate = 0;
  b.up = align_up(l[TensorRole::FfnGateExps].expert_bytes(), kBlobAlign);
  b.down = b.up + align_up(l[TensorRole::FfnUpExps].expert_bytes(), kBlobAlign);
  b.bytes = b.down + align_up(l[TensorRole::FfnDownExps].expert_bytes(), kBlobAlign);
  return b;
}

void pack_blob(const LayerWeights& l, const BlobLayout& b, int32_t e, uint8_t* dst) {
  std::memset(dst, 0, b.bytes);
  for (const auto& [role, offset] : {std::pair{TensorRole::FfnGateExps, b.gate}, std::pair{TensorRole::FfnUpExps, b.up},
                                     std::pair{TensorRole::FfnDownExps, b.down}})
    std::memcpy(dst + offset, l[role].expert(e), l[role].expert_bytes());
}

StageExperts place_stage_experts(const Model& model, const StagePlan& stage, const StageMemory& memory) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const int32_t ctx = memory.n_ctx > 0 ? memory.n_ctx : std::min(c.n_ctx_train, 4096);
  const int64_t T = memory.chunk, E = c.n_embd;

  PlacementInput in;
  in.budget = memory.budget;
  if (stage.has_embd) in.fixed_bytes += bytes_of(w.token_embd);
  if (stage.has_head) in.fixed_bytes += bytes_of(w.output) + bytes_of(w.output_norm);
  uint64_t blob_bytes = 0;
  int64_t max_dense_weights = 0;  // of the GPU's F16 copy (dense_f16_values)
  for (int32_t il = stage.first_layer; il < stage.end_layer(); ++il) {
    const LayerWeights& l = w.layers[il];
    for_each_tensor(l, [&](TensorRole role, const TensorRef& t) {
      const TensorKind kind = kind_of(role);
      if (kind == TensorKind::Matrix || kind == TensorKind::Router)
        max_dense_weights =
            std::max(max_dense_weights, dense_f16_values(t.type, t.ne[0], t.ne[1], kind == TensorKind::Router));
    });
    in.dense_bytes.push_back(layer_dense_bytes(l));
    const uint64_t blob = blob_layout(l).bytes;
    blob_bytes = std::max(blob_bytes, blob);
    in.expert_bytes.emplace_back(static_cast<size_t>(c.n_expert), blob);
  }
  in.arena_holds_resident = memory.adaptive;
  if (!memory.profile.empty()) {
    const auto n = static_cast<size_t>(c.n_expert);
    if (memory.profile.size() != static_cast<size_t>(c.n_layer) * n)
      fail(STRATA_ERR_INVALID_ARGUMENT, "placement: a profile of {} counts for {} layers x {} experts",
           memory.profile.size(), c.n_layer, c.n_expert);
    for (int32_t il = stage.first_layer; il < stage.end_layer(); ++il) {
      const auto row = memory.profile.subspan(static_cast<size_t>(il) * n, n);
      in.profile.emplace_back(row.begin(), row.end());
    }
  }
  in.kv_bytes = uint64_t(2) * ctx * c.n_head_kv * (c.head_dim_k + c.head_dim_v) * stage.n_layers;

  // Prompt buffers: the MoE buffers of stage_buffers.h plus attention's (q, k, v, attention out, o, the residual).
  BufferShape shape;
  shape.chunk = T;
  shape.n_embd = E;
  shape.n_ff_exp = c.n_ff_exp;
  shape.k = c.n_expert_used;
  shape.n_expert = c.n_expert;
  // The quantized copies hold Q8A rows (decode) or the F16 rows of the GPU's prompt GEMMs, the larger.
  const auto act_row = [](int64_t n) { return std::max<uint64_t>(activation_row_size(ActivationKind::Q8A, n), 2 * n); };
  shape.xq_row_bytes = act_row(E);
  shape.hq_row_bytes = act_row(c.n_ff_exp);
  const uint64_t attention = static_cast<uint64_t>(T) * (c.q_dim() + c.k_dim() + c.v_dim() +
                                                         static_cast<int64_t>(c.n_head) * c.head_dim_v + 2 * E) * 4;
  in.prompt_bytes = layout_stage_buffers(shape, 0, 0).prompt_bytes() + attention +
                    (memory.dense_f16 ? dense_f16_bytes(T, max_dense_weights) : 0);

  MoeShape m;
  m.n_layer = stage.n_layers;
  m.n_expert = c.n_expert;
  m.k = c.n_expert_used;
  m.n_embd = E;
  m.n_ff_exp = c.n_ff_exp;
  m.blob_bytes = blob_bytes;
  in.max_slots = std::max(in.min_slots, 2 * c.n_expert);
  // While a layer's attention, router and grouping run, the link can only fill
  // slots: a ring that covers that time keeps it busy. The GPU reads each
  // batch of streamed experts as a unit, so small rings also starve its GEMMs;
  // the cost model may ask for more.
  const LinkRates link;
  const ComputeRates rates;
  const double cover = dense_time_s(rates, T, 0) * link.h2d_GBps * 1e9 / static_cast<double>(blob_bytes);
  const int32_t by_cost = choose_ring_depth(m, T, 0, RingMode::StreamAll, in.min_slots, in.max_slots, link, rates);
  in.ring_slots_wanted = std::clamp(std::max(by_cost, static_cast<int32_t>(std::ceil(cover))), in.min_slots,
                                    in.max_slots);
  StageExperts out;
  out.stage = stage;
  out.chunk = memory.chunk;
  out.plan = plan_placement(in);
  out.usage.assign(out.plan.resident.size(), 0.0);
  for (int32_t l = 0; l < stage.n_layers; ++l) {
    out.layouts.push_back(blob_layout(w.layers[stage.first_layer + l]));
    out.streamed.push_back(out.plan.streamed_mask(l));
    if (!in.profile.empty())
      for (int32_t e = 0; e < c.n_expert; ++e) out.usage[out.plan.index(l, e)] = in.profile[l][e];
  }
  return out;
}

StageExperts place_for_default_chunk(const Model& model, const StagePlan& stage, uint64_t budget,
                                     const ExpertOptions& options) {
  StageMemory memory;
  memory.budget = budget;
  memory.adaptive = options.adaptive;
  memory.profile = options.profile;
  memory.dense_f16 = options.dense_f16;
  // A placement for `chunk`, or none where its buffers do not fit.
  auto place = [&](int32_t chunk) -> std::optional<StageExperts> {
    memory.chunk = chunk;
    try {
      return place_stage_experts(model, stage, memory);
    } catch (const Error& e) {
      if (e.status() != STRATA_ERR_OUT_OF_MEMORY) throw;
      return std::nullopt;
    }
  };
  std::optional<StageExperts> large = options.single_stage ? place(kStreamingChunk) : std::nullopt;
  if (large && !large->streams()) return std::move(*large);
  memory.chunk = kResidentChunk;
  StageExperts small = place_stage_experts(model, stage, memory);  // over budget: the error names the parts
  if (!small.streams()) return small;
  if (!options.single_stage) large = place(kStreamingChunk);
  return large ? std::move(*large) : std::move(small);
}

uint64_t all_streamed_budget(const Model& model, const StagePlan& stage, int32_t n_slots, const StageMemory& memory) {
  StageMemory all = memory;
  all.budget = UINT64_MAX / 4;
  const PlacementPlan p = place_stage_experts(model, stage, all).plan;
  uint64_t blob = 0;
  for (int32_t l = stage.first_layer; l < stage.end_layer(); ++l)
    blob = std::max(blob, blob_layout(model.weights().layers[l]).bytes);
  return p.fixed_bytes + p.dense_bytes + p.kv_bytes + p.prompt_bytes + static_cast<uint64_t>(n_slots) * blob;
}

void fill_arena(const Model& model, const StageExperts& x, uint8_t* arena, const ProgressFn& progress) {
  uint64_t done = 0;
  for (int32_t l = 0; l < x.plan.n_layer; ++l) {
    for (int32_t e = 0; e < x.plan.n_experts(l); ++e) {
      if (x.arena_offset(l, e) == UINT64_MAX) continue;
      const BlobLayout& b = x.layouts[l];
      pack_blob(model.weights().layers[x.stage.first_layer + l], b, e, arena + x.arena_offset(l, e));
      done += b.bytes;
      if (progress && !progress(done, x.plan.arena_bytes)) fail(STRATA_ABORTED, "model: load cancelled");
    }
  }
}

std::vector<uint64_t> StageExperts::blob_bytes() const {
  std::vector<uint64_t> bytes(plan.resident.size());
  for (int32_t l = 0; l < plan.n_layer; ++l)
    for (int32_t e = 0; e < plan.n_experts(l); ++e) bytes[plan.index(l, e)] = layouts[l].bytes;
  return bytes;
}

void StageExperts::apply(std::span<const ExpertSwap> swaps) {
  apply_swaps(plan, swaps, blob_bytes());
  for (int32_t l = 0; l < plan.n_layer; ++l) streamed[l] = plan.streamed_mask(l);
}

ArenaPointers arena_pointers(const StageExperts& x, const uint8_t* arena) {
  ArenaPointers p;
  const size_t n = x.plan.resident.size();
  p.gate.assign(n, nullptr);
  p.up.assign(n, nullptr);
  p.down.assign(n, nullptr);
  for (int32_t l = 0; l < x.plan.n_layer; ++l) {
    for (int32_t e = 0; e < x.plan.n_experts(l); ++e) {
      if (x.arena_offset(l, e) == UINT64_MAX) continue;
      const size_t i = static_cast<size_t>(x.plan.index(l, e));
      const uint8_t* blob = arena + x.arena_offset(l, e);
      const BlobLayout& b = x.layouts[l];
      p.gate[i] = blob + b.gate;
      p.up[i] = blob + b.up;
      p.down[i] = blob + b.down;
    }
  }
  return p;
}

PeerSetup peer_setup(const Model& model, const StageExperts& x, int64_t tokens, int64_t ctx_start,
                     const PeerTerms& terms, double link_GBps) {
  const ModelConfig& c = model.config();
  PeerSetup s;
  s.shape.n_layer = x.stage.n_layers;
  s.shape.n_expert = c.n_expert;
  s.shape.k = c.n_expert_used;
  s.shape.n_embd = c.n_embd;
  s.shape.n_ff_exp = c.n_ff_exp;
  s.shape.blob_bytes = max_blob_bytes(x);
  for (const std::vector<bool>& mask : x.streamed)
    s.shape.streamed.push_back(static_cast<int32_t>(std::count(mask.begin(), mask.end(), true)));
  s.tokens = tokens;
  s.ctx_start = ctx_start;
  if (link_GBps > 0) s.primary_link.h2d_GBps = s.peer_link.h2d_GBps = link_GBps;
  s.pieces = terms.pieces;
  s.value_bytes = terms.f32 ? 4 : 2;
  return s;
}

uint64_t max_blob_bytes(const StageExperts& x) {
  uint64_t n = 0;
  for (const BlobLayout& b : x.layouts) n = std::max(n, b.bytes);
  return n;
}

}  // namespace strata::core
