// The type table (one row per GGUF type: layout and CPU kernels), name parsing,
// dispatch through the rows, and the F32/F16/BF16/Q8_0 and Q8A activation kernels.
#include "core/quant/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/quant/quant_avx2.h"
#include "core/quant/quant_fp4.h"
#include "core/quant/quant_iq1.h"
#include "core/quant/quant_iqgrid.h"
#include "core/quant/quant_iquants.h"
#include "core/quant/quant_kquants.h"
#include "core/quant/quant_legacy.h"

namespace strata::core {
namespace {

// Kernel columns of a row. nb counts blocks of the row (elements for the
// float types, whose block is 1); act is const float* or const BlockQ8A*, as
// the row's activation kind says.
using DequantizeFn = void (*)(const void* src, float* dst, int64_t nb);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t nb);
using DotFn = float (*)(const void* w, const void* act, int64_t nb);
using Dot4Fn = void (*)(const void* const rows[4], const void* act, int64_t nb, float out[4]);

struct CpuKernels {
  ActivationKind activation = ActivationKind::F32;  // what dot and dot4 take
  DequantizeFn dequantize = nullptr;
  QuantizeFn quantize = nullptr;
  DotFn dot = nullptr;
  Dot4Fn dot4 = nullptr;  // bit for bit four dot calls; faster where the CPU allows
};

struct TypeRow {
  TypeTraits traits;  // traits.computable: the row has every kernel column
  CpuKernels cpu;
};

// ---- float types --------------------------------------------------------

void copy_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void store_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  if (cpu_has_avx2()) return f16_to_f32_avx2(h, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}

void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(b[i]);
}

void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) b[i] = f32_to_bf16(src[i]);
}

float identity_f32(float v) { return v; }

// Sequential F32 dot; `ToF32` widens one stored weight.
template <typename W, float (*ToF32)(W)>
float dot_float_row(const void* w, const void* act, int64_t n) {
  const auto* wr = static_cast<const W*>(w);
  const auto* x = static_cast<const float*>(act);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += ToF32(wr[i]) * x[i];
  return acc;
}

template <DotFn Dot>
void dot4_by_rows(const void* const rows[4], const void* act, int64_t nb, float out[4]) {
  for (int r = 0; r < 4; ++r) out[r] = Dot(rows[r], act, nb);
}

// ---- Q8_0 ---------------------------------------------------------------

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

// ---- adapters from the typed block kernels to the row's columns ----------

template <typename Block, void (*F)(const Block*, float*, int64_t)>
void dequantize_blocks(const void* src, float* dst, int64_t nb) {
  F(static_cast<const Block*>(src), dst, nb);
}

template <typename Block, void (*F)(const float*, Block*, int64_t)>
void quantize_blocks(const float* src, void* dst, int64_t nb) {
  F(src, static_cast<Block*>(dst), nb);
}

template <typename Block>
using BlockDotFn = float (*)(const Block*, const BlockQ8A*, int64_t);
template <typename Block>
using BlockDot4Fn = void (*)(const Block* const[4], const BlockQ8A*, int64_t, float[4]);

// The AVX2 kernels where the CPU has them, else the plain loops (same bits).
template <typename Block, BlockDotFn<Block> Dot, BlockDotFn<Block> DotAvx2>
float dot_blocks(const void* w, const void* act, int64_t nb) {
  const auto* x = static_cast<const Block*>(w);
  const auto* a = static_cast<const BlockQ8A*>(act);
  return cpu_has_avx2() ? DotAvx2(x, a, nb) : Dot(x, a, nb);
}

template <typename Block, BlockDotFn<Block> Dot, BlockDot4Fn<Block> Dot4Avx2>
void dot4_blocks(const void* const rows[4], const void* act, int64_t nb, float out[4]) {
  const auto* a = static_cast<const BlockQ8A*>(act);
  if (cpu_has_avx2()) {
    const Block* typed[4] = {static_cast<const Block*>(rows[0]), static_cast<const Block*>(rows[1]),
                             static_cast<const Block*>(rows[2]), static_cast<const Block*>(rows[3])};
    return Dot4Avx2(typed, a, nb, out);
  }
  for (int r = 0; r < 4; ++r) out[r] = Dot(static_cast<const Block*>(rows[r]), a, nb);
}

// The four kernel columns of a block-quantized type dotted against Q8A: Dot
// is the plain loop, DotAvx2 and Dot4Avx2 its AVX2 forms (quant_avx2.h).
template <typename Block, void (*Deq)(const Block*, float*, int64_t), void (*Quant)(const float*, Block*, int64_t),
          BlockDotFn<Block> Dot, BlockDotFn<Block> DotAvx2, BlockDot4Fn<Block> Dot4Avx2>
constexpr CpuKernels q8a_kernels() {
  return {ActivationKind::Q8A, dequantize_blocks<Block, Deq>, quantize_blocks<Block, Quant>,
          dot_blocks<Block, Dot, DotAvx2>, dot4_blocks<Block, Dot, Dot4Avx2>};
}

template <typename W, float (*ToF32)(W)>
constexpr CpuKernels float_kernels(DequantizeFn deq, QuantizeFn quant) {
  return {ActivationKind::F32, deq, quant, dot_float_row<W, ToF32>, dot4_by_rows<dot_float_row<W, ToF32>>};
}

// ---- the table ----------------------------------------------------------

constexpr uint32_t kMaxTypeId = 42;

// Every GGUF type, including those without kernels here, so that the GGUF
// reader can validate the tensor table of any file. Adding a type: its block
// struct in quant_blocks.h, its kernels, one row here (docs/architecture.md).
constexpr std::array<TypeRow, kMaxTypeId + 1> make_type_table() {
  std::array<TypeRow, kMaxTypeId + 1> t{};  // name == nullptr: retired id
  auto set = [&t](GgmlType type, const char* name, int64_t block, size_t bytes, CpuKernels cpu = {}) {
    const bool all = cpu.dequantize && cpu.quantize && cpu.dot && cpu.dot4;
    const bool none = !cpu.dequantize && !cpu.quantize && !cpu.dot && !cpu.dot4;
    if (!all && !none) throw "a type row has some kernel columns but not all";  // fails the constant evaluation
    t[static_cast<uint32_t>(type)] = TypeRow{TypeTraits{name, block, bytes, all}, cpu};
  };
  set(GgmlType::F32, "f32", 1, 4, float_kernels<float, identity_f32>(copy_f32, store_f32));
  set(GgmlType::F16, "f16", 1, 2, float_kernels<uint16_t, fp16_to_f32>(dequantize_f16, quantize_f16));
  set(GgmlType::Q4_0, "q4_0", 32, 18,
      q8a_kernels<BlockQ4_0, dequantize_q4_0, quantize_q4_0, dot_q4_0_portable, dot_q4_0_avx2, dot4_q4_0_avx2>());
  set(GgmlType::Q4_1, "q4_1", 32, 20,
      q8a_kernels<BlockQ4_1, dequantize_q4_1, quantize_q4_1, dot_q4_1_portable, dot_q4_1_avx2, dot4_q4_1_avx2>());
  set(GgmlType::Q5_0, "q5_0", 32, 22,
      q8a_kernels<BlockQ5_0, dequantize_q5_0, quantize_q5_0, dot_q5_0_portable, dot_q5_0_avx2, dot4_q5_0_avx2>());
  set(GgmlType::Q5_1, "q5_1", 32, 24,
      q8a_kernels<BlockQ5_1, dequantize_q5_1, quantize_q5_1, dot_q5_1_portable, dot_q5_1_avx2, dot4_q5_1_avx2>());
  set(GgmlType::Q8_0, "q8_0", 32, 34,
      q8a_kernels<BlockQ8_0, dequantize_q8_0, quantize_q8_0,
                  dot_q8_0_portable, dot_q8_0_avx2, dot4_q8_0_avx2>());
  set(GgmlType::Q8_1, "q8_1", 32, 36);
  set(GgmlType::Q2_K, "q2_K", 256, 84,
      q8a_kernels<BlockQ2_K, dequantize_q2_k, quantize_q2_k,
                  dot_q2_k_portable, dot_q2_k_avx2, dot4_q2_k_avx2>());
  set(GgmlType::Q3_K, "q3_K", 256, 110,
      q8a_kernels<BlockQ3_K, dequantize_q3_k, quantize_q3_k,
                  dot_q3_k_portable, dot_q3_k_avx2, dot4_q3_k_avx2>());
  set(GgmlType::Q4_K, "q4_K", 256, 144,
      q8a_kernels<BlockQ4_K, dequantize_q4_k, quantize_q4_k,
                  dot_q4_k_portable, dot_q4_k_avx2, dot4_q4_k_avx2>());
  set(GgmlType::Q5_K, "q5_K", 256, 176,
      q8a_kernels<BlockQ5_K, dequantize_q5_k, quantize_q5_k,
                  dot_q5_k_portable, dot_q5_k_avx2, dot4_q5_k_avx2>());
  set(GgmlType::Q6_K, "q6_K", 256, 210,
      q8a_kernels<BlockQ6_K, dequantize_q6_k, quantize_q6_k,
                  dot_q6_k_portable, dot_q6_k_avx2, dot4_q6_k_avx2>());
  set(GgmlType::Q8_K, "q8_K", 256, 292);
  set(GgmlType::IQ2_XXS, "iq2_xxs", 256, 66,
      q8a_kernels<BlockIQ2_XXS, dequantize_iq2_xxs, quantize_iq2_xxs,
                  dot_iq2_xxs_portable, dot_iq2_xxs_avx2, dot4_iq2_xxs_avx2>());
  set(GgmlType::IQ2_XS, "iq2_xs", 256, 74,
      q8a_kernels<BlockIQ2_XS, dequantize_iq2_xs, quantize_iq2_xs,
                  dot_iq2_xs_portable, dot_iq2_xs_avx2, dot4_iq2_xs_avx2>());
  set(GgmlType::IQ3_XXS, "iq3_xxs", 256, 98,
      q8a_kernels<BlockIQ3_XXS, dequantize_iq3_xxs, quantize_iq3_xxs,
                  dot_iq3_xxs_portable, dot_iq3_xxs_avx2, dot4_iq3_xxs_avx2>());
  set(GgmlType::IQ1_S, "iq1_s", 256, 50,
      q8a_kernels<BlockIQ1_S, dequantize_iq1_s, quantize_iq1_s,
                  dot_iq1_s_portable, dot_iq1_s_avx2, dot4_iq1_s_avx2>());
  set(GgmlType::IQ4_NL, "iq4_nl", 32, 18,
      q8a_kernels<BlockIQ4_NL, dequantize_iq4_nl, quantize_iq4_nl,
                  dot_iq4_nl_portable, dot_iq4_nl_avx2, dot4_iq4_nl_avx2>());
  set(GgmlType::IQ3_S, "iq3_s", 256, 110,
      q8a_kernels<BlockIQ3_S, dequantize_iq3_s, quantize_iq3_s,
                  dot_iq3_s_portable, dot_iq3_s_avx2, dot4_iq3_s_avx2>());
  set(GgmlType::IQ2_S, "iq2_s", 256, 82,
      q8a_kernels<BlockIQ2_S, dequantize_iq2_s, quantize_iq2_s,
                  dot_iq2_s_portable, dot_iq2_s_avx2, dot4_iq2_s_avx2>());
  set(GgmlType::IQ4_XS, "iq4_xs", 256, 136,
      q8a_kernels<BlockIQ4_XS, dequantize_iq4_xs, quantize_iq4_xs,
                  dot_iq4_xs_portable, dot_iq4_xs_avx2, dot4_iq4_xs_avx2>());
  set(GgmlType::I8, "i8", 1, 1);
  set(GgmlType::I16, "i16", 1, 2);
  set(GgmlType::I32, "i32", 1, 4);
  set(GgmlType::I64, "i64", 1, 8);
  set(GgmlType::F64, "f64", 1, 8);
  set(GgmlType::IQ1_M, "iq1_m", 256, 56,
      q8a_kernels<BlockIQ1_M, dequantize_iq1_m, quantize_iq1_m,
                  dot_iq1_m_portable, dot_iq1_m_avx2, dot4_iq1_m_avx2>());
  set(GgmlType::BF16, "bf16", 1, 2, float_kernels<uint16_t, bf16_to_f32>(dequantize_bf16, quantize_bf16));
  set(GgmlType::TQ1_0, "tq1_0", 256, 54);
  set(GgmlType::TQ2_0, "tq2_0", 256, 66);
  set(GgmlType::MXFP4, "mxfp4", 32, 17,
      q8a_kernels<BlockMXFP4, dequantize_mxfp4, quantize_mxfp4,
                  dot_mxfp4_portable, dot_mxfp4_avx2, dot4_mxfp4_avx2>());
  set(GgmlType::NVFP4, "nvfp4", 64, 36,
      q8a_kernels<BlockNVFP4, dequantize_nvfp4, quantize_nvfp4,
                  dot_nvfp4_portable, dot_nvfp4_avx2, dot4_nvfp4_avx2>());
  set(GgmlType::Q1_0, "q1_0", 128, 18,
      q8a_kernels<BlockQ1_0, dequantize_q1_0, quantize_q1_0, dot_q1_0_portable, dot_q1_0_avx2, dot4_q1_0_avx2>());
  set(GgmlType::Q2_0, "q2_0", 64, 18,
      q8a_kernels<BlockQ2_0, dequantize_q2_0, quantize_q2_0, dot_q2_0_portable, dot_q2_0_avx2, dot4_q2_0_avx2>());
  return t;
}

constexpr auto kTypes = make_type_table();

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The row of a call on n elements of a type with CPU kernels.
const TypeRow& computable_row(GgmlType type, int64_t n, const char* what) {
  const TypeTraits& t = type_traits(type);  // refuses an id outside the table
  const TypeRow& row = kTypes[static_cast<uint32_t>(type)];
  if (!t.computable) fail(STRATA_ERR_UNSUPPORTED, "{}: tensor type {} has no CPU kernel", what, t.name);
  if (n < 0 || n % t.block_size != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "{}: {} elements is not a multiple of the {} block size {}", what, n, t.name,
         t.block_size);
  }
  return row;
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
  if (id > kMaxTypeId || kTypes[id].traits.name == nullptr) return nullptr;
  return &kTypes[id].traits;
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
    const char* known = kTypes[id].traits.name;
    if (known == nullptr) continue;
    if (iequal(name, known)) return static_cast<GgmlType>(id);
    if (!valid.empty()) valid += ", ";
    valid += known;
  }
  fail(STRATA_ERR_INVALID_ARGUMENT, "unknown tensor type '{}' (valid: {})", name, valid);
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const TypeRow& row = computable_row(type, n, "dequantize_row");
  row.cpu.dequantize(src, dst, n / row.traits.block_size);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const TypeRow& row = computable_row(type, n, "quantize_row");
  row.cpu.quantize(src, dst, n / row.traits.block_size);
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

ActivationKind activation_kind(GgmlType weight) { return computable_row(weight, 0, "activation_kind").cpu.activation; }

size_t activation_row_size(ActivationKind kind, int64_t n) {
  if (n < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "activation row of {} elements", n);
  if (kind == ActivationKind::F32) return static_cast<size_t>(n) * sizeof(float);
  if (n % 32 != 0) fail(STRATA_ERR_INVALID_ARGUMENT, "Q8A activations: {} elements is not a multiple of 32", n);
  return static_cast<size_t>(n / 32) * sizeof(BlockQ8A);
}

float vec_dot(GgmlType w, const void* wrow, const void* act, int64_t n) {
  const TypeRow& row = computable_row(w, n, "vec_dot");
  return row.cpu.dot(wrow, act, n / row.traits.block_size);
}

void vec_dot4(GgmlType w, const void* const rows[4], const void* act, int64_t n, float out[4]) {
  const TypeRow& row = computable_row(w, n, "vec_dot4");
  row.cpu.dot4(rows, act, n / row.traits.block_size, out);
}

void matvec(GgmlType type, const void* w, int64_t rows, int64_t cols, const void* act, float* out) {
  if (rows < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "matvec: {} rows", rows);
  const TypeRow& row = computable_row(type, cols, "matvec");
  const int64_t nb = cols / row.traits.block_size;
  const size_t stride = row_size(type, cols);
  const auto* base = static_cast<const unsigned char*>(w);
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const void* quad[4] = {base + static_cast<size_t>(r) * stride, base + static_cast<size_t>(r + 1) * stride,
                           base + static_cast<size_t>(r + 2) * stride, base + static_cast<size_t>(r + 3) * stride};
    row.cpu.dot4(quad, act, nb, out + r);
  }
  for (; r < rows; ++r) out[r] = row.cpu.dot(base + static_cast<size_t>(r) * stride, act, nb);
}

}  // namespace strata::core
