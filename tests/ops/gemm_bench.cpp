// Micro-benchmark of the matrix kernels (not a test): achieved GB/s (mmvq, quantize) and TFLOPS (mmq, MoE) vs the floors.
//
// gemm_bench [--iters N] [--quick]
// Floors: HBM at 4.2 TB/s for memory-bound kernels, dense F16 MMA at 989
// TFLOPS (H200 SXM datasheet; the bf16 GEMM measured 790 on this machine) for
// matrix-bound ones. Weight sets larger than L2 are rotated through several
// copies so that every timed call reads from HBM.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "cuda/gemm/dense_gemm.h"
#include "cuda/gemm/mmq.cuh"
#include "cuda/gemm/mmvq.cuh"
#include "cuda/moe/moe_gemm.cuh"
#include "cuda/norm/quantize.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/runtime.h"

using strata::core::BlockQ8A;
using strata::core::GgmlType;
namespace core = strata::core;
namespace cuda = strata::cuda;

namespace {

constexpr double kHbm = 4.2e12;     // bytes / s
constexpr double kF16 = 989e12;     // dense F16 MMA FLOP / s
constexpr size_t kRotate = 256u << 20;  // rotate weight copies until this many bytes (> 5x L2)

int g_iters = 20;
bool g_quick = false;

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t bytes) { STRATA_CUDA_CHECK(cudaMalloc(&p, bytes + 256)); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

struct Timer {
  cudaEvent_t a, b;
  Timer() {
    STRATA_CUDA_CHECK(cudaEventCreate(&a));
    STRATA_CUDA_CHECK(cudaEventCreate(&b));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  // Mean seconds per call of f(i) over g_iters calls after 3 warm-up calls.
  template <typename F>
  double time(cudaStream_t s, F&& f) {
    for (int i = 0; i < 3; ++i) f(i);
    STRATA_CUDA_CHECK(cudaEventRecord(a, s));
    for (int i = 0; i < g_iters; ++i) f(i);
    STRATA_CUDA_CHECK(cudaEventRecord(b, s));
    STRATA_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e-3 / g_iters;
  }
};

// `rows` rows of valid blocks of `type` (a few distinct random rows repeated).
std::vector<uint8_t> weight_rows(GgmlType type, int64_t n_in, int64_t rows, std::mt19937& rng) {
  const size_t rb = core::row_size(type, n_in);
  const int64_t distinct = std::min<int64_t>(rows, 64);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n_in));
  std::vector<uint8_t> base(rb * distinct), out(rb * rows);
  for (int64_t r = 0; r < distinct; ++r) {
    for (float& f : v) f = nd(rng) * 0.1f;
    core::quantize_row(type, v.data(), &base[rb * r], n_in);
  }
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&out[rb * r], &base[rb * (r % distinct)], rb);
  return out;
}

// Activations of `rows` rows of n_in in the format for `type`: what mmvq
// reads, or with gemm what the GEMMs read (F16 rows for quantized types).
std::vector<uint8_t> act_rows(GgmlType type, int64_t n_in, int64_t rows, std::mt19937& rng, bool gemm) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_in * rows));
  for (float& f : x) f = nd(rng);
  const size_t ar = gemm ? static_cast<size_t>(cuda::gemm_act_row_bytes(type, n_in))
                         : core::activation_row_size(core::activation_kind(type), n_in);
  std::vector<uint8_t> out(ar * rows);
  if (gemm && cuda::gemm_acts(type) == cuda::GemmActs::F16) {
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t h = core::f32_to_fp16(x[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  } else if (core::activation_kind(type) == core::ActivationKind::Q8A) {
    for (int64_t r = 0; r < rows; ++r) {
      core::quantize_activations(&x[r * n_in], reinterpret_cast<BlockQ8A*>(&out[ar * r]), n_in);
    }
  } else {
    std::memcpy(out.data(), x.data(), out.size());
  }
  return out;
}

// A matrix in enough copies to exceed L2 (capped at 16 copies).
struct Weights {
  size_t bytes;
  int copies;
  Dev dev;
  Weights(GgmlType type, int64_t n_in, int64_t n_out, std::mt19937& rng)
      : bytes(core::row_size(type, n_in) * n_out),
        copies(static_cast<int>(std::clamp<size_t>(kRotate / bytes + 1, 1, 16))),
        dev(bytes * copies) {
    const std::vector<uint8_t> w = weight_rows(type, n_in, n_out, rng);
    for (int c = 0; c < copies; ++c) {
      STRATA_CUDA_CHECK(cudaMemcpy(dev.as<uint8_t>() + bytes * c, w.data(), bytes, cudaMemcpyHostToDevice));
    }
  }
  const void* copy(int i) const { return dev.as<uint8_t>() + bytes * (i % copies); }
};

struct Shape {
  const char* what;
  GgmlType type;
  int64_t n_in, n_out;
  std::string label() const { return std::string(what) + " " + core::type_traits(type).name; }
};

// Weights of `sh` and `rows` activation rows for them (for the GEMMs with gemm), on the device.
struct Problem {
  Weights w;
  Dev x, y;
  Problem(const Shape& sh, int64_t rows, std::mt19937& rng, bool gemm)
      : w(sh.type, sh.n_in, sh.n_out, rng), x(act_rows(sh.type, sh.n_in, 1, rng, gemm).size() * rows),
        y(static_cast<size_t>(rows * sh.n_out * 4)) {
    const std::vector<uint8_t> xa = act_rows(sh.type, sh.n_in, rows, rng, gemm);
    STRATA_CUDA_CHECK(cudaMemcpy(x.p, xa.data(), xa.size(), cudaMemcpyHostToDevice));
  }
};

void bench_quantize(cudaStream_t s, std::mt19937& rng) {
  std::printf("\n== quantize_q8a (F32 rows -> Q8A) ==\n%-28s %10s %10s %10s %8s\n", "shape", "us", "GB/s", "floor us",
              "ratio");
  for (int64_t T : {1, 8192}) {
    const int64_t n = 2048;
    Dev x(static_cast<size_t>(T * n * 4)), y(static_cast<size_t>(T * n / 32 * 40));
    std::vector<float> h(static_cast<size_t>(T * n));
    std::normal_distribution<float> nd;
    for (float& f : h) f = nd(rng);
    STRATA_CUDA_CHECK(cudaMemcpy(x.p, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    Timer tm;
    const double t = tm.time(s, [&](int) { cuda::quantize_q8a(x.as<float>(), n, y.as<BlockQ8A>(), n / 32, n, T, s); });
    const double bytes = T * n * 4.0 + T * n / 32 * 40.0;
    char shape[64];
    std::snprintf(shape, sizeof shape, "T=%lld n=%lld", static_cast<long long>(T), static_cast<long long>(n));
    std::printf("%-28s %10.2f %10.1f %10.2f %8.2f\n", shape, t * 1e6, bytes / t * 1e-9, bytes / kHbm * 1e6,
                t / (bytes / kHbm));
  }
}

void bench_mmvq(cudaStream_t s, std::mt19937& rng) {
  std::printf("\n== mmvq (decode) ==\n%-34s %4s %10s %10s %10s %8s\n", "matrix", "T", "us", "GB/s", "floor us",
              "ratio");
  std::vector<Shape> shapes = {
      {"output head 2048x151936", GgmlType::Q6_K, 2048, 151936}, {"output head 2048x151936", GgmlType::Q4_K, 2048, 151936},
      {"output head 2048x151936", GgmlType::Q8_0, 2048, 151936}, {"output head 2048x151936", GgmlType::Q5_K, 2048, 151936},
      {"output head 2048x151936", GgmlType::BF16, 2048, 151936}, {"attn q 2048x4096", GgmlType::Q4_K, 2048, 4096},
      {"expert gate 2048x768", GgmlType::Q4_K, 2048, 768},       {"expert down 768x2048", GgmlType::Q4_K, 768, 2048},
      {"expert down 768x2048", GgmlType::Q6_K, 768, 2048},       {"router 2048x128", GgmlType::F32, 2048, 128},
      {"output head 2048x151936", GgmlType::Q3_K, 2048, 151936}, {"output head 2048x151936", GgmlType::Q2_K, 2048, 151936},
      {"expert gate 2048x768", GgmlType::Q3_K, 2048, 768},       {"expert gate 2048x768", GgmlType::Q2_K, 2048, 768},
      {"output head 2048x151936", GgmlType::IQ4_XS, 2048, 151936},
      {"expert gate 2048x768", GgmlType::IQ4_XS, 2048, 768},     {"expert gate 2048x768", GgmlType::IQ4_NL, 2048, 768},
      {"expert gate 2048x768", GgmlType::IQ2_XXS, 2048, 768},    {"expert gate 2048x768", GgmlType::IQ2_S, 2048, 768},
      {"expert gate 2048x768", GgmlType::IQ3_XXS, 2048, 768},    {"expert gate 2048x768", GgmlType::IQ3_S, 2048, 768},
      {"expert gate 2048x768", GgmlType::Q4_0, 2048, 768},       {"expert gate 2048x768", GgmlType::Q5_1, 2048, 768},
      {"expert gate 2048x768", GgmlType::Q2_0, 2048, 768},
  };
  if (g_quick) shapes.resize(2);
  for (const Shape& sh : shapes) {
    for (int T : {1, 2, 4, 8}) {
      if (T > 1 && sh.n_out < 100000) continue;
      Problem pr(sh, T, rng, false);
      Timer tm;
      const double t = tm.time(s, [&](int i) {
        cuda::mmvq(sh.type, pr.w.copy(i), sh.n_in, sh.n_out, pr.x.p, T, pr.y.as<float>(), s);
      });
      const double bytes = static_cast<double>(pr.w.bytes);
      std::printf("%-34s %4d %10.2f %10.1f %10.2f %8.2f\n", sh.label().c_str(), T, t * 1e6, bytes / t * 1e-9,
                  bytes / kHbm * 1e6, t / (bytes / kHbm));
    }
  }
}

// Dense prompt GEMMs: the own kernel (mmq) and, for quantized weights, the
// decoded path (dense_gemm.h: decode to F16, then cuBLAS), the decode included.
void bench_mmq(cudaStream_t s, std::mt19937& rng) {
  std::printf("\n== mmq (prompt, dense) ==\n%-30s %6s %10s %10s %8s %12s %10s\n", "matrix", "T", "us", "TFLOPS", "% F16",
              "decoded us", "TFLOPS");
  cuda::DenseGemm dense(0, 4096 * 4096);
  std::vector<Shape> shapes = {
      {"attn q 2048x4096", GgmlType::Q4_K, 2048, 4096}, {"attn q 2048x4096", GgmlType::Q5_K, 2048, 4096},
      {"attn q 2048x4096", GgmlType::Q6_K, 2048, 4096}, {"attn q 2048x4096", GgmlType::Q8_0, 2048, 4096},
      {"attn o 4096x2048", GgmlType::Q4_K, 4096, 2048}, {"attn k 2048x512", GgmlType::Q4_K, 2048, 512},
      {"router 2048x128", GgmlType::F32, 2048, 128},    {"router 2048x128", GgmlType::BF16, 2048, 128},
      {"dense 2048x4096", GgmlType::F16, 2048, 4096},   {"attn q 2048x4096", GgmlType::Q3_K, 2048, 4096},
      {"attn q 2048x4096", GgmlType::Q2_K, 2048, 4096}, {"attn q 2048x4096", GgmlType::IQ4_XS, 2048, 4096},
      {"attn q 2048x4096", GgmlType::IQ4_NL, 2048, 4096}, {"attn q 2048x4096", GgmlType::IQ2_XXS, 2048, 4096},
      {"attn q 2048x4096", GgmlType::IQ3_XXS, 2048, 4096}, {"attn q 2048x4096", GgmlType::Q4_0, 2048, 4096},
      {"attn q 2048x4096", GgmlType::Q5_1, 2048, 4096},
  };
  if (g_quick) shapes.resize(2);
  for (const Shape& sh : shapes) {
    for (int64_t T : {16, 32, 64, 128, 256, 512, 1024, 2048, 8192}) {
      const bool decoded = dense.takes(sh.type, sh.n_in, sh.n_out, T);
      if (T < 2048 && !decoded) continue;
      Problem pr(sh, T, rng, true);
      Timer tm;
      const double t = tm.time(s, [&](int i) {
        cuda::mmq(sh.type, pr.w.copy(i), sh.n_in, sh.n_out, pr.x.p, T, pr.y.as<float>(), s);
      });
      const double ops = 2.0 * T * sh.n_in * sh.n_out;
      std::printf("%-30s %6lld %10.1f %10.1f %8.1f", sh.label().c_str(), static_cast<long long>(T), t * 1e6,
                  ops / t * 1e-12, 100.0 * ops / t / kF16);
      if (decoded) {
        const double td = tm.time(s, [&](int i) {
          dense.run(sh.type, pr.w.copy(i), sh.n_in, sh.n_out, pr.x.as<uint16_t>(), T, pr.y.as<float>(),
                    cuda::Epilogue::Store, s);
        });
        std::printf(" %12.1f %10.1f", td * 1e6, ops / td * 1e-12);
      }
      std::printf("\n");
    }
  }
}

// Qwen3-30B-A3B experts: 128 experts, top-8, 2048 -> 768 gate/up, 768 -> 2048 down.
void bench_moe(cudaStream_t s, std::mt19937& rng) {
  const int E = 128, k = 8;
  const int64_t n_embd = 2048, n_ff = 768;
  std::printf("\n== MoE experts, %d experts top-%d, %lld -> %lld -> %lld ==\n", E, k, static_cast<long long>(n_embd),
              static_cast<long long>(n_ff), static_cast<long long>(n_embd));
  const GgmlType combos[][3] = {{GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K},
                                {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K},
                                {GgmlType::Q3_K, GgmlType::Q3_K, GgmlType::Q3_K},
                                {GgmlType::Q2_K, GgmlType::Q2_K, GgmlType::Q3_K},
                                {GgmlType::IQ4_XS, GgmlType::IQ4_XS, GgmlType::IQ4_XS},
                                {GgmlType::IQ4_NL, GgmlType::IQ4_NL, GgmlType::IQ4_NL},
                                {GgmlType::IQ2_XXS, GgmlType::IQ2_XXS, GgmlType::IQ2_XXS},
                                {GgmlType::IQ3_XXS, GgmlType::IQ3_XXS, GgmlType::IQ3_XXS},
                                {GgmlType::Q4_0, GgmlType::Q4_0, GgmlType::Q4_0},
                                {GgmlType::Q4_1, GgmlType::Q4_1, GgmlType::Q4_1},
                                {GgmlType::Q5_0, GgmlType::Q5_0, GgmlType::Q5_0},
                                {GgmlType::Q5_1, GgmlType::Q5_1, GgmlType::Q5_1},
                                {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q5_1},
                                {GgmlType::Q1_0, GgmlType::Q1_0, GgmlType::Q1_0},
                                {GgmlType::Q2_0, GgmlType::Q2_0, GgmlType::Q2_0}};
  for (const auto& c : combos) {
    const size_t sg = core::row_size(c[0], n_embd) * n_ff, sd = core::row_size(c[2], n_ff) * n_embd;
    Dev gate(sg * E), up(sg * E), down(sd * E);
    {
      const std::vector<uint8_t> g = weight_rows(c[0], n_embd, n_ff, rng), d = weight_rows(c[2], n_ff, n_embd, rng);
      for (int e = 0; e < E; ++e) {
        STRATA_CUDA_CHECK(cudaMemcpy(gate.as<uint8_t>() + sg * e, g.data(), sg, cudaMemcpyHostToDevice));
        STRATA_CUDA_CHECK(cudaMemcpy(up.as<uint8_t>() + sg * e, g.data(), sg, cudaMemcpyHostToDevice));
        STRATA_CUDA_CHECK(cudaMemcpy(down.as<uint8_t>() + sd * e, d.data(), sd, cudaMemcpyHostToDevice));
      }
    }
    cuda::MoeExperts w;
    w.gate = {c[0], gate.p, sg, nullptr, n_embd, n_ff};
    w.up = {c[1], up.p, sg, nullptr, n_embd, n_ff};
    w.down = {c[2], down.p, sd, nullptr, n_ff, n_embd};
    const double expert_bytes = static_cast<double>(2 * sg + sd);
    std::printf("-- %s/%s/%s: %.1f MB per layer of experts\n%-14s %10s %10s %10s %10s %10s %12s %12s\n",
                core::type_traits(c[0]).name, core::type_traits(c[1]).name, core::type_traits(c[2]).name,
                expert_bytes * E * 1e-6, "tokens", "map us", "gate_up us", "down us", "total us", "TFLOPS",
                "F16 floor us", "HBM floor us");
    for (int T : {2048, 8192}) {
      if (g_quick && T > 2048) continue;
      // Router-like choice: k distinct experts per token, mildly skewed.
      std::vector<double> wt(E);
      for (int e = 0; e < E; ++e) wt[e] = 1.0 + 2.0 * std::exp(-e / 16.0);
      std::discrete_distribution<int> pick(wt.begin(), wt.end());
      std::vector<int32_t> ids(static_cast<size_t>(T * k)), offsets(E + 1, 0), entries;
      for (int t = 0; t < T; ++t) {
        for (int sl = 0; sl < k; ++sl) {
          int e;
          bool dup;
          do {
            e = pick(rng);
            dup = std::find(&ids[t * k], &ids[t * k + sl], e) != &ids[t * k + sl];
          } while (dup);
          ids[t * k + sl] = e;
          ++offsets[e + 1];
        }
      }
      for (int e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
      std::vector<int32_t> fill(offsets.begin(), offsets.end() - 1);
      entries.resize(ids.size());
      for (int r = 0; r < T * k; ++r) entries[fill[ids[r]]++] = r;
      Dev doff(offsets.size() * 4), dent(entries.size() * 4), x(static_cast<size_t>(T * n_embd * 4)),
          xh(static_cast<size_t>(T * n_embd * 2)), hh(static_cast<size_t>(T * k * n_ff * 2)),
          y(static_cast<size_t>(T * k * n_embd * 4));
      const int64_t max_tiles = cuda::gemm_max_tiles(T * k, E);
      Dev tiles(static_cast<size_t>(max_tiles) * sizeof(cuda::GemmTile)), count(4);
      STRATA_CUDA_CHECK(cudaMemcpy(doff.p, offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));
      STRATA_CUDA_CHECK(cudaMemcpy(dent.p, entries.data(), entries.size() * 4, cudaMemcpyHostToDevice));
      const std::vector<uint8_t> xa = act_rows(GgmlType::Q4_K, n_embd, T, rng, true);
      STRATA_CUDA_CHECK(cudaMemcpy(xh.p, xa.data(), xa.size(), cudaMemcpyHostToDevice));
      const cuda::RowTableView table{doff.as<int32_t>(), dent.as<int32_t>(), T, k, E};
      auto* tl = tiles.as<cuda::GemmTile>();
      auto* tc = count.as<int32_t>();
      Timer tm;
      const double t_map = tm.time(s, [&](int) { cuda::gemm_tile_map(table.offsets, E, nullptr, E, tl, tc, max_tiles, s); });
      const double t_gu = tm.time(s, [&](int) {
        cuda::moe_gate_up(w, table, x.as<float>(), xh.as<uint16_t>(), tl, tc, max_tiles, nullptr, hh.as<uint16_t>(),
                          s);
      });
      const double t_dn = tm.time(s, [&](int) {
        cuda::moe_down(w, table, nullptr, hh.as<uint16_t>(), tl, tc, max_tiles, y.as<float>(), s);
      });
      const double total = t_map + t_gu + t_dn;
      const double ops = 2.0 * T * k * 3.0 * n_embd * n_ff;
      std::printf("%-14d %10.1f %10.1f %10.1f %10.1f %10.1f %12.1f %12.1f\n", T, t_map * 1e6, t_gu * 1e6, t_dn * 1e6,
                  total * 1e6, ops / total * 1e-12, ops / kF16 * 1e6, expert_bytes * E / kHbm * 1e6);
    }
    // Decode: one and four tokens through moe_experts_decode.
    for (int T : {1, 4}) {
      std::vector<int32_t> ids(static_cast<size_t>(T * k));
      for (int i = 0; i < T * k; ++i) ids[i] = (i * 37 + 11) % E;
      Dev dids(ids.size() * 4), x(static_cast<size_t>(T * n_embd * 4)), xq(static_cast<size_t>(T * n_embd / 32 * 40)),
          h(static_cast<size_t>(T * k * n_ff * 4)), hq(static_cast<size_t>(T * k * n_ff / 32 * 40)),
          y(static_cast<size_t>(T * k * n_embd * 4));
      STRATA_CUDA_CHECK(cudaMemcpy(dids.p, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
      const std::vector<uint8_t> xa = act_rows(GgmlType::Q4_K, n_embd, T, rng, false);
      STRATA_CUDA_CHECK(cudaMemcpy(xq.p, xa.data(), xa.size(), cudaMemcpyHostToDevice));
      Timer tm;
      const double t = tm.time(s, [&](int) {
        cuda::moe_experts_decode(w, dids.as<int32_t>(), T, k, x.as<float>(), xq.as<BlockQ8A>(), h.as<float>(),
                                 hq.as<BlockQ8A>(), y.as<float>(), s);
      });
      const double bytes = T * k * expert_bytes;  // distinct experts here
      std::printf("decode T=%-5d %10.1f us (3 launches + quantize) %10.1f GB/s, HBM floor %.1f us\n", T, t * 1e6,
                  bytes / t * 1e-9, bytes / kHbm * 1e6);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) g_iters = std::max(1, std::atoi(argv[++i]));
    if (std::strcmp(argv[i], "--quick") == 0) g_quick = true;
  }
  if (cuda::device_count() == 0) {
    std::printf("gemm_bench: no CUDA device\n");
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("gemm_bench on %s (%d SMs, %.0f MB L2), %d iterations per point, quantized GEMMs on %s\n",
                prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6, g_iters,
                cuda::gemm_kernel() == cuda::GemmKernel::Wgmma ? "wgmma" : "mma.sync");
    cudaStream_t s;
    STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::mt19937 rng(1234);
    bench_quantize(s, rng);
    bench_mmvq(s, rng);
    bench_mmq(s, rng);
    bench_moe(s, rng);
    STRATA_CUDA_CHECK(cudaStreamDestroy(s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
