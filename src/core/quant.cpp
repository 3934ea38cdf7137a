// Type traits, name parsing, dispatch, and the F32/F16/BF16/Q8_0 and Q8A activation kernels.
#include "core/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "core/quant_avx2.h"
#include "core/quant_kquants.h"

namespace strata::core {
namespace {

constexpr uint32_t kMaxTypeId = 39;

// Sizes of every GGUF type, including those we cannot compute, so that the
// GGUF reader can validate the tensor table of any file.
constexpr std::array<TypeTraits, kMaxTypeId + 1> make_traits_table() {
  std::array<TypeTraits, kMaxTypeId + 1> t{};  // name == nullptr: retired id
  auto set = [&t](GgmlType type, const char* name, int64_t block, size_t bytes, bool computable) {
    t[static_cast<uint32_t>(type)] = TypeTraits{name, block, bytes, computable};
  };
  set(GgmlType::F32, "f32", 1, 4, true);
  set(GgmlType::F16, "f16", 1, 2, true);
  set(GgmlType::Q4_0, "q4_0", 32, 18, false);
  set(GgmlType::Q4_1, "q4_1", 32, 20, false);
  set(GgmlType::Q5_0, "q5_0", 32, 22, false);
  set(GgmlType::Q5_1, "q5_1", 32, 24, false);
  set(GgmlType::Q8_0, "q8_0", 32, 34, true);
  set(GgmlType::Q8_1, "q8_1", 32, 36, false);
  set(GgmlType::Q2_K, "q2_K", 256, 84, false);
  set(GgmlType::Q3_K, "q3_K", 256, 110, false);
  set(GgmlType::Q4_K, "q4_K", 256, 144, true);
  set(GgmlType::Q5_K, "q5_K", 256, 176, true);
  set(GgmlType::Q6_K, "q6_K", 256, 210, true);
  set(GgmlType::Q8_K, "q8_K", 256, 292, false);
  set(GgmlType::IQ2_XXS, "iq2_xxs", 256, 66, false);
  set(GgmlType::IQ2_XS, "iq2_xs", 256, 74, false);
  set(GgmlType::IQ3_XXS, "iq3_xxs", 256, 98, false);
  set(GgmlType::IQ1_S, "iq1_s", 256, 50, false);
  set(GgmlType::IQ4_NL, "iq4_nl", 32, 18, false);
  set(GgmlType::IQ3_S, "iq3_s", 256, 110, false);
  set(GgmlType::IQ2_S, "iq2_s", 256, 82, false);
  set(GgmlType::IQ4_XS, "iq4_xs", 256, 136, false);
  set(GgmlType::I8, "i8", 1, 1, false);
  set(GgmlType::I16, "i16", 1, 2, false);
  set(GgmlType::I32, "i32", 1, 4, false);
  set(GgmlType::I64, "i64", 1, 8, false);
  set(GgmlType::F64, "f64", 1, 8, false);
  set(GgmlType::IQ1_M, "iq1_m", 256, 56, false);
  set(GgmlType::BF16, "bf16", 1, 2, true);
  set(GgmlType::TQ1_0, "tq1_0", 256, 54, false);
  set(GgmlType::TQ2_0, "tq2_0", 256, 66, false);
  set(GgmlType::MXFP4, "mxfp4", 32, 17, false);
  return t;
}

constexpr auto kTraits = make_traits_table();

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Validates a call on a row of n elements of a computable type.
const TypeTraits& computable_traits(GgmlType type, int64_t n, const char* what) {
  const TypeTraits& t = type_traits(type);
  if (!t.computable) fail(STRATA_ERR_UNSUPPORTED, "{}: tensor type {} is not supported", what, t.name);
  if (n < 0 || n % t.block_size != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "{}: {} elements is not a multiple of the {} block size {}", what, n, t.name,
         t.block_size);
  }
  return t;
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(x[i].d);
    for (int l = 0; l < kQK8_0; ++l) y[i * kQK8_0 + l] = d * static_cast<float>(x[i].qs[l]);
  }
}

// d = amax / 127 stored rounded up to F16; values round against the stored d.
void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK8_0;
    float amax = 0.0f;
    for (int l = 0; l < kQK8_0; ++l) amax = std::max(amax, std::abs(xb[l]));
    y[i].d = scale_to_fp16_up(amax / 127.0f);
    const float d = fp16_to_f32(y[i].d);
    const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
    for (int l = 0; l < kQK8_0; ++l) y[i].qs[l] = static_cast<int8_t>(round_clamp(xb[l] * inv_d, -127.0f, 127.0f));
  }
}

// Sequential F32 dot; `to_f32` widens one stored weight.
template <typename W, typename Convert>
float dot_float_row(const W* w, const float* x, int64_t n, Convert to_f32) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += to_f32(w[i]) * x[i];
  return acc;
}

}  // namespace

float dot_q8_0_portable(const BlockQ8_0* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const int32_t isum = dot_quants(x[i].qs, a[i].qs, kQK8_0);
    acc += (fp16_to_f32(x[i].d) * a[i].d) * static_cast<float>(isum);
  }
  return acc;
}

const TypeTraits* find_type_traits(uint32_t id) {
  if (id > kMaxTypeId || kTraits[id].name == nullptr) return nullptr;
  return &kTraits[id];
}

const TypeTraits& type_traits(GgmlType type) {
  const TypeTraits* t = find_type_traits(static_cast<uint32_t>(type));
  if (t == nullptr) fail(STRATA_ERR_UNSUPPORTED, "unknown tensor type id {}", static_cast<uint32_t>(type));
  return *t;
}

size_t row_size(GgmlType type, int64_t n) {
  const TypeTraits& t = type_traits(type);
  if (n < 0 || n % t.block_size != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "a row of {} elements is not a multiple of the {} block size {}", n, t.name,
         t.block_size);
  }
  const auto blocks = static_cast<uint64_t>(n / t.block_size);
  if (blocks > std::numeric_limits<size_t>::max() / t.type_size) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "a {} row of {} elements overflows the address space", t.name, n);
  }
  return static_cast<size_t>(blocks) * t.type_size;
}

GgmlType parse_type_name(std::string_view name) {
  std::string valid;
  for (uint32_t id = 0; id <= kMaxTypeId; ++id) {
    if (kTraits[id].name == nullptr) continue;
    if (iequal(name, kTraits[id].name)) return static_cast<GgmlType>(id);
    if (!valid.empty()) valid += ", ";
    valid += kTraits[id].name;
  }
  fail(STRATA_ERR_INVALID_ARGUMENT, "unknown tensor type '{}' (valid: {})", name, valid);
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const TypeTraits& t = computable_traits(type, n, "dequantize_row");
  const int64_t nb = n / t.block_size;
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      if (cpu_has_avx2()) return f16_to_f32_avx2(h, dst, n);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
      return;
    }
    case GgmlType::BF16: {
      const auto* b = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(b[i]);
      return;
    }
    case GgmlType::Q8_0: return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case GgmlType::Q4_K: return dequantize_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb);
    case GgmlType::Q5_K: return dequantize_q5_k(static_cast<const BlockQ5_K*>(src), dst, nb);
    case GgmlType::Q6_K: return dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
    default: break;
  }
  fail(STRATA_ERR_INTERNAL, "dequantize_row: no kernel for computable type {}", t.name);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const TypeTraits& t = computable_traits(type, n, "quantize_row");
  const int64_t nb = n / t.block_size;
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
      return;
    }
    case GgmlType::BF16: {
      auto* b = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) b[i] = f32_to_bf16(src[i]);
      return;
    }
    case GgmlType::Q8_0: return quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb);
    case GgmlType::Q4_K: return quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), nb);
    case GgmlType::Q5_K: return quantize_q5_k(src, static_cast<BlockQ5_K*>(dst), nb);
    case GgmlType::Q6_K: return quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), nb);
    default: break;
  }
  fail(STRATA_ERR_INTERNAL, "quantize_row: no kernel for computable type {}", t.name);
}

// Division (not a reciprocal multiply) and roundf, exactly as quant.h states,
// so a CUDA quantizer can reproduce the codes bit for bit. The clamp only
// bites when d is subnormal and x / d lost precision.
void quantize_activations(const float* x, BlockQ8A* out, int64_t n) {
  if (n < 0 || n % 32 != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "quantize_activations: {} elements is not a multiple of 32", n);
  }
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0.0f;
    for (int l = 0; l < 32; ++l) amax = std::max(amax, std::abs(xb[l]));
    const float d = amax / 127.0f;
    BlockQ8A& o = out[b];
    o.d = d;
    o.sum = 0;
    if (d == 0.0f) {
      std::fill_n(o.qs, 32, int8_t{0});
      continue;
    }
    for (int l = 0; l < 32; ++l) {
      float v = std::roundf(xb[l] / d);
      v = v < 127.0f ? v : 127.0f;
      v = v > -127.0f ? v : -127.0f;
      o.qs[l] = static_cast<int8_t>(v);
      o.sum += o.qs[l];
    }
  }
}

ActivationKind activation_kind(GgmlType weight) {
  const TypeTraits& t = type_traits(weight);
  switch (weight) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::F64: return ActivationKind::F32;
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64: fail(STRATA_ERR_UNSUPPORTED, "integer tensor type {} is not a weight type", t.name);
    default: return ActivationKind::Q8A;
  }
}

size_t activation_row_size(ActivationKind kind, int64_t n) {
  if (n < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "activation row of {} elements", n);
  if (kind == ActivationKind::F32) return static_cast<size_t>(n) * sizeof(float);
  if (n % 32 != 0) fail(STRATA_ERR_INVALID_ARGUMENT, "Q8A activations: {} elements is not a multiple of 32", n);
  return static_cast<size_t>(n / 32) * sizeof(BlockQ8A);
}

float vec_dot(GgmlType w, const void* wrow, const void* act, int64_t n) {
  const TypeTraits& t = computable_traits(w, n, "vec_dot");
  const int64_t nb = n / t.block_size;
  const auto* xf = static_cast<const float*>(act);
  const auto* xq = static_cast<const BlockQ8A*>(act);
  switch (w) {
    case GgmlType::F32: return dot_float_row(static_cast<const float*>(wrow), xf, n, [](float v) { return v; });
    case GgmlType::F16: return dot_float_row(static_cast<const uint16_t*>(wrow), xf, n, fp16_to_f32);
    case GgmlType::BF16: return dot_float_row(static_cast<const uint16_t*>(wrow), xf, n, bf16_to_f32);
    case GgmlType::Q8_0: {
      const auto* q = static_cast<const BlockQ8_0*>(wrow);
      return cpu_has_avx2() ? dot_q8_0_avx2(q, xq, nb) : dot_q8_0_portable(q, xq, nb);
    }
    case GgmlType::Q4_K: return dot_q4_k(static_cast<const BlockQ4_K*>(wrow), xq, nb);
    case GgmlType::Q5_K: return dot_q5_k(static_cast<const BlockQ5_K*>(wrow), xq, nb);
    case GgmlType::Q6_K: return dot_q6_k(static_cast<const BlockQ6_K*>(wrow), xq, nb);
    default: break;
  }
  fail(STRATA_ERR_INTERNAL, "vec_dot: no kernel for computable type {}", t.name);
}

namespace {

template <typename Block>
std::array<const Block*, 4> typed_rows(const void* const rows[4]) {
  return {static_cast<const Block*>(rows[0]), static_cast<const Block*>(rows[1]), static_cast<const Block*>(rows[2]),
          static_cast<const Block*>(rows[3])};
}

}  // namespace

void vec_dot4(GgmlType w, const void* const rows[4], const void* act, int64_t n, float out[4]) {
  const TypeTraits& t = computable_traits(w, n, "vec_dot4");
  const int64_t nb = n / t.block_size;
  const auto* xq = static_cast<const BlockQ8A*>(act);
  if (cpu_has_avx2()) {
    switch (w) {
      case GgmlType::Q8_0: return dot4_q8_0_avx2(typed_rows<BlockQ8_0>(rows).data(), xq, nb, out);
      case GgmlType::Q4_K: return dot4_q4_k_avx2(typed_rows<BlockQ4_K>(rows).data(), xq, nb, out);
      case GgmlType::Q5_K: return dot4_q5_k_avx2(typed_rows<BlockQ5_K>(rows).data(), xq, nb, out);
      case GgmlType::Q6_K: return dot4_q6_k_avx2(typed_rows<BlockQ6_K>(rows).data(), xq, nb, out);
      default: break;
    }
  }
  for (int r = 0; r < 4; ++r) out[r] = vec_dot(w, rows[r], act, n);
}

void matvec(GgmlType type, const void* w, int64_t rows, int64_t cols, const void* act, float* out) {
  if (rows < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "matvec: {} rows", rows);
  computable_traits(type, cols, "matvec");
  const size_t stride = row_size(type, cols);
  const auto* base = static_cast<const unsigned char*>(w);
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const void* quad[4] = {base + static_cast<size_t>(r) * stride, base + static_cast<size_t>(r + 1) * stride,
                           base + static_cast<size_t>(r + 2) * stride, base + static_cast<size_t>(r + 3) * stride};
    vec_dot4(type, quad, act, cols, out + r);
  }
  for (; r < rows; ++r) out[r] = vec_dot(type, base + static_cast<size_t>(r) * stride, act, cols);
}

}  // namespace strata::core
