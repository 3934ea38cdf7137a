// Token embedding lookup on the device: rows of a GGUF-typed table dequantized to F32.
#include <cmath>

#include "cuda/gemm/quant_traits.cuh"
#include "cuda/gemm/type_paths.h"
#include "cuda/norm/embed.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kGetRowsThreads = 256;

// One block per token.
template <core::GgmlType T>
static __global__ void get_rows_kernel(const unsigned char* __restrict__ table, int64_t n_rows, size_t row_bytes,
                                       int64_t n_cols, const int32_t* __restrict__ ids, float* __restrict__ out) {
  pdl_prologue();
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  float* dst = out + t * n_cols;
  if (id < 0 || id >= n_rows) {
    for (int64_t i = threadIdx.x; i < n_cols; i += kGetRowsThreads) dst[i] = NAN;
    return;
  }
  const void* row = table + static_cast<size_t>(id) * row_bytes;
  for (int64_t i = threadIdx.x; i < n_cols; i += kGetRowsThreads) dst[i] = QuantTraits<T>::value(row, i);
}

template <core::GgmlType T>
void launch(const void* table, int64_t n_rows, size_t row_bytes, int64_t n_cols, const int32_t* ids, int64_t n_tok,
            float* out, cudaStream_t stream) {
  cuda::launch("get_rows_kernel", get_rows_kernel<T>, static_cast<unsigned>(n_tok), kGetRowsThreads, 0, stream,
         static_cast<const unsigned char*>(table), n_rows, row_bytes, n_cols, ids, out);
}

}  // namespace

void get_rows(core::GgmlType type, const void* table, int64_t n_rows, int64_t n_cols, const int32_t* ids, int64_t T,
              float* out, cudaStream_t stream) {
  require_stream(stream, "get_rows");
  require_kernel(KernelPath::Embed, type, "get_rows");
  const int64_t block = core::type_traits(type).block_size;
  require(n_cols >= 1 && n_cols % block == 0 && n_rows >= 1 && T >= 0 && T <= INT32_MAX, "get_rows",
          "n_cols a positive multiple of the block size, n_rows >= 1, 0 <= T < 2^31",
          {{"n_cols", n_cols}, {"block", block}, {"n_rows", n_rows}, {"T", T}});
  if (T == 0) return;
  const size_t row_bytes = core::row_size(type, n_cols);
  dispatch_type<KernelPath::Embed>(type, [&](auto t) {
    launch<decltype(t)::value>(table, n_rows, row_bytes, n_cols, ids, T, out, stream);
  });
}

}  // namespace strata::cuda
