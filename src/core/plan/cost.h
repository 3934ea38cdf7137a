// Cost model: link and compute rates, predicted prompt-chunk times, and the decisions made from them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/ring_mode.h"

namespace strata::core {

// Transfer rates of one card, in GB/s (1e9 bytes per second). Defaults: an
// H200 on PCIe Gen5 x16 (pinned host to device about 55 GB/s); the engine
// measures them at start (a few ms) or takes them from the caller.
struct LinkRates {
  double h2d_GBps = 55.0;          // pinned host -> device by the copy engine: the expert stream
  double d2h_GBps = 55.0;          // device -> pinned host: writes into the host route
  double mapped_read_GBps = 51.0;  // a kernel reading mapped pinned host memory: reads of the host route
  double p2p_GBps = 0.0;           // device -> device; 0 = the pair has no P2P
  double sync_s = 10e-6;           // one cross-card event wait + copy-kernel launch: the price of a piece
};

// Compute rates of one card. An expert GEMM of r routed rows (gate, up and
// down: 6 * n_embd * n_ff_exp flops a row) takes
//   expert_group_s + r * 6 * n_embd * n_ff_exp / (expert_tflops * 1e12);
// the fixed part stands for the launch and for reading the expert's weights,
// which dominate small groups. Per layer and chunk of T tokens starting at
// context position p, everything else (norms, QKV/O projections, router,
// shared expert, grouping, combine) takes T * dense_token_s, and attention
// takes attn_pair_s per (query, key) pair: T * p + T * (T + 1) / 2 pairs.
// Defaults: the H200 with this library's kernels on a Qwen3-30B-A3B layer,
// as `strata bench` measures them: grouped expert GEMMs at 80
// TFLOPS, attention projections, norms, router and combine 0.55 µs a token,
// the tensor-core attention kernel 0.2 ns a (query, key) pair for all heads.
struct ComputeRates {
  double expert_tflops = 80.0;
  double expert_group_s = 2e-6;
  double dense_token_s = 0.55e-6;
  double attn_pair_s = 2e-10;
};

// The MoE shape of one stage's layers, as the cost model needs it.
struct MoeShape {
  int32_t n_layer = 0;   // MoE layers on this card
  int32_t n_expert = 0;  // routed experts per layer
  int32_t k = 0;         // experts per token
  int64_t n_embd = 0;
  int64_t n_ff_exp = 0;
  uint64_t blob_bytes = 0;        // one expert's blob (gate + up + down)
  std::vector<int32_t> streamed;  // per layer, experts not resident (PlacementPlan); empty = all stream
  int32_t streamed_in(int layer) const { return streamed.empty() ? n_expert : streamed[layer]; }
};

// Time of one expert GEMM of `rows` rows (0 rows: nothing to do, 0 s).
double expert_time_s(const MoeShape& m, const ComputeRates& c, double rows);
// Dense part (attention and the rest) of one layer for T tokens from context position ctx_start.
double dense_time_s(const ComputeRates& c, int64_t tokens, int64_t ctx_start);
// Compute seconds of one layer for a chunk, every expert counted as if
// resident: PartitionInput::layer_compute.
double layer_compute_s(const MoeShape& m, const ComputeRates& c, int64_t tokens, int64_t ctx_start);

// One layer's work on one card, in seconds, in the order the streams run it:
// the compute stream runs dense_s (routing known at its end), resident_s, the
// streamed computes in load order, then tail_s; the copy stream runs the loads.
struct LayerWork {
  double dense_s = 0;
  double resident_s = 0;
  std::vector<double> load_s;     // streamed blobs, in load order
  std::vector<double> compute_s;  // their GEMMs, same order and length
  double tail_s = 0;
};

// The predicted run of a chunk.
struct ChunkTimeline {
  double total_s = 0;         // both streams done
  double link_busy_s = 0;     // copy stream busy
  double compute_busy_s = 0;  // compute stream busy
  double stream_wait_s = 0;   // compute stream idle, waiting for a load ("stream wait" of the timing report)
};

// Runs the ring's FIFO rules (prefill/ring.h) on the durations: load i waits
// for the compute of load i - n_slots and, in Routed mode, for its layer's
// routing; compute i waits for load i. Exact for a schedule from plan_ring.
ChunkTimeline simulate_chunk(const std::vector<LayerWork>& layers, int32_t n_slots, RingMode mode);

// Expected work of a chunk of T tokens under uniform routing: each expert is
// routed with probability frac = expected_routed_fraction(T, k, n) and then
// gets T * k / (n * frac) rows. Routed mode loads round(streamed * frac) blobs
// a layer, StreamAll every streamed blob (an unrouted one costs its load and
// no compute: each compute is weighted by frac). stream_share scales the
// streamed experts this card handles (1 - the peer's share).
std::vector<LayerWork> expected_work(const MoeShape& m, int64_t tokens, int64_t ctx_start, RingMode mode,
                                     const LinkRates& link, const ComputeRates& c, double stream_share = 1.0);

// Predicted time of one chunk on one card: simulate_chunk(expected_work(...)).
ChunkTimeline predict_chunk(const MoeShape& m, int64_t tokens, int64_t ctx_start, RingMode mode, int32_t n_slots,
                            const LinkRates& link, const ComputeRates& c);

// The cost model's ring mode: the faster prediction, ties to the fallback rule
// (choose_ring_mode); overrides that rule where rates are known.
RingMode choose_ring_mode_by_cost(const MoeShape& m, int64_t tokens, int64_t ctx_start, int32_t n_slots,
                                  const LinkRates& link, const ComputeRates& c);

// The smallest ring depth in [min_slots, max_slots] whose predicted chunk
// time is within `tolerance` (relative) of the deepest ring's: slots beyond it
// would buy little and cost resident experts (PlacementInput::ring_slots_wanted).
int32_t choose_ring_depth(const MoeShape& m, int64_t tokens, int64_t ctx_start, RingMode mode, int32_t min_slots,
                          int32_t max_slots, const LinkRates& link, const ComputeRates& c, double tolerance = 0.01);

// A primary card and a peer that takes a share of its streamed experts: a
// `peer_device` card, or the idle stage's card as a stream-only helper.
struct PeerSetup {
  MoeShape shape;  // the primary's layers
  int64_t tokens = 0;
  int64_t ctx_start = 0;
  LinkRates primary_link, peer_link;
  ComputeRates primary, peer;
  bool p2p = false;         // activations and sums by P2P (peer_link.p2p_GBps), else the host route
  int32_t pieces = 0;       // host route in pieces (prefill/pieces.h); 0 = one transfer each way
  int32_t value_bytes = 2;  // bytes per value on the route: FP16 = 2, F32 = 4
};

// The prediction for a share f of the streamed experts going to the peer:
//   max(primary link, peer link, sum over layers of
//       dense + max(resident + (1 - f) * streamed compute,  exposed transfers + f * peer compute))
// Links carry the expert bytes plus, on the host route, the mapped reads
// (the peer reads the activations, the primary the sums: they share the H2D
// direction with the stream). Exposed per layer: activations down and sums
// back, each a device write then a mapped read; in K pieces the two overlap
// but for one piece, plus 2 K syncs. f = 0 is the card alone, no transfers.
double predict_peer_time_s(const PeerSetup& s, double share);

struct PeerShareChoice {
  double share = 0;     // in [0, 1]
  double alone_s = 0;   // predicted chunk time without the peer
  double shared_s = 0;  // with it, at share
  double gain() const { return shared_s > 0 ? alone_s / shared_s : 1.0; }
};

// The share minimizing predict_peer_time_s (convex in f > 0: a golden-section
// search to 1e-6), or 0 when the peer does not pay for its transfers.
PeerShareChoice choose_peer_share(const PeerSetup& s);

// The fixed rule for the stream-only stage helper: share = min(0.45, 0.5 -
// T / 16384), off (0) below 0.3, i.e. from T = 3277 tokens on. Measured on 2x
// RTX 3090 without P2P; the fallback when no rates are measured.
double helper_share_fallback(int64_t tokens);

// The helper's share for a one-chunk prompt of T tokens: 0 when disabled
// (STRATA_PREFILL_HELP=0); fixed_share when it is >= 0
// (STRATA_PREFILL_HELP_FRAC); else choose_peer_share(*measured) when rates
// were measured; else helper_share_fallback(T). Throws Error(INVALID_ARGUMENT)
// for a fixed_share above 1.
double helper_share(int64_t tokens, bool enabled, double fixed_share, const PeerSetup* measured);

// Hybrid decode: of a step's n routed streamed experts in one layer (blobs
// of blob_bytes), how many the CPU computes from the host arena while the
// ring streams the rest: the c in [0, n] minimizing
//   max((n - c) * blob / link,  c * blob / cpu + fixed_s)   (c > 0),
// ties to fewer; 0 when no CPU share beats the ring alone (or a rate is 0).
// fixed_s is what the CPU's share costs per layer besides its weights:
// CpuDecodeRate::fixed_s (the pool's dispatches, measured) plus
// kCpuDecodeTransferS (the activations down, the rows back, the host's
// copies), which was fitted on the H200 machine (see docs/streaming.md).
inline constexpr double kCpuDecodeTransferS = 15e-6;
int32_t decode_cpu_experts(int32_t n, double blob_bytes, double link_GBps, double cpu_GBps, double fixed_s);

// The CPU's decode work on streamed experts as measured at load: one
// token through c experts of a layer takes fixed_s + c * blob / (GBps * 1e9).
struct CpuDecodeRate {
  double GBps = 0;
  double fixed_s = 0;
};

// The rate from the best times of one expert (t1) and of `c` experts at
// once (tc), c > 1: the slope is the cost per expert, the rest of t1 the
// fixed cost (never negative). Zero rate when the times make no slope.
CpuDecodeRate cpu_decode_rate(double blob_bytes, double t1, int c, double tc);

// The CPU's decode rate as decode observes it. It starts from the load-time
// measurement (a rate of 0 there, or a fixed cost over kMaxFixedS: a busy
// host at load; it then starts from kFallbackGBps) and follows every CPU
// share's measured time: time = fixed_s + c * blob / rate, the rate an
// exponential average (weight kWeight for the newest) of what each share
// shows, the fixed cost kept from load. So a load-time measurement that a busy
// moment spoiled, or a host whose memory the link's reads slow down, costs a
// few steps, not the session. When the rate says the CPU should take none,
// every kProbeEvery-th choice gives it one expert anyway, to keep measuring.
class CpuDecodeTracker {
 public:
  static constexpr double kMaxFixedS = 100e-6, kFallbackGBps = 10.0, kWeight = 0.1;
  static constexpr int32_t kProbeEvery = 16;

  explicit CpuDecodeTracker(CpuDecodeRate at_load);
  // How many of a layer's n routed streamed experts (blob_bytes each) the CPU
  // takes (decode_cpu_experts with the current rate, plus kCpuDecodeTransferS).
  int32_t choose(int32_t n, double blob_bytes, double link_GBps);
  // c > 0 experts of blob_bytes each took seconds on the CPU.
  void observe(int32_t c, double blob_bytes, double seconds);
  const CpuDecodeRate& rate() const { return rate_; }

 private:
  CpuDecodeRate rate_;
  int32_t since_probe_ = 0;
};

// Piece count when the option says "on" without a number: 8 pieces let the
// activations and sums overlap the router and the combine (not swept).
inline constexpr int kDefaultPeerPieces = 8;

// The piece count an option value means (`peer_pieces`,
// STRATA_PF_PEER_PIECES): 0 = off (one unpieced transfer; returns 0), 1 = on
// with kDefaultPeerPieces, K >= 2 = K pieces (prefill/pieces.h splits the
// rows). Throws Error(STRATA_ERR_INVALID_ARGUMENT) for a negative value or
// one above 1024 (each piece costs an event on both cards).
int resolve_peer_pieces(int64_t setting);

// Pieces for the host route: K minimizing transfer_s / K + K * sync_s (the
// exposed part of a transfer cut in K pieces plus their syncs), at least 1,
// at most max_pieces. kDefaultPeerPieces when nothing was measured
// (transfer_s <= 0 or sync_s <= 0).
int32_t choose_peer_pieces(double transfer_s, double sync_s, int32_t max_pieces = 64);

}  // namespace strata::core
