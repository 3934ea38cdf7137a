// Decode attention's split of a context's keys into ranges (one block each), the same rule on the host and the device.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata::core {

// How a decode's n_kv keys split into ranges: `n_split` ranges of
// `keys_per_split` keys from key 0 (the last one shorter when n_kv is not a
// multiple).
struct KeySplit {
  int64_t keys_per_split = 0;
  int32_t n_split = 0;
};

// The rule of a kernel: ranges of whole kUnit-key tiles, at least kMinKeys
// keys (a multiple of kUnit), at most kMaxSplits of them, as few as that
// allows with the keys spread evenly; a function of n_kv alone (n_kv >= 1),
// so a given input gives the same bits whatever the grid.
template <int64_t kUnit, int64_t kMinKeys, int32_t kMaxSplits>
struct KeySplitRule {
  static_assert(kUnit >= 1 && kMinKeys % kUnit == 0 && kMinKeys >= kUnit && kMaxSplits >= 1, "a valid rule");

  STRATA_HOST_DEVICE static KeySplit split(int64_t n_kv) {
    const int64_t even = (n_kv + kMaxSplits - 1) / kMaxSplits;
    int64_t per = (even + kUnit - 1) / kUnit * kUnit;
    if (per < kMinKeys) per = kMinKeys;
    return {per, static_cast<int32_t>((n_kv + per - 1) / per)};
  }

  // The most ranges split() gives for any n_kv in [1, max_kv]: the grid of
  // a decode whose n_kv is read on the device (ranges hold >= kMinKeys keys
  // and there are <= kMaxSplits; a longer n_kv may take fewer, longer ones).
  STRATA_HOST_DEVICE static int32_t max_split(int64_t max_kv) {
    const int64_t n = (max_kv + kMinKeys - 1) / kMinKeys;
    return static_cast<int32_t>(n < kMaxSplits ? n : kMaxSplits);
  }
};

// The two CUDA decode kernels' rules (src/cuda/attention/attention_impl.cuh: one
// query head a warp, 64-key tiles; src/cuda/attention/attention_decode.cu: a kv head's
// whole group a block of 4 warps, each taking 32-key tiles, so its ranges are
// longer and fewer).
using PerHeadDecodeSplit = KeySplitRule<64, 64, 128>;
using GroupDecodeSplit = KeySplitRule<128, 128, 32>;

}  // namespace strata::core
