// The peer share on CUDA: host-route buffers and events on the primary, the peer's work queued on its stream.
#include "cuda/runtime/peer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/base/error.h"
#include "cuda/gemm/type_paths.h"
#include "cuda/moe/moe.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/host_route.cuh"
#include "cuda/runtime/route.cuh"
#include "prefill/pieces.h"
#include "prefill/ring.h"
#include "prefill/stage_ring.h"

namespace strata::cuda {
namespace {

using Role = core::TensorRole;

constexpr unsigned kMapped = cudaHostAllocPortable | cudaHostAllocMapped;

size_t f16_bytes(int64_t rows, int64_t n) { return static_cast<size_t>(rows * n) * sizeof(uint16_t); }

// Where each part of a chunk's table lives, in ints from the start (the same
// layout in mapped memory and in the peer's copy).
struct TableLayout {
  size_t ptrs = 0, offsets, entries, list, rows, flags, weights, total;
  TableLayout(const core::ModelConfig& c, int64_t T) {
    const size_t n = static_cast<size_t>(c.n_expert), tk = static_cast<size_t>(T) * c.n_expert_used;
    offsets = ptrs + 6 * n;  // 3 * n_expert pointers
    entries = offsets + n + 1;
    list = entries + tk;
    rows = list + n;
    flags = rows + tk;
    weights = flags + (tk + 3) / 4;
    total = weights + tk;
  }
};

WeightSet peer_set(const DeviceTensor& t, const uint8_t* const* ptrs) {
  WeightSet w;
  w.type = t.type;
  w.n_in = t.n_in;
  w.n_out = t.n_out;
  w.ptrs = ptrs;
  return w;
}

// F32 values crossing the route as F32 or FP16: src -> dst by a copy kernel on `s`.
void send(const float* src, void* dst, int64_t n, bool f32, cudaStream_t s) {
  if (f32)
    route_copy(src, static_cast<float*>(dst), n, s);
  else
    f32_to_f16(src, static_cast<uint16_t*>(dst), n, s);
}
void receive(const void* src, float* dst, int64_t n, bool f32, cudaStream_t s) {
  if (f32)
    route_copy(static_cast<const float*>(src), dst, n, s);
  else
    f16_to_f32(static_cast<const uint16_t*>(src), dst, n, s);
}

}  // namespace

size_t PeerShare::table_ints(const core::ModelConfig& c, int64_t T) { return TableLayout(c, T).total; }

PeerStorage::PeerStorage(int device, const core::ModelConfig& c, int64_t chunk, int32_t n_slots, uint64_t slot_bytes)
    : device_(device), chunk_(chunk), stream_(device), ring_(device, n_slots, slot_bytes) {
  const int64_t T = chunk, E = c.n_embd, k = c.n_expert_used;
  auto f32 = [&](int64_t n) { return DeviceBuffer(device, static_cast<size_t>(n) * sizeof(float)); };
  xn_ = f32(T * E);
  xh_ = DeviceBuffer(device, f16_bytes(T, E));
  w_ = f32(T * k);
  tiles_ = DeviceBuffer(device, static_cast<size_t>(gemm_max_tiles(T * k, c.n_expert)) * sizeof(GemmTile));
  tile_count_ = DeviceBuffer(device, sizeof(int32_t));
  h_ = f32(T * k * c.n_ff_exp);
  hh_ = DeviceBuffer(device, f16_bytes(T * k, c.n_ff_exp));
  y_ = f32(T * k * E);
  table_ints_ = PeerShare::table_ints(c, T);
  table_ = DeviceBuffer(device, table_ints_ * sizeof(int32_t));
}

PeerScratch PeerStorage::scratch() {
  PeerScratch p;
  p.device = device_;
  p.stream = stream_.get();
  p.ring = &ring_;
  p.next_slot = &next_slot_;
  p.chunk = chunk_;
  p.xn = xn_.as<float>();
  p.xh = xh_.as<uint16_t>();
  p.w = w_.as<float>();
  p.moe.tiles = tiles_.as<GemmTile>();
  p.moe.tile_count = tile_count_.as<int32_t>();
  p.moe.h = h_.as<float>();
  p.moe.hh = hh_.as<uint16_t>();
  p.y = y_.as<float>();
  p.table = table_.as<int32_t>();
  p.table_ints = table_ints_;
  return p;
}

uint64_t PeerStorage::device_bytes() const {
  uint64_t n = ring_.device_bytes();
  for (const DeviceBuffer* b : {&xn_, &xh_, &w_, &tiles_, &tile_count_, &h_, &hh_, &y_, &table_}) n += b->size();
  return n;
}

PeerShare::PeerShare(int device, const core::ModelConfig& c, int64_t chunk)
    : device_(device),
      c_(c),
      chunk_(chunk),
      x_stream_(device),
      h_stream_(device),
      h_x_(static_cast<size_t>(chunk) * c.n_embd * sizeof(float), kMapped),
      h_sums_(static_cast<size_t>(chunk) * c.n_embd * sizeof(float), kMapped),
      h_tab_(table_ints(c, chunk) * sizeof(int32_t), kMapped),
      ev_norm_(device),
      ev_sent_(device),
      ev_o_(device),
      ev_h_(device) {}

PeerShare::~PeerShare() {
  if (peer_.stream) on_device_noexcept(peer_.device, [&] { cudaStreamSynchronize(peer_.stream); });
}

void PeerShare::begin(const PeerScratch& peer, const core::PeerTerms& terms, const core::StageExperts& x,
                      const uint8_t* arena, std::vector<std::vector<int32_t>> peer_lists, int64_t T) {
  if (T > chunk_ || T > peer.chunk || peer.table_ints < table_ints(c_, T))
    core::fail(STRATA_ERR_INTERNAL, "peer share: a chunk of {} tokens for buffers of {} and {}", T, chunk_, peer.chunk);
  peer_ = peer;
  terms_ = terms;
  T_ = T;
  x_ = &x;
  streamed0_ = peer.ring->bytes_enqueued();
  const int K = pieces();
  // Events on the devices that record them: the primary's pieces out, the peer's sums and its end.
  if (static_cast<int>(ev_piece_.size()) != K) {
    ev_piece_.clear();
    for (int i = 0; i < K; ++i) ev_piece_.emplace_back(device_);
  }
  ev_sum_.clear();
  for (int i = 0; i < K; ++i) ev_sum_.emplace_back(peer.device);
  ev_done_ = Event(peer.device);
  if (terms.exact && h_rows_.size() < static_cast<size_t>(T) * c_.n_expert_used * c_.n_embd * sizeof(float))
    h_rows_ = HostBuffer(static_cast<size_t>(chunk_) * c_.n_expert_used * c_.n_embd * sizeof(float), kMapped);
  schedule_ = prefill::lists_schedule(std::move(peer_lists), peer.ring->n_slots(), *peer.next_slot);
  *peer.next_slot = schedule_.next_slot;
  ScopedDevice d(peer.device);
  peer.ring->begin(schedule_, [&x, arena](const prefill::RingLoad& load) {
    return DeviceRing::Blob{arena + x.arena_offset(load.layer, load.expert), x.layouts[load.layer].bytes};
  });
}

void PeerShare::send_early(const float* xn, cudaStream_t s) {
  const int K = pieces();
  if (K <= 1) return;
  const int64_t E = c_.n_embd;
  ev_norm_.record(s);
  ev_norm_.wait_from(x_stream_.get());
  for (int i = 0; i < K; ++i) {
    const prefill::PieceBounds b = prefill::handoff_piece(T_, K, i);
    const size_t off = static_cast<size_t>(b.begin * E) * (terms_.f32 ? 4 : 2);
    send(xn + b.begin * E, h_x_.device_as<uint8_t>() + off, b.size() * E, terms_.f32, x_stream_.get());
    ev_piece_[i].record(x_stream_.get());
  }
  // The peer converts each piece as it lands, while the router and the grouping still run here.
  ScopedDevice d(peer_.device);
  for (int i = 0; i < K; ++i) {
    const prefill::PieceBounds b = prefill::handoff_piece(T_, K, i);
    const size_t off = static_cast<size_t>(b.begin * E) * (terms_.f32 ? 4 : 2);
    ev_piece_[i].wait_from(peer_.stream);
    receive(h_x_.device_as<uint8_t>() + off, peer_.xn + b.begin * E, b.size() * E, terms_.f32, peer_.stream);
  }
}

void PeerShare::layer(int32_t il, const DeviceLayer& l, const prefill::RowTable& table,
                      const prefill::PeerSharePlan& plan, const float* xn, const float* weights, cudaStream_t s) {
  const int64_t T = T_, E = c_.n_embd;
  const int k = c_.n_expert_used, n = c_.n_expert;
  const TableLayout at(c_, T);
  // The host's part: pointer tables (the peer's slots), the row table, the
  // peer's list and rows, the row flags; into mapped memory. The peer's
  // reads of the previous layer's are done: this layer's routing came down
  // after the previous combine, which waited for the peer.
  int32_t* h = h_tab_.as<int32_t>();
  auto** ptrs = reinterpret_cast<const uint8_t**>(h + at.ptrs);
  std::fill(ptrs, ptrs + 3 * n, nullptr);
  const core::BlobLayout& b = x_->layouts[il];
  const int32_t begin = schedule_.layer_begin[il], end = schedule_.layer_begin[il + 1];
  for (int32_t i = begin; i < end; ++i) {
    const prefill::RingCompute& c = schedule_.computes[i];
    const uint8_t* slot = peer_.ring->slot(c.slot);
    ptrs[c.expert] = slot + b.gate;
    ptrs[n + c.expert] = slot + b.up;
    ptrs[2 * n + c.expert] = slot + b.down;
  }
  std::copy(table.offsets.begin(), table.offsets.end(), h + at.offsets);
  std::copy(table.entries.begin(), table.entries.end(), h + at.entries);
  std::copy(plan.peer_experts.begin(), plan.peer_experts.end(), h + at.list);
  std::copy(plan.peer_rows.begin(), plan.peer_rows.end(), h + at.rows);
  auto* flags = reinterpret_cast<uint8_t*>(h + at.flags);
  std::fill(flags, flags + T * k, 0);
  for (int32_t r : plan.peer_rows) flags[r] = 1;
  n_peer_rows_ = plan.n_peer_rows();
  rows_dev_ = h_tab_.device_as<int32_t>() + at.rows;
  flags_dev_ = reinterpret_cast<const uint8_t*>(h_tab_.device_as<int32_t>() + at.flags);

  // The primary's part: the router weights and, without pieces, the activations.
  route_copy(weights, h_tab_.device_as<float>() + at.weights, T * k, s);
  if (pieces() <= 1) send(xn, h_x_.device_as<void>(), T * E, terms_.f32, s);
  ev_sent_.record(s);
  ev_o_.record(s);  // the combine's scratch is free from here on

  // The peer's part, on its stream.
  ScopedDevice d(peer_.device);
  cudaStream_t ps = peer_.stream;
  ev_sent_.wait_from(ps);
  if (pieces() <= 1) receive(h_x_.device_as<void>(), peer_.xn, T * E, terms_.f32, ps);
  route_copy(h_tab_.device_as<float>(), reinterpret_cast<float*>(peer_.table), static_cast<int64_t>(at.total), ps);
  // Quantized gate/up read the activations as F16 (the primary's rows round the same F32 values, or are these
  // very halves when they crossed as FP16).
  const uint16_t* xh = nullptr;
  if (q8a_type(l[Role::FfnGateExps].type)) {
    f32_to_f16(peer_.xn, peer_.xh, T * E, ps);
    xh = peer_.xh;
  }
  const auto* dptrs = reinterpret_cast<const uint8_t* const*>(peer_.table + at.ptrs);
  const MoeExperts experts{peer_set(l[Role::FfnGateExps], dptrs), peer_set(l[Role::FfnUpExps], dptrs + n),
                           peer_set(l[Role::FfnDownExps], dptrs + 2 * n)};
  RowTableView view;
  view.offsets = peer_.table + at.offsets;
  view.entries = peer_.table + at.entries;
  view.n_tokens = static_cast<int32_t>(T);
  view.k = k;
  view.n_expert = n;
  for (int32_t i = begin; int32_t e : prefill::ring_batch_ends(begin, end, peer_.ring->n_slots())) {
    const int32_t last = e - 1;
    const std::span<const int32_t> list(plan.peer_experts.data() + (i - begin), static_cast<size_t>(last - i + 1));
    peer_.ring->wait(last, ps);
    moe_experts_listed(experts, view, peer_.table + at.list + (i - begin), static_cast<int32_t>(list.size()),
                       listed_tiles(table, list), peer_.xn, xh, peer_.moe, peer_.y, ps);
    peer_.ring->release_through(last, ps);
    i = e;
  }
  if (terms_.exact) {
    gather_rows(peer_.y, E, peer_.table + at.rows, n_peer_rows_, 1, h_rows_.device_as<float>(), ps);
  } else {
    const int K = pieces();
    const auto* w = reinterpret_cast<const float*>(peer_.table + at.weights);
    const auto* peer_flags = reinterpret_cast<const uint8_t*>(peer_.table + at.flags);
    for (int i = 0; i < K; ++i) {
      const prefill::PieceBounds p = prefill::handoff_piece(T, K, i);
      moe_peer_sums(peer_.y, w, peer_flags, p.begin, p.end, k, E, terms_.f32 ? h_sums_.device_as<float>() : nullptr,
                    terms_.f32 ? nullptr : h_sums_.device_as<uint16_t>(), ps);
      ev_sum_[i].record(ps);
    }
  }
  ev_done_.record(ps);
}

void PeerShare::combine(float* y, const float* weights, float* scratch, float* x, cudaStream_t s) {
  const int64_t T = T_, E = c_.n_embd;
  const int k = c_.n_expert_used;
  if (terms_.exact) {
    ev_done_.wait_from(s);
    scatter_rows(h_rows_.device_as<float>(), E, rows_dev_, n_peer_rows_, y, s);
    moe_combine(y, weights, T, k, E, x, x, s);
    return;
  }
  const int K = pieces();
  if (K > 1) {
    // Each piece of the sums into the scratch as it lands; the combine waits for the last.
    cudaStream_t hs = h_stream_.get();
    ev_o_.wait_from(hs);
    for (int i = 0; i < K; ++i) {
      const prefill::PieceBounds p = prefill::handoff_piece(T, K, i);
      const size_t off = static_cast<size_t>(p.begin * E) * (terms_.f32 ? 4 : 2);
      ev_sum_[i].wait_from(hs);
      receive(h_sums_.device_as<uint8_t>() + off, scratch + p.begin * E, p.size() * E, terms_.f32, hs);
    }
    ev_h_.record(hs);
    ev_h_.wait_from(s);
  } else {
    ev_done_.wait_from(s);
    receive(h_sums_.device_as<void>(), scratch, T * E, terms_.f32, s);
  }
  moe_combine_peer(y, weights, flags_dev_, T, k, E, scratch, x, x, s);
}

void PeerShare::end() {
  if (!peer_.stream) return;
  ScopedDevice d(peer_.device);
  cudaStream_t ps = std::exchange(peer_.stream, nullptr);
  STRATA_CUDA_CHECK(cudaStreamSynchronize(ps));
}

}  // namespace strata::cuda
