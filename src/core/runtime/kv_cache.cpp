// KvCache: allocation with checked sizes, F16/Int8 row encoding, and row reads for attention.
#include "core/runtime/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/quant/quant.h"

namespace strata::core {

namespace {

size_t element_size(KvType t) { return t == KvType::F16 ? sizeof(uint16_t) : sizeof(int8_t); }

// a * b, or 0 on overflow (no dimension here is 0, so 0 cannot be a real product).
size_t mul_checked(size_t a, size_t b) {
  size_t r;
  return __builtin_mul_overflow(a, b, &r) ? 0 : r;
}

// No 64-bit machine maps more than 2^48 bytes of user address space; asking
// the allocator for more only trips sanitizers, so such sizes fail here.
constexpr size_t kMaxBytes = size_t{1} << 48;

}  // namespace

void KvView::read(int32_t pos, int head, float* out) const {
  if (pos < 0 || pos >= n_ctx || head < 0 || head >= n_head_kv) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "KV read: position {} head {} outside {} x {}", pos, head, n_ctx, n_head_kv);
  }
  if (!written[pos]) fail(STRATA_ERR_STATE, "KV read: position {} has not been written", pos);
  const size_t row = static_cast<size_t>(pos) * n_head_kv + head;
  if (type == KvType::F16) {
    dequantize_row(GgmlType::F16, static_cast<const uint16_t*>(data) + row * head_dim, out, head_dim);
  } else {
    const int8_t* q = static_cast<const int8_t*>(data) + row * head_dim;
    const float d = scales[row];
    for (int i = 0; i < head_dim; ++i) out[i] = d * static_cast<float>(q[i]);
  }
}

KvCache::KvCache(KvType type, int n_layer, int n_ctx, int n_head_kv, int head_dim_k, int head_dim_v)
    : type_(type),
      n_layer_(n_layer),
      n_ctx_(n_ctx),
      n_head_kv_(n_head_kv),
      head_dim_k_(head_dim_k),
      head_dim_v_(head_dim_v) {
  if (type != KvType::F16 && type != KvType::Int8) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "KV cache: unknown type {}", static_cast<int>(type));
  }
  if (n_layer < 1 || n_ctx < 1 || n_head_kv < 1 || head_dim_k < 1 || head_dim_v < 1) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "KV cache: every dimension must be >= 1 (n_layer={} n_ctx={} n_head_kv={} head_dim_k={} head_dim_v={})",
         n_layer, n_ctx, n_head_kv, head_dim_k, head_dim_v);
  }
  // Sizes, checked for overflow: rows = n_layer * n_ctx * n_head_kv.
  const size_t positions = mul_checked(n_layer, n_ctx);
  const size_t rows = mul_checked(positions, n_head_kv);
  const size_t k_elems = mul_checked(rows, head_dim_k), v_elems = mul_checked(rows, head_dim_v);
  const size_t esize = element_size(type);
  const size_t k_bytes = mul_checked(k_elems, esize), v_bytes = mul_checked(v_elems, esize);
  const size_t scale_bytes = type == KvType::Int8 ? mul_checked(rows, 2 * sizeof(float)) : 0;
  size_t total = 0;
  bool overflow = k_bytes == 0 || v_bytes == 0 || (type == KvType::Int8 && scale_bytes == 0) ||
                  __builtin_add_overflow(k_bytes, v_bytes, &total) ||
                  __builtin_add_overflow(total, scale_bytes, &total) ||
                  __builtin_add_overflow(total, positions, &total);
  auto oom = [&](const char* why) {
    fail(STRATA_ERR_OUT_OF_MEMORY,
         "KV cache: cannot allocate {} ({} layers x {} positions x {} kv heads x ({} + {}) dims, {})",
         overflow ? std::string("more than 2^64 bytes") : fmt::format("{} bytes", total), n_layer, n_ctx,
         n_head_kv, head_dim_k, head_dim_v, why);
  };
  if (overflow || total > kMaxBytes) oom("beyond the address space");
  try {
    // for_overwrite: no zero fill, so pages stay untouched until used.
    k_.data = std::make_unique_for_overwrite<std::byte[]>(k_bytes);
    v_.data = std::make_unique_for_overwrite<std::byte[]>(v_bytes);
    if (type == KvType::Int8) {
      k_.scales = std::make_unique_for_overwrite<float[]>(rows);
      v_.scales = std::make_unique_for_overwrite<float[]>(rows);
    }
    written_ = std::make_unique<uint8_t[]>(positions);  // zeroed: nothing written yet
  } catch (const std::bad_alloc&) {
    oom("host memory exhausted");
  }
  k_.head_dim = head_dim_k;
  v_.head_dim = head_dim_v;
  bytes_ = total;
}

void KvCache::check_layer(int layer) const {
  if (layer < 0 || layer >= n_layer_) fail(STRATA_ERR_INVALID_ARGUMENT, "KV cache: layer {} outside [0, {})", layer, n_layer_);
}

void KvCache::store(Plane& p, int layer, int32_t pos, const float* x) {
  const size_t row0 = (static_cast<size_t>(layer) * n_ctx_ + pos) * n_head_kv_;
  for (int h = 0; h < n_head_kv_; ++h) {
    const float* src = x + static_cast<size_t>(h) * p.head_dim;
    const size_t row = row0 + h;
    if (type_ == KvType::F16) {
      uint16_t* dst = reinterpret_cast<uint16_t*>(p.data.get()) + row * p.head_dim;
      for (int i = 0; i < p.head_dim; ++i) dst[i] = f32_to_fp16(src[i]);
    } else {
      int8_t* dst = reinterpret_cast<int8_t*>(p.data.get()) + row * p.head_dim;
      float amax = 0.0f;
      for (int i = 0; i < p.head_dim; ++i) amax = std::max(amax, std::fabs(src[i]));
      const float d = amax / 127.0f;
      p.scales[row] = d;
      for (int i = 0; i < p.head_dim; ++i) {
        // |src / d| <= 127 up to rounding of d; the clamp keeps that rounding in range.
        const float q = d == 0.0f ? 0.0f : std::roundf(src[i] / d);
        dst[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
      }
    }
  }
}

void KvCache::write(int layer, int32_t pos, const float* k, const float* v) {
  check_layer(layer);
  if (pos < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "KV cache: negative position {}", pos);
  if (pos >= n_ctx_) fail(STRATA_ERR_CONTEXT_FULL, "KV cache: position {} does not fit a context of {}", pos, n_ctx_);
  store(k_, layer, pos, k);
  store(v_, layer, pos, v);
  written_[static_cast<size_t>(layer) * n_ctx_ + pos] = 1;
}

KvView KvCache::view(const Plane& p, int layer) const {
  check_layer(layer);
  const size_t row0 = static_cast<size_t>(layer) * n_ctx_ * n_head_kv_;
  KvView v;
  v.type = type_;
  v.data = p.data.get() + row0 * p.head_dim * element_size(type_);
  v.scales = type_ == KvType::Int8 ? p.scales.get() + row0 : nullptr;
  v.written = written_.get() + static_cast<size_t>(layer) * n_ctx_;
  v.n_ctx = n_ctx_;
  v.n_head_kv = n_head_kv_;
  v.head_dim = p.head_dim;
  return v;
}

KvView KvCache::k_view(int layer) const { return view(k_, layer); }
KvView KvCache::v_view(int layer) const { return view(v_, layer); }

void KvCache::clear() { std::memset(written_.get(), 0, static_cast<size_t>(n_layer_) * n_ctx_); }

}  // namespace strata::core
