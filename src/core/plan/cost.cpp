// The cost model's formulas, the FIFO ring recurrence, and the decisions (ring mode and depth, shares, pieces).
#include "core/plan/cost.h"

#include <algorithm>
#include <cmath>

#include "core/base/error.h"

namespace strata::core {

namespace {

void check_shape(const MoeShape& m) {
  if (m.n_layer < 0 || m.n_expert < 1 || m.k < 1 || m.k > m.n_expert || m.n_embd < 1 || m.n_ff_exp < 1 ||
      (!m.streamed.empty() && static_cast<int32_t>(m.streamed.size()) != m.n_layer)) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "cost model: shape n_layer={} n_expert={} k={} n_embd={} n_ff_exp={} ({} streamed counts)", m.n_layer,
         m.n_expert, m.k, m.n_embd, m.n_ff_exp, m.streamed.size());
  }
  for (int32_t s : m.streamed) {
    if (s < 0 || s > m.n_expert)
      fail(STRATA_ERR_INVALID_ARGUMENT, "cost model: {} streamed experts of {}", s, m.n_expert);
  }
}

void check_rates(const LinkRates& l, const ComputeRates& c) {
  if (!(l.h2d_GBps > 0) || !(l.d2h_GBps > 0) || !(l.mapped_read_GBps > 0) || !(l.p2p_GBps >= 0) || !(l.sync_s >= 0) ||
      !(c.expert_tflops > 0) || !(c.expert_group_s >= 0) || !(c.dense_token_s >= 0) || !(c.attn_pair_s >= 0)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "cost model: rates must be positive (links {}/{}/{} GB/s, {} TFLOPS)", l.h2d_GBps,
         l.d2h_GBps, l.mapped_read_GBps, c.expert_tflops);
  }
}

// Routed fraction and the rows an expert gets when routed (uniform routing).
struct Routing {
  double frac = 0;
  double rows = 0;
};

Routing routing(const MoeShape& m, int64_t tokens) {
  Routing r;
  r.frac = expected_routed_fraction(tokens, m.k, m.n_expert);
  if (r.frac > 0) r.rows = static_cast<double>(tokens) * m.k / (m.n_expert * r.frac);
  return r;
}

double seconds(double bytes, double GBps) { return bytes / (GBps * 1e9); }

}  // namespace

double expert_time_s(const MoeShape& m, const ComputeRates& c, double rows) {
  if (rows <= 0) return 0.0;
  const double flops = rows * 6.0 * static_cast<double>(m.n_embd) * static_cast<double>(m.n_ff_exp);
  return c.expert_group_s + flops / (c.expert_tflops * 1e12);
}

double dense_time_s(const ComputeRates& c, int64_t tokens, int64_t ctx_start) {
  const double t = static_cast<double>(tokens);
  const double pairs = t * static_cast<double>(ctx_start) + t * (t + 1) / 2;
  return t * c.dense_token_s + pairs * c.attn_pair_s;
}

double layer_compute_s(const MoeShape& m, const ComputeRates& c, int64_t tokens, int64_t ctx_start) {
  check_shape(m);
  const Routing r = routing(m, tokens);
  return dense_time_s(c, tokens, ctx_start) + m.n_expert * r.frac * expert_time_s(m, c, r.rows);
}

ChunkTimeline simulate_chunk(const std::vector<LayerWork>& layers, int32_t n_slots, RingMode mode) {
  if (n_slots < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "cost model: {} ring slots", n_slots);
  ChunkTimeline out;
  std::vector<double> compute_end;  // per streamed item, in ring order
  double copy_free = 0, comp_free = 0;
  for (const LayerWork& w : layers) {
    if (w.load_s.size() != w.compute_s.size()) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "cost model: {} loads but {} computes in a layer", w.load_s.size(),
           w.compute_s.size());
    }
    const double routed_at = comp_free + w.dense_s;  // this layer's routing is known here
    comp_free = routed_at + w.resident_s;
    out.compute_busy_s += w.dense_s + w.resident_s + w.tail_s;
    for (size_t j = 0; j < w.load_s.size(); ++j) {
      // Load i reuses the slot of load i - n_slots, freed when its compute ends.
      const size_t i = compute_end.size();
      double start = copy_free;
      if (i >= static_cast<size_t>(n_slots)) start = std::max(start, compute_end[i - n_slots]);
      if (mode == RingMode::Routed) start = std::max(start, routed_at);
      copy_free = start + w.load_s[j];
      out.link_busy_s += w.load_s[j];
      // Its compute waits for it.
      out.stream_wait_s += std::max(0.0, copy_free - comp_free);
      comp_free = std::max(comp_free, copy_free) + w.compute_s[j];
      out.compute_busy_s += w.compute_s[j];
      compute_end.push_back(comp_free);
    }
    comp_free += w.tail_s;
  }
  out.total_s = std::max(copy_free, comp_free);
  return out;
}

std::vector<LayerWork> expected_work(const MoeShape& m, int64_t tokens, int64_t ctx_start, RingMode mode,
                                     const LinkRates& link, const ComputeRates& c, double stream_share) {
  check_shape(m);
  check_rates(link, c);
  if (!(stream_share >= 0 && stream_share <= 1)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "cost model: stream share {} outside [0, 1]", stream_share);
  }
  const Routing r = routing(m, tokens);
  const double one = expert_time_s(m, c, r.rows);
  const double load = seconds(static_cast<double>(m.blob_bytes), link.h2d_GBps);
  std::vector<LayerWork> work(m.n_layer);
  for (int l = 0; l < m.n_layer; ++l) {
    LayerWork& w = work[l];
    const int32_t n_str = m.streamed_in(l);
    w.dense_s = dense_time_s(c, tokens, ctx_start);
    w.resident_s = (m.n_expert - n_str) * r.frac * one;
    const double mine = std::round(n_str * stream_share);
    const auto n_load = static_cast<size_t>(mode == RingMode::StreamAll ? mine : std::round(mine * r.frac));
    w.load_s.assign(n_load, load);
    w.compute_s.assign(n_load, mode == RingMode::StreamAll ? r.frac * one : one);
  }
  return work;
}

ChunkTimeline predict_chunk(const MoeShape& m, int64_t tokens, int64_t ctx_start, RingMode mode, int32_t n_slots,
                            const LinkRates& link, const ComputeRates& c) {
  return simulate_chunk(expected_work(m, tokens, ctx_start, mode, link, c), n_slots, mode);
}

RingMode choose_ring_mode_by_cost(const MoeShape& m, int64_t tokens, int64_t ctx_start, int32_t n_slots,
                                  const LinkRates& link, const ComputeRates& c) {
  const double all = predict_chunk(m, tokens, ctx_start, RingMode::StreamAll, n_slots, link, c).total_s;
  const double routed = predict_chunk(m, tokens, ctx_start, RingMode::Routed, n_slots, link, c).total_s;
  if (all < routed) return RingMode::StreamAll;
  if (routed < all) return RingMode::Routed;
  return choose_ring_mode(tokens, m.k, m.n_expert);
}

int32_t choose_ring_depth(const MoeShape& m, int64_t tokens, int64_t ctx_start, RingMode mode, int32_t min_slots,
                          int32_t max_slots, const LinkRates& link, const ComputeRates& c, double tolerance) {
  if (min_slots < 1 || max_slots < min_slots || !(tolerance >= 0)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "ring depth: slots [{}, {}], tolerance {}", min_slots, max_slots, tolerance);
  }
  const auto work = expected_work(m, tokens, ctx_start, mode, link, c);
  const double deepest = simulate_chunk(work, max_slots, mode).total_s;
  // A deeper FIFO ring never makes a load start later, so the time falls with
  // depth: a bisection finds the first depth within tolerance.
  int32_t lo = min_slots, hi = max_slots;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (simulate_chunk(work, mid, mode).total_s <= deepest * (1 + tolerance))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

double predict_peer_time_s(const PeerSetup& s, double share) {
  const MoeShape& m = s.shape;
  check_shape(m);
  check_rates(s.primary_link, s.primary);
  check_rates(s.peer_link, s.peer);
  if (!(share >= 0 && share <= 1)) fail(STRATA_ERR_INVALID_ARGUMENT, "peer share {} outside [0, 1]", share);
  if (s.p2p && !(s.peer_link.p2p_GBps > 0)) fail(STRATA_ERR_INVALID_ARGUMENT, "peer: P2P route without a P2P rate");
  if (s.pieces < 0 || s.value_bytes < 1) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "peer: {} pieces, {} bytes a value", s.pieces, s.value_bytes);
  }
  const Routing r = routing(m, s.tokens);
  const bool all = choose_ring_mode(s.tokens, m.k, m.n_expert) == RingMode::StreamAll;
  const double f = share;

  // Transfers of one layer: activations down, per-token sums back.
  const double act = static_cast<double>(s.tokens) * static_cast<double>(m.n_embd) * s.value_bytes;
  double exposed = 0, link_p_extra = 0, link_q_extra = 0;
  if (f > 0 && s.p2p) {
    exposed = seconds(act, s.peer_link.p2p_GBps) + seconds(act, s.peer_link.p2p_GBps) + s.primary_link.sync_s +
              s.peer_link.sync_s;
    link_q_extra = seconds(act, s.peer_link.h2d_GBps);
    link_p_extra = seconds(act, s.primary_link.h2d_GBps);
  } else if (f > 0) {
    // Each way: a device write into host memory, then a mapped read on the other card.
    auto way = [&](double write, double read, double sync) {
      const int32_t k = s.pieces;
      if (k <= 1) return write + read + sync;
      return std::max(write, read) + std::min(write, read) / k + k * sync;
    };
    exposed =
        way(seconds(act, s.primary_link.d2h_GBps), seconds(act, s.peer_link.mapped_read_GBps), s.peer_link.sync_s) +
        way(seconds(act, s.peer_link.d2h_GBps), seconds(act, s.primary_link.mapped_read_GBps), s.primary_link.sync_s);
    link_q_extra = seconds(act, s.peer_link.mapped_read_GBps);
    link_p_extra = seconds(act, s.primary_link.mapped_read_GBps);
  }

  double link_p = 0, link_q = 0, path = 0;
  for (int l = 0; l < m.n_layer; ++l) {
    const int32_t n_str = m.streamed_in(l);
    const double bytes = static_cast<double>(m.blob_bytes) * n_str * (all ? 1.0 : r.frac);
    link_p += seconds((1 - f) * bytes, s.primary_link.h2d_GBps) + link_p_extra;
    link_q += seconds(f * bytes, s.peer_link.h2d_GBps) + link_q_extra;
    const double res = (m.n_expert - n_str) * r.frac * expert_time_s(m, s.primary, r.rows);
    const double mine = (1 - f) * n_str * r.frac * expert_time_s(m, s.primary, r.rows);
    const double theirs = f * n_str * r.frac * expert_time_s(m, s.peer, r.rows);
    path +=
        dense_time_s(s.primary, s.tokens, s.ctx_start) + (f > 0 ? std::max(res + mine, exposed + theirs) : res + mine);
  }
  return std::max({link_p, link_q, path});
}

PeerShareChoice choose_peer_share(const PeerSetup& s) {
  PeerShareChoice c;
  c.alone_s = predict_peer_time_s(s, 0.0);
  // Golden-section search on (0, 1]: the time is a max of sums of linear
  // pieces there, so convex; f = 0 is apart (no transfers at all).
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = 1e-9, b = 1.0;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = predict_peer_time_s(s, x1), f2 = predict_peer_time_s(s, x2);
  while (b - a > 1e-6) {
    if (f1 <= f2) {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - g * (b - a), f1 = predict_peer_time_s(s, x1);
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + g * (b - a), f2 = predict_peer_time_s(s, x2);
    }
  }
  double best = (a + b) / 2, best_s = predict_peer_time_s(s, best);
  const double full = predict_peer_time_s(s, 1.0);
  if (full < best_s) best = 1.0, best_s = full;  // the search never evaluates the end point itself
  if (best_s < c.alone_s) {
    c.share = best;
    c.shared_s = best_s;
  } else {
    c.shared_s = c.alone_s;
  }
  return c;
}

double helper_share_fallback(int64_t tokens) {
  if (tokens < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "helper share: {} tokens", tokens);
  const double share = std::min(0.45, 0.5 - static_cast<double>(tokens) / 16384.0);
  return share < 0.3 ? 0.0 : share;
}

double helper_share(int64_t tokens, bool enabled, double fixed_share, const PeerSetup* measured) {
  if (!enabled) return 0.0;
  if (fixed_share >= 0) {
    if (!(fixed_share <= 1)) fail(STRATA_ERR_INVALID_ARGUMENT, "helper share {} above 1", fixed_share);
    return fixed_share;
  }
  if (measured) return choose_peer_share(*measured).share;
  return helper_share_fallback(tokens);
}

int32_t decode_cpu_experts(int32_t n, double blob_bytes, double link_GBps, double cpu_GBps, double fixed_s) {
  if (n <= 0 || !(link_GBps > 0) || !(cpu_GBps > 0) || !(blob_bytes > 0)) return 0;
  const double gpu_s = blob_bytes / (link_GBps * 1e9), cpu_s = blob_bytes / (cpu_GBps * 1e9);
  int32_t best = 0;
  double best_s = n * gpu_s;
  for (int32_t c = 1; c <= n; ++c) {
    const double t = std::max((n - c) * gpu_s, c * cpu_s + fixed_s);
    if (t < best_s) best = c, best_s = t;
  }
  return best;
}

CpuDecodeRate cpu_decode_rate(double blob_bytes, double t1, int c, double tc) {
  if (c < 2 || !(tc > t1) || !(t1 > 0) || !(blob_bytes > 0)) return {};
  const double per_expert = (tc - t1) / (c - 1);
  return {blob_bytes / per_expert / 1e9, std::max(0.0, t1 - per_expert)};
}

CpuDecodeTracker::CpuDecodeTracker(CpuDecodeRate at_load) : rate_(at_load) {
  if (!(rate_.GBps > 0) || !(rate_.fixed_s >= 0) || rate_.fixed_s > kMaxFixedS) rate_ = {kFallbackGBps, 0.0};
}

int32_t CpuDecodeTracker::choose(int32_t n, double blob_bytes, double link_GBps) {
  const int32_t c = decode_cpu_experts(n, blob_bytes, link_GBps, rate_.GBps, rate_.fixed_s + kCpuDecodeTransferS);
  if (c > 0 || n < 2) {
    since_probe_ = 0;
    return c;
  }
  if (++since_probe_ < kProbeEvery) return 0;
  since_probe_ = 0;
  return 1;
}

void CpuDecodeTracker::observe(int32_t c, double blob_bytes, double seconds) {
  if (c <= 0 || !(blob_bytes > 0) || !(seconds > 0)) return;
  // The share's time less the fixed cost, never below a tenth of the whole (a fixed cost measured too high).
  const double weights_s = std::max(seconds - rate_.fixed_s, 0.1 * seconds);
  const double seen = c * blob_bytes / weights_s / 1e9;
  rate_.GBps = (1 - kWeight) * rate_.GBps + kWeight * seen;
}

int32_t choose_peer_pieces(double transfer_s, double sync_s, int32_t max_pieces) {
  if (max_pieces < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "peer pieces: at most {}", max_pieces);
  if (!(transfer_s > 0) || !(sync_s > 0)) return std::min(kDefaultPeerPieces, max_pieces);
  auto cost = [&](double k) { return transfer_s / k + k * sync_s; };
  const double ideal = std::sqrt(transfer_s / sync_s);
  const double lo = std::clamp(std::floor(ideal), 1.0, static_cast<double>(max_pieces));
  const double hi = std::clamp(std::ceil(ideal), 1.0, static_cast<double>(max_pieces));
  return static_cast<int32_t>(cost(hi) < cost(lo) ? hi : lo);
}

int resolve_peer_pieces(int64_t setting) {
  if (setting < 0 || setting > 1024) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "peer_pieces {}: use 0 (off), 1 (on, {} pieces) or a count up to 1024", setting,
         kDefaultPeerPieces);
  }
  if (setting == 1) return kDefaultPeerPieces;
  return static_cast<int>(setting);
}

}  // namespace strata::core
