// The ring mode of a prompt chunk: whether it streams every non-resident expert or only the routed ones, and
// the rule that picks it from the expected share of routed experts (the cost model can decide instead).
#pragma once

#include <cstdint>

namespace strata::core {

// How a prompt chunk picks the blobs it streams.
enum class RingMode {
  // Long chunks, where (nearly) every expert is routed: every non-resident
  // expert of every layer in fixed (layer, expert) order. The schedule is
  // known at the chunk start, so loads run ahead across layers and the link
  // never idles during attention or routing; an expert the chunk turns out not
  // to route is still loaded (its compute has no rows and only frees the slot).
  StreamAll,
  // Short chunks: per layer only the routed non-resident experts, biggest
  // groups first (the RowTable's active order). A layer's loads are known
  // only after its routing; slot reuse still carries across layers.
  Routed,
};

// Expected fraction of a layer's experts that a chunk of n_tokens routes to at
// least once when each token picks k of n_expert uniformly: 1 - (1 - k/n)^T.
double expected_routed_fraction(int64_t n_tokens, int k, int n_expert);

// The default threshold of choose_ring_mode: stream everything once at least
// 90% of the experts are expected to be routed. Below that the bytes saved by
// streaming only routed experts (>= 10%) outweigh the per-layer gap of the
// Routed mode (the link waits for each layer's routing); above it the saving
// is small and the run-ahead wins. The cost model (cost.h) can decide instead
// from predicted times.
inline constexpr double kStreamAllFraction = 0.9;

// The fallback mode rule: StreamAll when expected_routed_fraction(T, k, n) >=
// threshold, else Routed. For k = 8 of 128 experts that is T >= 36 tokens.
// Throws Error(INVALID_ARGUMENT) for n_tokens < 0, k < 1, n_expert < k or a
// threshold outside (0, 1].
RingMode choose_ring_mode(int64_t n_tokens, int k, int n_expert, double threshold = kStreamAllFraction);

}  // namespace strata::core
