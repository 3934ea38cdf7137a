// CPU micro-benchmark: the quantized dot products (vec_dot, one row at a time and matvec's rows) and one decode token's expert step (experts_rows), in GB/s of weights read.
//
// Usage: cpu_dot_bench [--threads N] [--seconds S]
// Weights far larger than the caches (a fresh region each call where it
// matters), random activations; prints one line per case. A program, never
// a test: numbers belong in docs/BENCHMARKS.md with the machine and date.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant/quant.h"
#include "core/runtime/thread_pool.h"
#include "cpu/matmul.h"
#include "cpu/moe.h"

namespace core = strata::core;
using core::GgmlType;

namespace {

double g_seconds = 1.0;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(cols));
  const size_t rb = core::row_size(type, cols);
  std::vector<uint8_t> m(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = nd(rng);
    core::quantize_row(type, row.data(), m.data() + rb * static_cast<size_t>(r), cols);
  }
  return m;
}

const char* name(GgmlType t) { return core::type_traits(t).name; }

// matvec over a matrix of `mib` MiB (rows of `cols`), single thread: from
// memory (256 MiB) or from the caches (1 MiB).
void bench_matvec(GgmlType type, int64_t cols, size_t mib, std::mt19937& rng) {
  const size_t rb = core::row_size(type, cols);
  const int64_t rows = static_cast<int64_t>((mib << 20) / rb);
  const std::vector<uint8_t> w = random_matrix(type, rows, cols, rng);
  std::vector<float> x(static_cast<size_t>(cols)), y(static_cast<size_t>(rows));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& v : x) v = nd(rng);
  const core::cpu::ActivationRows act(type, x.data(), 1, cols, nullptr);
  int calls = 0;
  const double t0 = now();
  double t = t0;
  while (t - t0 < g_seconds) {
    core::matvec(type, w.data(), rows, cols, act.row(0), y.data());
    ++calls;
    t = now();
  }
  std::printf("matvec %-5s %5lld cols, %3zu MiB, 1 thread: %6.2f GB/s\n", name(type), static_cast<long long>(cols),
              mib, static_cast<double>(w.size()) * calls / (t - t0) / 1e9);
}

// One token through 8 experts of a qwen3-30b-a3b layer (2048 x 768, Q4_K
// gate/up, Q6_K down), experts taken in turn from 128 so the caches hold none.
void bench_experts(int threads, std::mt19937& rng) {
  const int64_t E = 2048, F = 768;
  const int n_expert = 128, k = 8;
  const std::vector<uint8_t> gate = random_matrix(GgmlType::Q4_K, F * n_expert, E, rng);
  const std::vector<uint8_t> up = random_matrix(GgmlType::Q4_K, F * n_expert, E, rng);
  const std::vector<uint8_t> down = random_matrix(GgmlType::Q6_K, E * n_expert, F, rng);
  const core::cpu::MoeWeights w = core::cpu::MoeWeights::make(GgmlType::Q4_K, gate.data(), GgmlType::Q4_K, up.data(),
                                                              GgmlType::Q6_K, down.data(), E, F, n_expert);
  const double bytes_per_expert = static_cast<double>(gate.size() + up.size() + down.size()) / n_expert;
  core::ThreadPool pool(threads, 2000);
  std::vector<float> x(static_cast<size_t>(E * k), 0.5f), y(x.size());
  int next = 0, calls = 0;
  const double t0 = now();
  double t = t0;
  while (t - t0 < g_seconds) {
    std::vector<core::cpu::ExpertRows> jobs;
    for (int i = 0; i < k; ++i) jobs.push_back({(next++) % n_expert, &x[static_cast<size_t>(i * E)], 1, &y[static_cast<size_t>(i * E)]});
    core::cpu::experts_rows(w, jobs, &pool);
    ++calls;
    t = now();
  }
  std::printf("experts_rows 1 token x %d experts (qwen3-30b-a3b layer), %d threads: %6.2f GB/s, %.1f us a layer\n", k,
              threads, bytes_per_expert * k * calls / (t - t0) / 1e9, (t - t0) / calls * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) g_seconds = std::atof(argv[++i]);
  }
  std::mt19937 rng(7);
  for (size_t mib : {size_t(1), size_t(256)}) {
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0,
                       GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL,
                       GgmlType::IQ4_XS, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
                       GgmlType::IQ2_S, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::MXFP4, GgmlType::NVFP4,
                       GgmlType::Q1_0, GgmlType::Q2_0}) {
      bench_matvec(t, 2048, mib, rng);
    }
    bench_matvec(GgmlType::Q6_K, 768, mib, rng);
  }
  bench_experts(threads, rng);
  return 0;
}
