// Which GGUF types each CUDA kernel path implements: one type list per path,
// the dispatch from a runtime type to a kernel template's instance, and the
// refusal (UNSUPPORTED, naming the type and the path) of a pair without one.
//
// Plain C++ (no CUDA): the loader checks a model against these lists before
// anything reaches a device, and the unit tests walk every pair on the CPU.
// Adding a type to a path: its kernel instance, then the type in the path's
// list here (docs/architecture.md, "Adding a quant type").
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "core/quant/quant.h"

namespace strata::core {
struct ModelWeights;
struct StagePlan;
}  // namespace strata::core

namespace strata::cuda {

enum class KernelPath {
  Mmvq,       // matrix-vector products of decode (mmvq.cu)
  Mmq,        // the GEMM of prompt rows, mma.sync and float kernels (mmq.cu)
  Wgmma,      // the sm_90 warpgroup GEMM of quantized weights (mmq_wgmma.cuh)
  F16Decode,  // weights decoded to F16 for cuBLAS (f16_weights.cu)
  Embed,      // rows of the token embedding (embed.cu)
  MoeGemm,    // the experts' grouped GEMM and matrix-vector products (moe_gemm.cu)
  Peer,       // experts a peer device streams and computes (peer.cpp)
};

inline constexpr KernelPath kKernelPaths[] = {KernelPath::Mmvq,  KernelPath::Mmq,     KernelPath::Wgmma,
                                              KernelPath::F16Decode, KernelPath::Embed, KernelPath::MoeGemm,
                                              KernelPath::Peer};

constexpr const char* path_name(KernelPath p) {
  constexpr const char* kNames[] = {"mmvq", "mmq", "wgmma", "f16 decode", "embed", "moe gemm", "peer"};
  return kNames[static_cast<size_t>(p)];
}

template <core::GgmlType... Ts>
struct TypeList {
  static constexpr bool contains(core::GgmlType t) { return ((t == Ts) || ...); }
};

namespace type_lists {
using core::GgmlType;
// The types whose CUDA kernels dot Q8A blocks (core::activation_kind's column for
// each type with a CUDA kernel, checked by the unit tests); every other type
// with a CUDA kernel dots F32 rows.
using Q8a = TypeList<GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q1_0,
                     GgmlType::Q2_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                     GgmlType::IQ3_XXS, GgmlType::IQ3_S>;

using Mmvq = TypeList<GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                      GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q1_0, GgmlType::Q2_0, GgmlType::Q2_K, GgmlType::Q3_K,
                      GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
                      GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S>;
using Mmq = Mmvq;
using Wgmma = Q8a;      // every quantized type
using F16Decode = Q8a;  // every quantized type
using Embed = Mmvq;
// Composite paths: each type runs through mmq (prompt rows) and mmvq (decode), one list.
using MoeGemm = Mmvq;
using Peer = MoeGemm;
}  // namespace type_lists

template <KernelPath P>
struct PathTypes;
template <> struct PathTypes<KernelPath::Mmvq> { using type = type_lists::Mmvq; };
template <> struct PathTypes<KernelPath::Mmq> { using type = type_lists::Mmq; };
template <> struct PathTypes<KernelPath::Wgmma> { using type = type_lists::Wgmma; };
template <> struct PathTypes<KernelPath::F16Decode> { using type = type_lists::F16Decode; };
template <> struct PathTypes<KernelPath::Embed> { using type = type_lists::Embed; };
template <> struct PathTypes<KernelPath::MoeGemm> { using type = type_lists::MoeGemm; };
template <> struct PathTypes<KernelPath::Peer> { using type = type_lists::Peer; };

constexpr bool has_kernel(KernelPath p, core::GgmlType t) {
  switch (p) {
    case KernelPath::Mmvq: return type_lists::Mmvq::contains(t);
    case KernelPath::Mmq: return type_lists::Mmq::contains(t);
    case KernelPath::Wgmma: return type_lists::Wgmma::contains(t);
    case KernelPath::F16Decode: return type_lists::F16Decode::contains(t);
    case KernelPath::Embed: return type_lists::Embed::contains(t);
    case KernelPath::MoeGemm: return type_lists::MoeGemm::contains(t);
    case KernelPath::Peer: return type_lists::Peer::contains(t);
  }
  return false;
}

// The int8 kernels' weights (they take Q8A activations); the rest take F32.
constexpr bool q8a_type(core::GgmlType t) { return type_lists::Q8a::contains(t); }

// Throws Error(UNSUPPORTED) naming the type and the path; `what` (a tensor's
// name, or an op) leads the message when given. Defined in type_paths.cpp:
// .cu files cannot include core/base/error.h (fmt).
[[noreturn]] void refuse_kernel(KernelPath p, core::GgmlType t, const char* what = nullptr);

inline void require_kernel(KernelPath p, core::GgmlType t, const char* what = nullptr) {
  if (!has_kernel(p, t)) refuse_kernel(p, t, what);
}

// Calls f(std::integral_constant<GgmlType, T>{}) for the T of path P's list
// equal to t; refuses a type outside the list.
template <KernelPath P, typename F>
void dispatch_type(core::GgmlType t, F&& f) {
  [&]<core::GgmlType... Ts>(TypeList<Ts...>) {
    if (!((t == Ts ? (f(std::integral_constant<core::GgmlType, Ts>{}), true) : false) || ...)) refuse_kernel(P, t);
  }(typename PathTypes<P>::type{});
}

// The types of path P's list, in its order (the tests walk them).
template <KernelPath P>
std::vector<core::GgmlType> path_types() {
  return []<core::GgmlType... Ts>(TypeList<Ts...>) {
    return std::vector<core::GgmlType>{Ts...};
  }(typename PathTypes<P>::type{});
}

// Refuses, before anything is placed or uploaded, a tensor of the stage whose
// type has no CUDA kernel on a path it takes (UNSUPPORTED naming the tensor,
// the type and the path).
void require_stage_kernels(const core::ModelWeights& w, const core::StagePlan& plan, bool peer);

}  // namespace strata::cuda
