// Host calls of the STRATA_HD members of QuantTraits, compiled by nvcc (quant_pairs_host.h).
#include "unit/quant_pairs_host.h"

#include "cuda/gemm/quant_traits.cuh"
#include "cuda/gemm/type_paths.h"

namespace strata::test {

int wgmma_chunk_delta(core::GgmlType t) {
  int delta = 0;
  cuda::dispatch_type<cuda::KernelPath::Wgmma>(
      t, [&](auto tag) { delta = cuda::QuantTraits<decltype(tag)::value>::kChunkDelta; });
  return delta;
}

bool wgmma_signed(core::GgmlType t) {
  bool s = false;
  cuda::dispatch_type<cuda::KernelPath::Wgmma>(
      t, [&](auto tag) { s = cuda::QuantTraits<decltype(tag)::value>::kSigned; });
  return s;
}

uint32_t wgmma_quant_pairs(core::GgmlType t, const uint8_t* B, int i, int lane) {
  uint32_t q = 0;
  cuda::dispatch_type<cuda::KernelPath::Wgmma>(
      t, [&](auto tag) { q = cuda::QuantTraits<decltype(tag)::value>::quant_pairs(B, i, lane); });
  return q;
}

int scale_type_w4(core::GgmlType t, const uint8_t* B, int j, int k4) {
  using core::GgmlType;
  switch (t) {
    case GgmlType::Q4_0: return cuda::QuantTraits<GgmlType::Q4_0>::w4(B, j, k4);
    case GgmlType::Q4_1: return cuda::QuantTraits<GgmlType::Q4_1>::w4(B, j, k4);
    case GgmlType::Q5_0: return cuda::QuantTraits<GgmlType::Q5_0>::w4(B, j, k4);
    case GgmlType::Q5_1: return cuda::QuantTraits<GgmlType::Q5_1>::w4(B, j, k4);
    case GgmlType::Q1_0: return cuda::QuantTraits<GgmlType::Q1_0>::w4(B, j, k4);
    case GgmlType::Q2_0: return cuda::QuantTraits<GgmlType::Q2_0>::w4(B, j, k4);
    default: cuda::refuse_kernel(cuda::KernelPath::Mmvq, t, "scale_type_w4");
  }
}

}  // namespace strata::test
