// KvCache: a session's per-layer K/V rows (F16 or INT8 with a scale per position and head), allocated up front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata::core {

enum class KvType {
  F16,   // IEEE half, round to nearest even (default)
  Int8,  // symmetric int8, one F32 scale per (position, kv head); see KvCache
};

// Read-only view of one layer's K (or V) rows. Valid while the cache lives;
// later writes show through it.
struct KvView {
  KvType type = KvType::F16;
  const void* data = nullptr;       // [n_ctx][n_head_kv][head_dim] of uint16_t (F16) or int8_t (Int8)
  const float* scales = nullptr;    // Int8: [n_ctx][n_head_kv]; F16: nullptr
  const uint8_t* written = nullptr; // [n_ctx], 1 where a position was written since the last clear()
  int32_t n_ctx = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;

  bool is_written(int32_t pos) const { return pos >= 0 && pos < n_ctx && written[pos] != 0; }
  // out[0..head_dim) = the stored row of (pos, head) as float. Throws
  // Error(STRATA_ERR_INVALID_ARGUMENT) for pos/head out of range and
  // Error(STRATA_ERR_STATE) for a position not written since the last clear().
  void read(int32_t pos, int head, float* out) const;
};

// K and V for n_layer layers x n_ctx positions x n_head_kv heads; K rows have
// head_dim_k floats, V rows head_dim_v (GGUF key_length / value_length).
//
// Int8 storage: per (position, kv head) row, d = amax / 127 (F32, amax the
// largest |x| of the row), q[i] = (int8) roundf(x[i] / d) (half away from
// zero, as the Q8A activations), all q = 0 and d = 0 for an all-zero row.
// Reading gives d * q[i], within d / 2 of x[i].
//
// Thread safety: write() to different (layer, pos) may run concurrently, and
// reads may run concurrently with each other; nothing else may overlap.
class KvCache {
 public:
  // All storage is allocated here. Throws Error(STRATA_ERR_INVALID_ARGUMENT)
  // for a dimension < 1 and Error(STRATA_ERR_OUT_OF_MEMORY), naming the bytes,
  // when the storage cannot be allocated. The memory is not touched here, so
  // an unused context costs no resident pages.
  KvCache(KvType type, int n_layer, int n_ctx, int n_head_kv, int head_dim_k, int head_dim_v);

  // Stores position pos of layer: k is [n_head_kv][head_dim_k], v is
  // [n_head_kv][head_dim_v]. Overwriting a position is allowed. Throws
  // Error(STRATA_ERR_CONTEXT_FULL) for pos >= n_ctx and
  // Error(STRATA_ERR_INVALID_ARGUMENT) for a bad layer or negative pos.
  void write(int layer, int32_t pos, const float* k, const float* v);

  KvView k_view(int layer) const;
  KvView v_view(int layer) const;
  void read_k(int layer, int32_t pos, int head, float* out) const { k_view(layer).read(pos, head, out); }
  void read_v(int layer, int32_t pos, int head, float* out) const { v_view(layer).read(pos, head, out); }

  // Forgets every position (reads of them fail until rewritten). Cheap: the
  // rows themselves are not cleared.
  void clear();

  // Bytes allocated: K and V rows, Int8 scales, and the written flags.
  size_t bytes() const { return bytes_; }
  KvType type() const { return type_; }
  int n_layer() const { return n_layer_; }
  int n_ctx() const { return n_ctx_; }
  int n_head_kv() const { return n_head_kv_; }
  int head_dim_k() const { return head_dim_k_; }
  int head_dim_v() const { return head_dim_v_; }

 private:
  // One of K or V for all layers.
  struct Plane {
    int head_dim = 0;
    std::unique_ptr<std::byte[]> data;  // [n_layer][n_ctx][n_head_kv][head_dim] elements
    std::unique_ptr<float[]> scales;    // Int8 only: [n_layer][n_ctx][n_head_kv]
  };
  void check_layer(int layer) const;
  KvView view(const Plane& p, int layer) const;
  void store(Plane& p, int layer, int32_t pos, const float* x);

  KvType type_;
  int n_layer_, n_ctx_, n_head_kv_, head_dim_k_, head_dim_v_;
  size_t bytes_ = 0;
  Plane k_, v_;
  std::unique_ptr<uint8_t[]> written_;  // [n_layer][n_ctx]
};

}  // namespace strata::core
