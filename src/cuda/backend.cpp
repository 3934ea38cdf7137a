// The CUDA backend: a model's weights resident on one device, and the factory of CUDA executors.
#include "cuda/backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <initializer_list>

#include "core/base/bytes.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/plan/expert_store.h"
#include "core/plan/residency.h"
#include "core/quant/fp16.h"
#include "core/runtime/backends.h"
#include "core/runtime/thread_pool.h"
#include "cpu/moe.h"
#include "cuda/executor.h"
#include "cuda/gemm/type_paths.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/runtime.h"
#include "cuda/runtime/stream.h"

namespace strata::cuda {
namespace {

using Role = core::TensorRole;

constexpr size_t kAlign = 256;
constexpr size_t kReserve = size_t(512) << 20;  // left free for the driver, cuBLAS and sessions' first buffers

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Lays every tensor out in one device allocation, then copies them up in
// pieces through a pinned staging buffer (reporting progress).
class Uploader {
 public:
  // Reserves space for a tensor's bytes; returns its offset.
  size_t reserve(size_t bytes) {
    const size_t off = total_;
    total_ = align_up(total_ + bytes);
    return off;
  }
  size_t total() const { return total_; }

  struct Copy {
    size_t offset;
    const uint8_t* src;
    size_t bytes;
    std::vector<float> converted;  // norms stored as F32 on the device
  };
  std::vector<Copy> copies;

 private:
  size_t total_ = 0;
};

class MappedRoute final : public core::RouteBuffer {
 public:
  explicit MappedRoute(size_t floats)
      : buffer_(floats * sizeof(float), cudaHostAllocPortable | cudaHostAllocMapped) {}
  float* data() override { return buffer_.device_as<float>(); }

 private:
  HostBuffer buffer_;
};

// The matrices as one matrix of their rows, in order, when they are adjacent
// in memory with one type and row length; an empty tensor (no data) otherwise.
DeviceTensor stacked_rows(std::initializer_list<const DeviceTensor*> parts) {
  const DeviceTensor& first = **parts.begin();
  DeviceTensor all = first;
  all.n_out = 0;
  const uint8_t* next = static_cast<const uint8_t*>(first.data);
  const size_t row = core::row_size(first.type, first.n_in);
  for (const DeviceTensor* t : parts) {
    if (t->data == nullptr || t->data != next || t->type != first.type || t->n_in != first.n_in || t->stride != 0)
      return {};
    next += row * static_cast<size_t>(t->n_out);
    all.n_out += t->n_out;
  }
  return all;
}

class CudaBackend final : public core::Backend {
 public:
  CudaBackend(const core::Model& model, int device, const core::StagePlan& plan, uint64_t budget,
              const core::ExpertOptions& options, const core::ProgressFn& progress)
      : model_(model), device_(device), plan_(plan) {
    const core::ModelWeights& w = model.weights();
    require_stage_kernels(w, plan, options.peer.has_value());
    if (model.config().n_expert > 0) {
      core::StageExperts experts = core::place_for_default_chunk(model, plan, budget, options);
      chunk_ = experts.chunk;
      if (experts.streams()) weights_.experts = std::make_unique<core::StageExperts>(std::move(experts));
    }
    const bool streaming = weights_.experts != nullptr;
    if (options.peer) weights_.peer_device = options.peer->ordinal;
    Uploader up;
    // A matrix; the expert tensors only by shape when experts are placed one by one (streaming).
    auto matrix = [&](const core::TensorRef& t, DeviceTensor& d, size_t& offset) {
      const bool experts = t.ne[2] > 1;
      offset = SIZE_MAX;
      if (!(streaming && experts)) {
        offset = up.reserve(t.nbytes);
        up.copies.push_back({offset, t.data, t.nbytes, {}});
      }
      d.type = t.type;
      d.n_in = t.ne[0];
      d.n_out = t.ne[1];
      d.stride = t.ne[2] > 1 ? t.expert_bytes() : 0;
    };
    auto norm = [&](const core::TensorRef& t, size_t& offset) {
      std::vector<float> f(static_cast<size_t>(t.ne[0]));
      core::dequantize_row(t.type, t.data, f.data(), t.ne[0]);
      offset = up.reserve(f.size() * sizeof(float));
      up.copies.push_back({offset, nullptr, f.size() * sizeof(float), std::move(f)});
    };

    // Each tensor's offset in the allocation by role (SIZE_MAX: none). The stage's layers only; the embedding on
    // the first stage, the head on the last.
    using LayerOffsets = std::array<size_t, core::kTensorRoles>;
    std::vector<LayerOffsets> lo(static_cast<size_t>(plan.n_layers));
    size_t embd_off = SIZE_MAX, out_off = SIZE_MAX, out_norm_off = SIZE_MAX;
    if (plan.has_embd) matrix(w.token_embd, weights_.token_embd, embd_off);
    if (plan.has_head) {
      if (plan.has_embd && w.output.data == w.token_embd.data) {
        weights_.output = weights_.token_embd;
        out_off = embd_off;
      } else {
        matrix(w.output, weights_.output, out_off);
      }
      norm(w.output_norm, out_norm_off);
    }
    weights_.layers.resize(lo.size());
    for (size_t i = 0; i < lo.size(); ++i) {
      const core::LayerWeights& l = w.layers[plan.first_layer + i];
      DeviceLayer& d = weights_.layers[i];
      lo[i].fill(SIZE_MAX);
      core::for_each_tensor(l, [&](Role role, const core::TensorRef& t) {
        size_t& offset = lo[i][static_cast<size_t>(role)];
        if (core::kind_of(role) == core::TensorKind::Vector) {
          norm(t, offset);
          d[role] = {core::GgmlType::F32, nullptr, t.ne[0], 1, 0};
        } else {
          matrix(t, d[role], offset);
        }
      });
    }
    // Streaming: each resident expert as one blob (gate | up | down) in the same allocation.
    std::vector<std::vector<size_t>> blob_off(lo.size());
    if (streaming) {
      const core::StageExperts& x = *weights_.experts;
      for (size_t i = 0; i < lo.size(); ++i) {
        const core::LayerWeights& l = w.layers[plan.first_layer + i];
        const core::BlobLayout& b = x.layouts[i];
        blob_off[i].assign(static_cast<size_t>(model.config().n_expert), SIZE_MAX);
        for (int32_t e = 0; e < model.config().n_expert; ++e) {
          if (x.streamed[i][e]) continue;
          const size_t off = up.reserve(b.bytes);
          blob_off[i][e] = off;
          for (const auto& [role, part] : {std::pair{Role::FfnGateExps, b.gate}, std::pair{Role::FfnUpExps, b.up},
                                           std::pair{Role::FfnDownExps, b.down}})
            up.copies.push_back({off + part, l[role].expert(e), l[role].expert_bytes(), {}});
        }
      }
    }

    const DeviceInfo info = device_info(device);
    if (up.total() + kReserve > info.free_mem)
      core::fail(STRATA_ERR_OUT_OF_MEMORY,
                 "cuda: the weights need {:.2f} GiB of VRAM (plus {:.2f} GiB reserve) but {} has {:.2f} GiB free",
                 up.total() / 1073741824.0, kReserve / 1073741824.0, info.name, info.free_mem / 1073741824.0);
    storage_ = DeviceBuffer(device, up.total());
    weights_.bytes = up.total();
    uint8_t* base = storage_.as<uint8_t>();
    auto at = [&](size_t off) -> const void* { return off == SIZE_MAX ? nullptr : base + off; };
    auto fat = [&](size_t off) { return static_cast<const float*>(at(off)); };
    weights_.token_embd.data = at(embd_off);
    weights_.output.data = at(out_off);
    weights_.output_norm = fat(out_norm_off);
    for (size_t i = 0; i < lo.size(); ++i) {
      DeviceLayer& d = weights_.layers[i];
      for (size_t r = 0; r < core::kTensorRoles; ++r) d.tensors[r].data = at(lo[i][r]);
      d.wqkv = stacked_rows({&d[Role::AttnQ], &d[Role::AttnK], &d[Role::AttnV]});
      if (streaming) {
        d.blobs.resize(blob_off[i].size());
        for (size_t e = 0; e < blob_off[i].size(); ++e) d.blobs[e] = static_cast<const uint8_t*>(at(blob_off[i][e]));
      }
    }
    upload(up, progress);
    if (streaming) {
      // The streamed blobs in pinned host memory, packed from the mapping once.
      const core::PlacementPlan& p = weights_.experts->plan;
      weights_.arena = HostBuffer(p.arena_bytes);
      const uint64_t uploaded = up.total();
      core::fill_arena(model, *weights_.experts, weights_.arena.as<uint8_t>(), [&](uint64_t done, uint64_t total) {
        return !progress || progress(uploaded + done, uploaded + total);
      });
      weights_.link_GBps = measure_h2d_GBps(device, weights_.arena.data(), std::min<size_t>(p.arena_bytes, size_t(64) << 20));
      weights_.cpu = measure_cpu_decode(model);
      core::log_info("cuda: layers {}..{}: {} experts resident, {} streamed from {} of pinned host memory ({:.1f} "
                     "GB/s measured) through a ring of {} slots per session",
                     plan.first_layer, plan.end_layer() - 1, p.n_resident(), p.streamed.size(),
                     core::format_bytes(p.arena_bytes), weights_.link_GBps, p.ring_slots);
      const core::CpuDecodeRate start = core::CpuDecodeTracker(weights_.cpu).rate();
      if (start.GBps == weights_.cpu.GBps)
        core::log_info("cuda: decode computes streamed experts on {} CPU threads at {:.1f} GB/s of weights (measured "
                       "while the link streams) and {:.0f} us a layer",
                       decode_cpu_threads(model.n_threads()), weights_.cpu.GBps, weights_.cpu.fixed_s * 1e6);
      else
        core::log_info("cuda: decode computes streamed experts on {} CPU threads; the load's measurement ({:.1f} "
                       "GB/s, {:.0f} us a layer) looks spoiled by a busy host, so decode starts from {:.1f} GB/s "
                       "and follows the rate it observes",
                       decode_cpu_threads(model.n_threads()), weights_.cpu.GBps, weights_.cpu.fixed_s * 1e6,
                       start.GBps);
    }
    core::log_info("cuda: {} ({}), layers {}..{}: {:.2f} GiB of weights resident", info.name, device,
                   plan.first_layer, plan.end_layer() - 1, up.total() / 1073741824.0);
  }

  const char* name() const override { return "cuda"; }

  // Swaps copy each incoming expert's blob from the arena over the outgoing
  // one's VRAM, on a side stream; no executor runs meanwhile (Model::adapt).
  void adapt(std::span<const uint64_t> routed, int32_t max_swaps) override {
    if (!weights_.experts) return;
    core::StageExperts& x = *weights_.experts;
    const auto n = static_cast<size_t>(model_.config().n_expert);
    core::decay_usage(x.usage, routed.subspan(plan_.first_layer * n, plan_.n_layers * n));
    const std::vector<core::ExpertSwap> swaps = core::plan_swaps(x.plan, x.usage, x.blob_bytes(), max_swaps);
    if (swaps.empty()) return;
    ScopedDevice scope(device_);
    Stream side(device_);
    for (const core::ExpertSwap& s : swaps) {
      const size_t li = s.in / n, ei = s.in % n, lo = s.out / n, eo = s.out % n;
      copy_async(const_cast<uint8_t*>(weights_.layers[lo].blobs[eo]),
                 weights_.arena.as<uint8_t>() + x.arena_offset(li, ei), x.layouts[li].bytes, side.get());
    }
    side.synchronize();
    // The copies landed: only now does the bookkeeping follow (a failed copy throws before it).
    for (const core::ExpertSwap& s : swaps) {
      const size_t li = s.in / n, ei = s.in % n, lo = s.out / n, eo = s.out % n;
      weights_.layers[li].blobs[ei] = weights_.layers[lo].blobs[eo];
      weights_.layers[lo].blobs[eo] = nullptr;
    }
    x.apply(swaps);
    ++weights_.generation;
  }
  uint64_t generation() const override { return weights_.generation; }
  core::ExpertResidency residency() const override {
    core::ExpertResidency r;
    r.chunk = chunk_;
    if (!weights_.experts) {
      r.resident = plan_.n_layers * model_.config().n_expert;
      return r;
    }
    const core::PlacementPlan& p = weights_.experts->plan;
    r.resident = p.n_resident();
    r.streamed = static_cast<int32_t>(p.streamed.size());
    r.streamed_bytes = p.streamed_bytes;
    r.ring_slots = p.ring_slots;
    r.link_GBps = weights_.link_GBps;
    return r;
  }
  uint64_t device_bytes() const override { return storage_.size(); }

  std::unique_ptr<core::Executor> new_executor(const core::SessionOptions& options) const override {
    return make_executor(model_, weights_, plan_, device_, options);
  }

  // Mapped and portable: every device's copy kernels reach it.
  std::unique_ptr<core::RouteBuffer> new_route(size_t floats) const override {
    return std::make_unique<MappedRoute>(floats);
  }

 private:
  // The CPU's decode cost over streamed experts, measured as decode runs them:
  // one token through 1 and through 4 experts of a layer at once
  // (experts_rows, from the arena, on a pool that polls as decode's does),
  // best of 3 rounds, each round on experts not read before (the arena is
  // far larger than the caches), while the link streams the arena to the
  // device as the ring does beside the CPU's share (both read host memory).
  // A fixed cost above kImplausibleFixedS (a busy host: a dispatch costs
  // microseconds) is measured once more.
  core::CpuDecodeRate measure_cpu_decode(const core::Model& model) const {
    constexpr double kImplausibleFixedS = 1e-3;
    const core::StageExperts& x = *weights_.experts;
    const core::PlacementPlan& p = x.plan;
    // The layer with the most streamed experts.
    std::vector<std::vector<int32_t>> by_layer(plan_.n_layers);
    for (const core::ExpertRef& r : p.streamed) by_layer[r.layer].push_back(r.expert);
    const auto layer = static_cast<int32_t>(
        std::max_element(by_layer.begin(), by_layer.end(), [](auto& a, auto& b) { return a.size() < b.size(); }) -
        by_layer.begin());
    const std::vector<int32_t>& experts = by_layer[layer];
    constexpr int kMany = 4, kRounds = 3;
    if (experts.size() < 2) return {};
    const core::ArenaPointers ptrs = core::arena_pointers(x, weights_.arena.as<uint8_t>());
    const core::LayerWeights& l = model.weights().layers[plan_.first_layer + layer];
    core::cpu::MoeWeights w = core::cpu::MoeWeights::of(l);
    const size_t base = static_cast<size_t>(p.index(layer, 0));
    w.gate.ptrs = &ptrs.gate[base];
    w.up.ptrs = &ptrs.up[base];
    w.down.ptrs = &ptrs.down[base];
    core::ThreadPool pool(decode_cpu_threads(model.n_threads()), kCpuDecodeSpinUs);
    const int64_t E = model.config().n_embd;
    std::vector<float> in(static_cast<size_t>(E) * kMany, 0.5f), out(in.size());
    size_t next = 0;  // experts in order, wrapping when a layer has few streamed ones
    auto run = [&](int c) {
      std::vector<core::cpu::ExpertRows> jobs;
      for (int i = 0; i < c; ++i)
        jobs.push_back({experts[next++ % experts.size()], &in[i * E], 1, &out[i * E]});
      const auto t0 = std::chrono::steady_clock::now();
      core::cpu::experts_rows(w, jobs, &pool);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    LinkLoad link(device_, weights_.arena.as<uint8_t>(), p.arena_bytes);
    core::CpuDecodeRate rate;
    for (int attempt = 0; attempt < 2; ++attempt) {
      link.start();
      run(1);  // warms the pool
      double t1 = 1e30, tc = 1e30;
      for (int r = 0; r < kRounds; ++r) {
        t1 = std::min(t1, run(1));
        tc = std::min(tc, run(kMany));
      }
      link.finish();
      rate = core::cpu_decode_rate(static_cast<double>(x.layouts[layer].bytes), t1, kMany, tc);
      if (rate.GBps > 0 && rate.fixed_s < kImplausibleFixedS) break;
    }
    return rate;
  }

  // The link kept busy while the CPU's decode rate is measured: the arena's
  // pieces in turn copied into one small device buffer, queued well past the
  // measurement's length (about a millisecond at 30 GB/s). Without the buffer
  // (no device memory to spare) the CPU is measured alone.
  class LinkLoad {
   public:
    LinkLoad(int device, const uint8_t* arena, uint64_t arena_bytes)
        : device_(device), arena_(arena), arena_bytes_(arena_bytes), piece_(std::min<uint64_t>(arena_bytes, kPiece)) {
      try {
        ScopedDevice on(device);
        stream_ = Stream(device);
        buffer_ = DeviceBuffer(device, piece_);
      } catch (const core::Error&) {
        piece_ = 0;
      }
    }
    void start() {
      if (piece_ == 0) return;
      ScopedDevice on(device_);
      for (int i = 0; i < kPieces; ++i, offset_ = offset_ + 2 * piece_ > arena_bytes_ ? 0 : offset_ + piece_)
        copy_async(buffer_.data(), arena_ + offset_, piece_, stream_.get());
    }
    void finish() {
      if (piece_ != 0) stream_.synchronize();
    }

   private:
    static constexpr uint64_t kPiece = uint64_t(16) << 20;
    static constexpr int kPieces = 32;  // 512 MiB: about 10 ms at 55 GB/s
    int device_;
    const uint8_t* arena_;
    uint64_t arena_bytes_, piece_, offset_ = 0;
    Stream stream_;
    DeviceBuffer buffer_;
  };

  // Copies through two pinned staging buffers so the memcpy from the mapping
  // overlaps the upload of the previous piece.
  void upload(const Uploader& up, const core::ProgressFn& progress) {
    constexpr size_t kPiece = size_t(64) << 20;
    ScopedDevice scope(device_);
    Stream stream(device_);
    HostBuffer staging[2] = {HostBuffer(kPiece), HostBuffer(kPiece)};
    Event done[2] = {Event(device_), Event(device_)};
    bool used[2] = {false, false};
    int which = 0;
    uint64_t sent = 0;
    for (const Uploader::Copy& c : up.copies) {
      const uint8_t* src = c.src ? c.src : reinterpret_cast<const uint8_t*>(c.converted.data());
      for (size_t off = 0; off < c.bytes; off += kPiece) {
        const size_t n = std::min(kPiece, c.bytes - off);
        if (used[which]) done[which].synchronize();
        std::memcpy(staging[which].data(), src + off, n);
        copy_async(storage_.as<uint8_t>() + c.offset + off, staging[which].data(), n, stream.get());
        done[which].record(stream);
        used[which] = true;
        which ^= 1;
        sent += n;
        if (progress && !progress(sent, up.total())) {
          stream.synchronize();
          core::fail(STRATA_ABORTED, "model: load cancelled");
        }
      }
    }
    stream.synchronize();
  }

  const core::Model& model_;
  int device_;
  core::StagePlan plan_;
  int32_t chunk_ = core::kResidentChunk;  // the prompt chunk the placement sized the buffers for
  DeviceBuffer storage_;
  DeviceWeights weights_;
};

// The CUDA backend: uploads one stage's weights (its layers; the embedding when it is the first, the output norm
// and head when it is the last) to the stage's device. The experts that do not fit the stage's budget (after the
// dense weights, a KV cache and prompt buffers: core::place_stage_experts) are packed into pinned host memory and
// stream through each session's ring (options: adaptive residency, where every expert has a host copy and
// Backend::adapt swaps residency; a usage profile ranking the residents). Throws Error(OUT_OF_MEMORY) naming the
// bytes needed and free when the weights do not fit, Error(DEVICE) on driver failures, Error(ABORTED) when
// progress returns false.
constexpr core::BackendEntry kCudaBackend{
    core::LogicalDevice::Kind::Cuda, "cuda", [] { return device_count(); },
    [](int ordinal) -> uint64_t { return device_info(ordinal).free_mem; },
    [](const core::StageLoad& s) -> std::unique_ptr<core::Backend> {
      return std::make_unique<CudaBackend>(s.model, s.device.ordinal, s.plan, s.budget, s.experts, s.progress);
    }};

}  // namespace

STRATA_REGISTER_BACKEND(cuda, kCudaBackend);

}  // namespace strata::cuda
