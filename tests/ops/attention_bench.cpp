// Micro-benchmark of prompt and decode attention (not a test): ms per call, achieved TFLOPS (prompt) and GB/s of the cache (decode) for the qwen3-30b-a3b attention shape.
//
// attention_bench [--iters N] [--layers L] [--decode]
// Shape: 32 query heads over 4 kv heads, head dim 128, one chunk of T tokens
// at pos0 = 0 (causal FLOPs = 4 * n_head * head_dim * T (T + 1) / 2), for
// F16 and INT8 caches: attention_prompt (tensor cores, Q as F16 hi + lo
// pairs, P too on mma.sync), attention_prompt_f16 (F16 Q and P) and the F32 kernel they replace
// (still taken for a q offset by one float), with how far each tensor-core
// output is from the F32 one. L layers (default 48) give the per-prompt total.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <vector>

#include "cuda/attention/attention.cuh"
#include "cuda/attention/kv.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/runtime.h"

namespace cuda = strata::cuda;
using strata::core::KvType;

namespace {

constexpr int kHead = 32, kHeadKv = 4, kDim = 128;

int g_iters = 20;
int g_layers = 48;

template <typename T>
cuda::DeviceBuffer upload(const std::vector<T>& v) {
  cuda::DeviceBuffer d(0, v.size() * sizeof(T));
  STRATA_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Mean seconds per call of f() over g_iters calls after 3 warm-up calls.
template <typename F>
double time_calls(cudaStream_t s, F&& f) {
  cudaEvent_t a, b;
  STRATA_CUDA_CHECK(cudaEventCreate(&a));
  STRATA_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  STRATA_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < g_iters; ++i) f();
  STRATA_CUDA_CHECK(cudaEventRecord(b, s));
  STRATA_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e-3 / g_iters;
}

// A cache plane of n positions with random finite contents.
struct Plane {
  cuda::DeviceBuffer data, scales;
  cuda::KvDeviceView view;
  Plane(KvType type, int n, std::mt19937& rng) {
    const size_t elems = static_cast<size_t>(n) * kHeadKv * kDim;
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    if (type == KvType::F16) {
      std::vector<__half> h(elems);
      for (auto& x : h) x = __float2half(u(rng));
      data = upload(h);
    } else {
      std::vector<int8_t> q(elems);
      for (auto& x : q) x = static_cast<int8_t>(std::uniform_int_distribution<int>(-127, 127)(rng));
      data = upload(q);
      scales = upload(std::vector<float>(static_cast<size_t>(n) * kHeadKv, 1.0f / 127.0f));
    }
    view.type = type;
    view.data = data.data();
    view.scales = scales.as<float>();
    view.n_ctx = n;
    view.n_head_kv = kHeadKv;
    view.head_dim = kDim;
  }
};

void bench(cudaStream_t s, std::mt19937& rng) {
  std::printf("%-6s %6s %-22s %10s %10s %14s\n", "cache", "T", "kernel", "ms/call", "TFLOPS", "ms x layers");
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (int T : {512, 2048, 8192}) {
      Plane k(type, T, rng), v(type, T, rng);
      const size_t q_elems = static_cast<size_t>(T) * kHead * kDim;
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> hq(q_elems), shifted(q_elems + 1);
      for (float& x : hq) x = nd(rng);
      std::copy(hq.begin(), hq.end(), shifted.begin() + 1);
      // The same q twice: 16-byte aligned (tensor-core path) and one float
      // off (which sends the F32 kernel), so both outputs can be compared.
      const cuda::DeviceBuffer q = upload(hq), q_off = upload(shifted);
      const cuda::DeviceBuffer out_f32(0, q_elems * sizeof(float)), out(0, q_elems * sizeof(float));
      const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
      const double flops = 4.0 * kHead * kDim * (static_cast<double>(T) * (T + 1) / 2);
      const char* name = type == KvType::F16 ? "f16" : "int8";
      auto report = [&](const char* kernel, double t) {
        std::printf("%-6s %6d %-22s %10.3f %10.1f %14.2f\n", name, T, kernel, t * 1e3, flops / t * 1e-12,
                    t * 1e3 * g_layers);
      };
      const int saved = g_iters;
      g_iters = std::min(g_iters, T >= 8192 ? 2 : 5);  // the F32 kernel is slow at long T
      report("f32 (before)", time_calls(s, [&] {
        cuda::attention_prompt(q_off.as<float>() + 1, k.view, v.view, kHead, T, 0, scale, out_f32.as<float>(), s);
      }));
      g_iters = saved;
      std::vector<float> want(q_elems), got(q_elems);
      STRATA_CUDA_CHECK(cudaMemcpy(want.data(), out_f32.data(), q_elems * sizeof(float), cudaMemcpyDeviceToHost));
      struct Variant {
        const char* label;
        decltype(&cuda::attention_prompt) fn;
      };
      for (const Variant& var : {Variant{"attention_prompt", cuda::attention_prompt},
                                 Variant{"attention_prompt_f16", cuda::attention_prompt_f16}}) {
        report(var.label, time_calls(s, [&] {
          var.fn(q.as<float>(), k.view, v.view, kHead, T, 0, scale, out.as<float>(), s);
        }));
        STRATA_CUDA_CHECK(cudaMemcpy(got.data(), out.data(), q_elems * sizeof(float), cudaMemcpyDeviceToHost));
        double max_diff = 0.0, max_abs = 0.0;
        bool finite = true;
        for (size_t i = 0; i < q_elems; ++i) {
          finite = finite && std::isfinite(got[i]);
          max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
          max_abs = std::max(max_abs, static_cast<double>(std::fabs(want[i])));
        }
        std::printf("%-6s %6d   vs f32: max |diff| %.3g = %.3g of max |out|%s\n", name, T, max_diff,
                    max_diff / max_abs, finite ? "" : ", NON-FINITE OUTPUTS");
      }
    }
  }
}

void bench_decode(cudaStream_t s, std::mt19937& rng) {
  std::printf("%-6s %6s %-26s %10s %10s %14s\n", "cache", "n_kv", "kernel", "us/call", "GB/s", "ms x layers");
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (int n_kv : {512, 2048, 8192, 32768}) {
      Plane k(type, n_kv, rng), v(type, n_kv, rng);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> hq(static_cast<size_t>(kHead) * kDim), shifted(hq.size() + 1);
      for (float& x : hq) x = nd(rng);
      std::copy(hq.begin(), hq.end(), shifted.begin() + 1);
      // Aligned q takes the kernel of the common shapes (F16 caches), q one float off the per-head F32 kernel.
      const cuda::DeviceBuffer q = upload(hq), q_off = upload(shifted), d_n_kv = upload(std::vector<int32_t>{n_kv});
      const size_t ws_bytes = cuda::attention_decode_workspace_bytes(kHead, kDim);
      cuda::DeviceBuffer ws(0, ws_bytes);
      cuda::attention_decode_workspace_init(ws.data(), kHead, s);
      const double bytes = 2.0 * n_kv * kHeadKv * kDim * (type == KvType::F16 ? 2 : 1);
      const char* name = type == KvType::F16 ? "f16" : "int8";
      std::vector<float> outs[2];
      int slot = 0;
      for (const float* qp : {q.as<float>(), q_off.as<float>() + 1}) {
        const cuda::DeviceBuffer out(0, hq.size() * sizeof(float));
        const double t = time_calls(s, [&] {
          cuda::attention_decode(qp, k.view, v.view, kHead, d_n_kv.as<int32_t>(), n_kv,
                                 1.0f / std::sqrt(static_cast<float>(kDim)), out.as<float>(), ws.data(), ws_bytes, s);
        });
        std::printf("%-6s %6d %-26s %10.2f %10.1f %14.3f\n", name, n_kv,
                    slot == 0 ? (type == KvType::F16 ? "gqa (aligned q)" : "per head (aligned q)") : "per head (q + 1)",
                    t * 1e6, bytes / t * 1e-9, t * 1e3 * g_layers);
        outs[slot].resize(hq.size());
        STRATA_CUDA_CHECK(cudaMemcpy(outs[slot].data(), out.data(), hq.size() * sizeof(float), cudaMemcpyDeviceToHost));
        ++slot;
      }
      double max_diff = 0.0;
      for (size_t i = 0; i < hq.size(); ++i)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(outs[0][i] - outs[1][i])));
      std::printf("%-6s %6d   the two: max |diff| %.3g\n", name, n_kv, max_diff);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool decode = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) g_iters = std::max(1, std::atoi(argv[++i]));
    if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) g_layers = std::max(1, std::atoi(argv[++i]));
    if (std::strcmp(argv[i], "--decode") == 0) decode = true;
  }
  if (cuda::device_count() == 0) {
    std::printf("attention_bench: no CUDA device\n");
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("attention_bench on %s (%d SMs), %d iterations per point; qwen3-30b-a3b attention: %d/%d heads, "
                "head dim %d, pos0 = 0; F16 caches on %s (STRATA_ATTENTION)\n",
                prop.name, prop.multiProcessorCount, g_iters, kHead, kHeadKv, kDim,
                cuda::attention_kernel() == cuda::AttentionKernel::Wgmma ? "wgmma" : "mma.sync");
    cudaStream_t s;
    STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::mt19937 rng(1234);
    if (decode)
      bench_decode(s, rng);
    else
      bench(s, rng);
    STRATA_CUDA_CHECK(cudaStreamDestroy(s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
