// GEMM dispatcher: checks GemmArgs, resolves defaults, sizes the grid and calls the per-type kernel instance.
//
// Large F16/BF16 matrices: the exact F32 kernel runs at CUDA-core speed. If a
// model ever brings big float matrices, cublasGemmEx on 16-bit activations
// (F32 compute) is the fast path, at the price of rounding the activations;
// nothing in the Qwen3-MoE GGUFs needs it (their float matrices are routers).
#include "cuda/gemm/mmq.cuh"

#include <algorithm>

#include "core/base/env.h"
#include "cuda/gemm/mmq_internal.cuh"
#include "cuda/gemm/quant_traits.cuh"
#include "cuda/gemm/type_paths.h"
#include "cuda/runtime/check.h"

namespace strata::cuda {

using core::GgmlType;

GemmKernel gemm_kernel() {
  static const bool mma = core::env_choice(core::EnvVar::Gemm) == "mma";  // asked at every GEMM launch
  if (mma) return GemmKernel::MmaSync;
  return gemm_detail::compute_capability() == 90 ? GemmKernel::Wgmma : GemmKernel::MmaSync;
}

namespace {

// The warpgroup kernel when `wgmma` (chosen, and it has the type); otherwise
// the mma.sync kernel of a quantized type or the float kernel.
void gemm_launch(const gemm_detail::MmParams& p, GgmlType type, bool wgmma, dim3 grid, cudaStream_t stream) {
  if (wgmma) {
    return dispatch_type<KernelPath::Wgmma>(
        type, [&](auto t) { gemm_detail::launch_wgmma<decltype(t)::value>(p, grid, stream); });
  }
  dispatch_type<KernelPath::Mmq>(type, [&](auto t) {
    constexpr GgmlType T = decltype(t)::value;
    if constexpr (q8a_type(T)) {
      gemm_detail::launch_f16<T>(p, grid, stream);
    } else {
      gemm_detail::launch_float<T>(p, grid, stream);
    }
  });
}

}  // namespace

void gemm(const GemmArgs& a, cudaStream_t stream) {
  constexpr const char* op = "gemm";
  gemm_detail::check_stream(op, stream);
  const GgmlType type = a.w.type;
  const bool quant = q8a_type(type);
  const bool pair = a.epi == Epilogue::SwigluPair;
  gemm_detail::check_weights(op, KernelPath::Mmq, a.w, pair ? &a.w2 : nullptr, quant ? 256 : 32);
  const int64_t n_in = a.w.n_in, n_out = a.w.n_out;
  require(a.n_rows >= 0 && a.n_rows < (1LL << 31), op, "0 <= n_rows < 2^31", {{"n_rows", a.n_rows}});
  if (a.n_rows == 0) return;
  const int64_t act_row = gemm_act_row_bytes(type, n_in);
  const int64_t ld_x = a.ld_x != 0 ? a.ld_x : act_row;
  const int64_t ld_y = a.ld_y != 0 ? a.ld_y : n_out;
  require(a.x != nullptr && ld_x >= act_row && ld_x % 16 == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0, op,
          "activation rows 16-byte aligned, ld_x >= one row's bytes", {{"ld_x", ld_x}, {"row_bytes", act_row}});
  const bool reads_y = a.epi == Epilogue::SwigluMul || a.epi == Epilogue::Add;
  require((a.y != nullptr || (a.yh != nullptr && !reads_y)) && ld_y >= n_out, op,
          "y (or yh alone, for an epilogue that reads no y) and ld_y >= n_out", {{"ld_y", ld_y}, {"n_out", n_out}});
  require(a.x_div >= 1 && (a.x_rows != nullptr || a.x_div == 1), op, "x_div >= 1, and 1 without x_rows",
          {{"x_div", a.x_div}});
  const int64_t ld_yh = a.ld_yh != 0 ? a.ld_yh : n_out;
  require(a.yh == nullptr || ld_yh >= n_out, op, "ld_yh >= n_out for F16 outputs yh",
          {{"n_out", n_out}, {"ld_yh", ld_yh}});
  const int64_t rows = quant ? gemm_detail::kMmqRows : gemm_detail::kFmmRows;
  const int64_t nf = pair ? rows / 2 : rows;
  require(a.tiles == nullptr || (a.tile_count != nullptr && a.max_tiles >= 1), op,
          "tile_count and max_tiles >= 1 with tiles", {{"max_tiles", a.max_tiles}});
  // Positions per block: the kernel's; but a dense launch of 128-position
  // blocks that would leave the device idle takes 64-position ones, twice the
  // blocks at half the work each, where those still fit one wave.
  const bool grouped = a.tiles != nullptr;
  const int64_t row_blocks = (n_out + nf - 1) / nf;
  const bool wgmma = gemm_kernel() == GemmKernel::Wgmma && has_kernel(KernelPath::Wgmma, type);
  int cols = gemm_detail::kTileCols;
  if (wgmma)
    dispatch_type<KernelPath::Wgmma>(type, [&](auto t) { cols = QuantTraits<decltype(t)::value>::kWgCols; });
  if (!grouped && cols > gemm_detail::kTileCols &&
      row_blocks * gemm_detail::position_blocks(gemm_detail::kTileCols, false, a.n_rows, 0) <= gemm_detail::sm_count())
    cols = gemm_detail::kTileCols;
  const int64_t blocks = gemm_detail::position_blocks(cols, grouped, a.n_rows, a.max_tiles);
  require(blocks <= 65535, op, "at most 65535 blocks of positions", {{"blocks", blocks}, {"positions", cols}});

  gemm_detail::MmParams p{};
  p.w = gemm_detail::matrix_set(a.w);
  p.w2 = gemm_detail::matrix_set(a.w2);
  p.row_bytes = static_cast<int64_t>(core::row_size(type, n_in));
  p.n_in = static_cast<int>(n_in);
  p.n_out = static_cast<int>(n_out);
  p.x = static_cast<const uint8_t*>(a.x);
  p.ld_x = ld_x;
  p.x_rows = a.x_rows;
  p.x_div = a.x_div;
  p.y = a.y;
  p.ld_y = ld_y;
  p.y_rows = a.y_rows;
  p.yh = a.yh;
  p.ld_yh = ld_yh;
  p.n_rows = a.n_rows;
  p.tiles = a.tiles;
  p.tile_count = a.tile_count;
  p.epi = static_cast<int>(a.epi);
  p.cols = cols;
  gemm_launch(p, type, wgmma, dim3(static_cast<unsigned>(row_blocks), static_cast<unsigned>(blocks)), stream);
}

GemmActs gemm_acts(core::GgmlType t) {
  return q8a_type(t) ? GemmActs::F16 : GemmActs::F32;
}

int64_t gemm_act_row_bytes(core::GgmlType t, int64_t n) {
  return n * (gemm_acts(t) == GemmActs::F16 ? 2 : 4);
}

void mmq(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const void* x, int64_t n_rows, float* y,
         cudaStream_t stream, Epilogue epi) {
  GemmArgs a;
  a.w = dense_weights(type, w, n_in, n_out);
  a.x = x;
  a.y = y;
  a.n_rows = n_rows;
  a.epi = epi;
  gemm(a, stream);
}

}  // namespace strata::cuda
