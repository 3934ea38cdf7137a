// GPU matrix kernels vs the CPU oracle: Q8A quantization, mmvq, mmq, the device tile map, and the MoE expert steps.
//
// Seeds are fresh every run and printed; STRATA_TEST_SEED=n replays a run.
// Outputs are poisoned (all bits set: NaN) before each launch, so an element
// a kernel forgets to write fails. Bounds (see each check):
//  - quantize_q8a, and the GEMMs of float weights (F32 activations): equal to
//    the CPU's vec_dot bit for bit (same F32 operations in the same order);
//  - the GEMMs of quantized weights (F16 weights and activations on the
//    tensor cores): within gemm_ref.h's bound of the exact sum of the very
//    products the kernel forms (its F16 weights rebuilt on the CPU);
//  - mmvq: only the F32 summation order differs, so |gpu - cpu| <= (2 n + 40)
//    2^-24 sum |terms| for n terms (both sums are within n 2^-24 sum |terms|
//    of the exact one, the GPU's within its much shorter depth);
//  - silu: the CPU and CUDA expf may differ by a couple of ulp, so h = silu(g)
//    * u is checked to 2e-6 relative beyond the products' bounds, and what
//    follows h is computed by the CPU from the GPU's own h.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#define CATCH_CONFIG_RUNNER
#include "catch.hpp"
#include "core/quant/quant.h"
#include "cuda/gemm/mmq.cuh"
#include "cuda/gemm/mmvq.cuh"
#include "cuda/gemm/type_paths.h"
#include "cuda/moe/moe_gemm.cuh"
#include "cuda/norm/quantize.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/host_route.cuh"
#include "cuda/runtime/runtime.h"
#include "ops/gemm_ref.h"
#include "unit/test_random.h"

using strata::core::BlockQ8A;
using strata::core::GgmlType;
namespace core = strata::core;
namespace cuda = strata::cuda;

namespace {

// ---- seeds, random data ------------------------------------------------------

// One seed per test case, printed as it starts, so a failure can be replayed.
uint64_t case_seed(const char* name) {
  const uint64_t s = strata::test::test_seed();
  std::printf("[gemm_ops_tests] %s: seed=%llu (replay: STRATA_TEST_SEED=%llu)\n", name,
              static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
  std::fflush(stdout);
  return s;
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t s) : gen(s) {}
  float normal() { return std::normal_distribution<float>(0.0f, 1.0f)(gen); }
  float uniform(float a, float b) { return std::uniform_real_distribution<float>(a, b)(gen); }
  int randint(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); }
};

// Values whose 32-blocks have different scales and offsets (so sub-block
// scales and mins all matter), with an occasional all-zero block.
std::vector<float> random_values(Rng& rng, int64_t rows, int64_t n, bool zero_blocks) {
  std::vector<float> v(static_cast<size_t>(rows * n));
  for (int64_t b = 0; b < rows * n / 32; ++b) {
    const int kind = rng.randint(0, 15);
    const float scale = std::exp2(rng.uniform(-3.0f, 2.0f));
    const float shift = kind < 3 ? rng.uniform(-2.0f, 2.0f) * scale : 0.0f;
    for (int l = 0; l < 32; ++l) {
      v[static_cast<size_t>(b * 32 + l)] = (zero_blocks && kind == 15) ? 0.0f : rng.normal() * scale + shift;
    }
  }
  return v;
}

std::vector<uint8_t> quantize_rows(GgmlType t, const std::vector<float>& v, int64_t rows, int64_t n) {
  const size_t rb = core::row_size(t, n);
  std::vector<uint8_t> q(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) core::quantize_row(t, &v[static_cast<size_t>(r * n)], &q[rb * r], n);
  return q;
}

std::vector<BlockQ8A> quantize_acts(const std::vector<float>& x, int64_t rows, int64_t n) {
  std::vector<BlockQ8A> q(static_cast<size_t>(rows * n / 32));
  for (int64_t r = 0; r < rows; ++r) core::quantize_activations(&x[static_cast<size_t>(r * n)], &q[r * n / 32], n);
  return q;
}

bool is_quant(GgmlType t) { return core::activation_kind(t) == core::ActivationKind::Q8A; }

// ---- device memory (TODO(merge h/cuda): cuda::DeviceBuffer / cuda::Stream) --

template <typename T>
class DevBuf {
 public:
  explicit DevBuf(size_t n) : n_(n) {
    // 256 bytes of slack: kernels may read whole 16-byte granules past a matrix.
    STRATA_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T) + 256));
  }
  ~DevBuf() { cudaFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& v) {
    REQUIRE(v.size() <= n_);
    STRATA_CUDA_CHECK(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    STRATA_CUDA_CHECK(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  // cudaMemset runs on the legacy stream, which the tests' non-blocking
  // streams do not wait for: wait here, or the poison may land after a kernel.
  void poison() {
    STRATA_CUDA_CHECK(cudaMemset(p_, 0xff, n_ * sizeof(T)));
    STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  void* p_ = nullptr;
  size_t n_;
};

struct TestStream {
  cudaStream_t s = nullptr;
  TestStream() { STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~TestStream() { cudaStreamDestroy(s); }
  void sync() const { STRATA_CUDA_CHECK(cudaStreamSynchronize(s)); }
};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// ---- the CPU side of a check --------------------------------------------------

// Activations of row t in the format vec_dot takes for `type`, and as the
// F16 rows the GEMMs of quantized weights read.
struct Acts {
  std::vector<float> f;      // [rows][n]
  std::vector<BlockQ8A> q;   // [rows][n / 32]
  std::vector<uint16_t> h;   // [rows][n]: f rounded to F16
  std::vector<float> hf;     // the same as floats
  int64_t n = 0;
  const void* row(GgmlType type, int64_t t) const {
    return is_quant(type) ? static_cast<const void*>(&q[t * n / 32]) : static_cast<const void*>(&f[t * n]);
  }
};

Acts make_acts(std::vector<float> f, int64_t rows, int64_t n) {
  Acts a;
  a.n = n;
  a.f = std::move(f);
  a.q = quantize_acts(a.f, rows, n);
  a.h = strata::test::f16_bits(a.f);
  a.hf = strata::test::f16_values(a.h);
  return a;
}

// The GEMM's reference for row r of w (quantized) times F16 activations x16.
strata::test::RefDot gemm_ref_row(GgmlType type, const uint8_t* wrow, const float* x16, int64_t n) {
  const std::vector<float> w = strata::test::gemm_weights(type, wrow, n);
  return strata::test::gemm_ref(w.data(), x16, n);
}

// sum over the dot's F32 terms of |term|, each term isolated through vec_dot
// itself: for quantized types a 256-value group with every activation block
// but one zeroed (the zero blocks contribute exact zeros).
double abs_terms(GgmlType type, const uint8_t* wrow, const void* act, int64_t n) {
  double s = 0.0;
  if (!is_quant(type)) {
    std::vector<float> w(static_cast<size_t>(n));
    core::dequantize_row(type, wrow, w.data(), n);
    const auto* x = static_cast<const float*>(act);
    for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(w[i]) * x[i]);
    return s;
  }
  const int64_t bs = core::type_traits(type).block_size, bytes = static_cast<int64_t>(core::type_traits(type).type_size);
  const auto* a = static_cast<const BlockQ8A*>(act);
  std::vector<BlockQ8A> one(static_cast<size_t>(bs / 32));
  for (int64_t blk = 0; blk < n / bs; ++blk) {
    for (int64_t j = 0; j < bs / 32; ++j) {
      std::memset(one.data(), 0, one.size() * sizeof(BlockQ8A));
      one[j] = a[blk * bs / 32 + j];
      s += std::fabs(core::vec_dot(type, wrow + blk * bytes, one.data(), bs));
    }
  }
  return s;
}

float cpu_silu(float x) { return x / (1.0f + std::exp(-x)); }

// Collects mismatches and reports the first few with everything needed to
// understand them.
class Report {
 public:
  explicit Report(std::string what) : what_(std::move(what)) {}
  void bad(const std::string& where, double got, double want, double bound) {
    if (count_++ < 10) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "\n  %s: gpu %.9g cpu %.9g |diff| %.3g bound %.3g", where.c_str(), got, want,
                    std::fabs(got - want), bound);
      lines_ += buf;
    }
  }
  int count() const { return count_; }
  std::string text() const {
    return what_ + ": " + std::to_string(count_) + " mismatches" + (count_ > 0 ? lines_ : std::string());
  }

 private:
  std::string what_;
  std::string lines_;
  int count_ = 0;
};

std::string at(int64_t t, int64_t r) { return "row " + std::to_string(t) + " col " + std::to_string(r); }

const char* name(GgmlType t) { return core::type_traits(t).name; }

// ---- a dense weight matrix on both sides -------------------------------------

struct Matrix {
  GgmlType type;
  int64_t n_in, n_out;
  size_t row_bytes;
  std::vector<uint8_t> host;
  DevBuf<uint8_t> dev;
  Matrix(GgmlType t, int64_t in, int64_t out, Rng& rng)
      : type(t), n_in(in), n_out(out), row_bytes(core::row_size(t, in)),
        host(quantize_rows(t, random_values(rng, out, in, false), out, in)), dev(host.size()) {
    dev.upload(host);
  }
  const uint8_t* row(int64_t r) const { return &host[row_bytes * r]; }
};

// Bytes of one activation row: what mmvq (Q8A or F32) or the GEMMs (F16 or F32) read.
int64_t act_row_bytes(GgmlType type, int64_t n, bool gemm) {
  return gemm ? cuda::gemm_act_row_bytes(type, n)
              : static_cast<int64_t>(core::activation_row_size(core::activation_kind(type), n));
}

// T activation rows, uploaded in the form the kernel reads for the weight
// type: for mmvq the CPU's Q8A quantization, for the GEMMs F16.
struct ActsOnDevice {
  Acts a;
  DevBuf<uint8_t> dev;
  ActsOnDevice(GgmlType type, int64_t T, int64_t n, Rng& rng, bool gemm)
      : a(make_acts(random_values(rng, T, n, true), T, n)), dev(static_cast<size_t>(T * act_row_bytes(type, n, gemm))) {
    std::vector<uint8_t> bytes(dev.size());
    const void* src = !is_quant(type) ? static_cast<const void*>(a.f.data())
                      : gemm          ? static_cast<const void*>(a.h.data())
                                      : static_cast<const void*>(a.q.data());
    std::memcpy(bytes.data(), src, bytes.size());
    dev.upload(bytes);
  }
};

// Every type of the mmq and mmvq paths (cuda/gemm/type_paths.h).
const std::vector<GgmlType> kTypes = cuda::path_types<cuda::KernelPath::Mmq>();

}  // namespace

// ---- quantize_q8a ---------------------------------------------------------------

TEST_CASE("quantize_q8a equals quantize_activations bit for bit", "[gpu][quantize]") {
  Rng rng(case_seed("quantize_q8a"));
  const int64_t n = 2048, rows = 37, ld_x = n + 64, ld_y = n / 32 + 3;
  std::vector<float> x = random_values(rng, rows, n, true);
  // Hand-made blocks: exact ties (d = 2^e, values (k + 1/2) 2^e, both signs),
  // +-amax itself, a subnormal d (the clamp path), and a lone nonzero value.
  for (int64_t b = 0; b < rows * n / 32; b += 7) {
    float* blk = &x[b * 32];
    const int kind = static_cast<int>((b / 7) % 4);
    const float d = std::ldexp(1.0f, rng.randint(-8, 8));
    for (int l = 0; l < 32; ++l) {
      if (kind == 0) blk[l] = (static_cast<float>(rng.randint(-126, 125)) + 0.5f) * d;
      if (kind == 1) blk[l] = (l % 2 ? -1.0f : 1.0f) * 127.0f * d;
      if (kind == 2) blk[l] = rng.normal() * 1e-39f;
      if (kind == 3) blk[l] = l == 5 ? -3.0f * d : 0.0f;
    }
    if (kind == 0) blk[rng.randint(0, 31)] = 127.0f * d;  // amax = 127 d exactly: d stays a power of two
  }
  std::vector<float> padded(static_cast<size_t>(rows * ld_x), 0.0f);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&padded[r * ld_x], &x[r * n], n * sizeof(float));
  const std::vector<BlockQ8A> want = quantize_acts(x, rows, n);

  TestStream st;
  DevBuf<float> dx(padded.size());
  DevBuf<BlockQ8A> dy(static_cast<size_t>(rows * ld_y));
  dx.upload(padded);
  dy.poison();
  cuda::quantize_q8a(dx.get(), ld_x, dy.get(), ld_y, n, rows, st.s);
  st.sync();
  const std::vector<BlockQ8A> got = dy.download();

  Report rep("quantize_q8a");
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < n / 32; ++b) {
      const BlockQ8A& g = got[r * ld_y + b];
      const BlockQ8A& w = want[r * n / 32 + b];
      if (std::memcmp(&g, &w, sizeof g) != 0) {
        int l = 0;
        while (l < 32 && g.qs[l] == w.qs[l]) ++l;
        rep.bad(at(r, b) + " (d/sum/first differing q" + std::to_string(l) + ": " + std::to_string(g.sum) + " vs " +
                    std::to_string(w.sum) + ", q " + std::to_string(l < 32 ? g.qs[l] : 0) + " vs " +
                    std::to_string(l < 32 ? w.qs[l] : 0) + ")",
                g.d, w.d, 0.0);
      }
    }
  }
  INFO(rep.text());
  CHECK(rep.count() == 0);
}

// ---- mmvq -------------------------------------------------------------------------

namespace {

// Runs mmvq on a random matrix and checks every output against vec_dot with
// the summation-order bound; then runs it again and wants the same bits.
void check_mmvq(GgmlType type, int64_t n_in, int64_t n_out, int n_tok, Rng& rng) {
  Matrix w(type, n_in, n_out, rng);
  ActsOnDevice x(type, n_tok, n_in, rng, false);
  TestStream st;
  DevBuf<float> y(static_cast<size_t>(n_tok * n_out));
  y.poison();
  cuda::mmvq(type, w.dev.get(), n_in, n_out, x.dev.get(), n_tok, y.get(), st.s);
  st.sync();
  const std::vector<float> got = y.download();

  const int64_t n_terms = is_quant(type) ? n_in / 32 : n_in;
  Report rep(std::string("mmvq ") + name(type) + " n_in=" + std::to_string(n_in) + " n_out=" + std::to_string(n_out) +
             " T=" + std::to_string(n_tok));
  for (int t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_out; ++r) {
      const void* act = x.a.row(type, t);
      const float want = core::vec_dot(type, w.row(r), act, n_in);
      const double bound = (2.0 * n_terms + 40.0) * std::ldexp(1.0, -24) * abs_terms(type, w.row(r), act, n_in) + 1e-30;
      const float g = got[t * n_out + r];
      if (!(std::fabs(static_cast<double>(g) - want) <= bound)) rep.bad(at(t, r), g, want, bound);
    }
  }
  INFO(rep.text());
  CHECK(rep.count() == 0);

  y.poison();
  cuda::mmvq(type, w.dev.get(), n_in, n_out, x.dev.get(), n_tok, y.get(), st.s);
  st.sync();
  INFO(std::string("mmvq ") + name(type) + ": a second run gave different bits");
  CHECK(same_bits(got, y.download()));
}

}  // namespace

TEST_CASE("mmvq matches vec_dot within the summation-order bound", "[gpu][mmvq]") {
  Rng rng(case_seed("mmvq"));
  for (GgmlType type : kTypes) {
    const bool q = is_quant(type);
    // Whole segments, a partial one, rows of one partial segment; rows of 96
    // values of a 32-block type (Q8_0: 102 bytes, IQ4_NL: 54) start at every
    // even alignment.
    const bool block32 = core::type_traits(type).block_size == 32;
    const int64_t ins[] = {q ? 2048 : 256, q ? 1280 : 2080, q ? 768 : 96, block32 ? 96 : 256};
    const int64_t outs[] = {130, 7, 1, 33};
    const int toks[] = {1, 2, 3, 5, 8};
    for (int i = 0; i < 4; ++i) {
      for (int nt : toks) {
        if (i == 0 || nt == 1 || nt == 8) check_mmvq(type, ins[i], outs[i], nt, rng);
      }
    }
  }
}

// Epilogue::Add (x += W·a, the residual add after attention): each output is
// the residual plus exactly what Store gives, one F32 addition, through the
// vector kernel (T <= 8) and the GEMM (larger T).
TEST_CASE("Epilogue::Add adds the product to y in place", "[gpu][mmvq][mmq]") {
  Rng rng(case_seed("epilogue-add"));
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F32}) {
    for (int64_t T : {1, 5, 70}) {
      const int64_t n_in = 512, n_out = 96;
      Matrix w(type, n_in, n_out, rng);
      const bool vector = T <= 8;
      ActsOnDevice x(type, T, n_in, rng, !vector);
      TestStream st;
      const std::vector<float> residual = random_values(rng, T, n_out, false);
      DevBuf<float> stored(residual.size()), added(residual.size());
      stored.poison();
      added.upload(residual);
      for (auto [y, epi] : {std::pair{&stored, cuda::Epilogue::Store}, std::pair{&added, cuda::Epilogue::Add}}) {
        if (vector)
          cuda::mmvq(type, w.dev.get(), n_in, n_out, x.dev.get(), static_cast<int>(T), y->get(), st.s, epi);
        else
          cuda::mmq(type, w.dev.get(), n_in, n_out, x.dev.get(), T, y->get(), st.s, epi);
      }
      st.sync();
      const std::vector<float> prod = stored.download(), got = added.download();
      std::vector<float> want(residual.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = residual[i] + prod[i];
      INFO(name(type) << " T=" << T);
      CHECK(same_bits(got, want));
    }
  }
}

// ---- mmq --------------------------------------------------------------------------

namespace {

// Dense GEMM with padded strides: float weights must give vec_dot's bits,
// quantized ones the reference (gemm_ref.h) within its bound; the F16 copy
// (yh) is each F32 output rounded, and alone (y null) the same halves.
void check_mmq(GgmlType type, int64_t n_in, int64_t n_out, int64_t T, Rng& rng) {
  Matrix w(type, n_in, n_out, rng);
  // Activation rows padded by 64 bytes, outputs by 3 floats (halves by 5).
  const int64_t act_row = cuda::gemm_act_row_bytes(type, n_in);
  const int64_t ld_x = act_row + 64, ld_y = n_out + 3, ld_yh = n_out + 5;
  ActsOnDevice packed(type, T, n_in, rng, true);
  std::vector<uint8_t> bytes = packed.dev.download();
  std::vector<uint8_t> pad(static_cast<size_t>(T * ld_x), 0);
  for (int64_t t = 0; t < T; ++t) std::memcpy(&pad[t * ld_x], &bytes[t * act_row], act_row);
  DevBuf<uint8_t> x(pad.size());
  x.upload(pad);
  TestStream st;
  DevBuf<float> y(static_cast<size_t>(T * ld_y));
  DevBuf<uint16_t> yh(static_cast<size_t>(T * ld_yh));
  y.poison();
  yh.poison();
  cuda::GemmArgs a;
  a.w.type = type;
  a.w.base = w.dev.get();
  a.w.n_in = n_in;
  a.w.n_out = n_out;
  a.x = x.get();
  a.ld_x = ld_x;
  a.y = y.get();
  a.ld_y = ld_y;
  a.yh = yh.get();
  a.ld_yh = ld_yh;
  a.n_rows = T;
  cuda::gemm(a, st.s);
  st.sync();
  const std::vector<float> got = y.download();
  const std::vector<uint16_t> got_h = yh.download();

  const bool quant = is_quant(type);
  Report rep(std::string("mmq ") + name(type) + " n_in=" + std::to_string(n_in) + " n_out=" + std::to_string(n_out) +
             " T=" + std::to_string(T));
  Report reph(std::string("mmq ") + name(type) + " yh");
  for (int64_t r = 0; r < n_out; ++r) {
    const std::vector<float> w16 = quant ? strata::test::gemm_weights(type, w.row(r), n_in) : std::vector<float>();
    for (int64_t t = 0; t < T; ++t) {
      const float g = got[t * ld_y + r];
      if (quant) {
        const strata::test::RefDot ref = strata::test::gemm_ref(w16.data(), &packed.a.hf[t * n_in], n_in);
        if (!(std::fabs(g - ref.value) <= ref.bound)) rep.bad(at(t, r), g, ref.value, ref.bound);
      } else {
        const float want = core::vec_dot(type, w.row(r), packed.a.row(type, t), n_in);
        if (std::memcmp(&g, &want, sizeof g) != 0) rep.bad(at(t, r) + " (float weights: bit equality)", g, want, 0.0);
      }
      if (got_h[t * ld_yh + r] != core::f32_to_fp16(g))
        reph.bad(at(t, r), core::fp16_to_f32(got_h[t * ld_yh + r]), g, 0.0);
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t r = n_out; r < ld_y; ++r) {
      uint32_t bits;
      std::memcpy(&bits, &got[t * ld_y + r], 4);
      if (bits != 0xffffffffu) rep.bad(at(t, r) + " (padding written)", got[t * ld_y + r], 0.0, 0.0);
    }
    for (int64_t r = n_out; r < ld_yh; ++r)
      if (got_h[t * ld_yh + r] != 0xffffu) reph.bad(at(t, r) + " (padding written)", 0, 0, 0);
  }
  INFO(rep.text());
  CHECK(rep.count() == 0);
  INFO(reph.text());
  CHECK(reph.count() == 0);

  // Determinism, then the F16 rows alone.
  y.poison();
  yh.poison();
  cuda::gemm(a, st.s);
  st.sync();
  INFO(std::string("mmq ") + name(type) + ": a second run gave different bits");
  CHECK(same_bits(got, y.download()));
  CHECK(same_bits(got_h, yh.download()));
  a.y = nullptr;
  yh.poison();
  cuda::gemm(a, st.s);
  st.sync();
  INFO(std::string("mmq ") + name(type) + ": yh without y");
  CHECK(same_bits(got_h, yh.download()));
}

}  // namespace

TEST_CASE("mmq: float weights equal vec_dot bit for bit, quantized ones the F16 reference", "[gpu][mmq]") {
  Rng rng(case_seed("mmq"));
  for (GgmlType type : kTypes) {
    const bool q = is_quant(type);
    // Partial weight blocks (200, 72 rows of 256) and partial position tiles.
    const int64_t ins[] = {q ? 2048 : 2048, q ? 256 : 96, q ? 768 : 32, q ? 4096 : 64};
    const int64_t outs[] = {200, 128, 72, 520};
    const int64_t toks[] = {100, 16, 130, 9};
    for (int i = 0; i < 4; ++i) check_mmq(type, ins[i], outs[i], toks[i], rng);
  }
}

// ---- MoE: tile map, prompt (grouped GEMMs), decode (batched mmvq) -------------------

namespace {

// T tokens routed to k distinct experts each, grouped as prefill::RowTable
// does (entries of an expert ascending). The first quarter of the experts is
// popular (groups of several tiles), expert E-1 gets no row and expert E-2
// exactly one (token 0, slot 0).
struct Routing {
  int T, k, E;
  std::vector<int32_t> ids, offsets, entries, expert_of;
};

Routing make_routing(Rng& rng, int T, int k, int E) {
  Routing rt{T, k, E, {}, {}, {}, {}};
  std::vector<double> wts(static_cast<size_t>(E), 1.0);
  for (int e = 0; e < E / 4; ++e) wts[e] = 8.0;
  wts[E - 1] = wts[E - 2] = 0.0;
  std::discrete_distribution<int> pick(wts.begin(), wts.end());
  rt.ids.resize(static_cast<size_t>(T * k));
  for (int t = 0; t < T; ++t) {
    for (int s = 0; s < k; ++s) {
      int e;
      bool dup;
      do {
        e = pick(rng.gen);
        dup = false;
        for (int s2 = 0; s2 < s; ++s2) dup = dup || rt.ids[t * k + s2] == e;
      } while (dup);
      rt.ids[t * k + s] = e;
    }
  }
  if (T > 0) rt.ids[0] = E - 2;
  rt.offsets.assign(static_cast<size_t>(E + 1), 0);
  for (int32_t e : rt.ids) ++rt.offsets[e + 1];
  for (int e = 0; e < E; ++e) rt.offsets[e + 1] += rt.offsets[e];
  for (int e = 0; e < E; ++e) {
    for (int row = 0; row < T * k; ++row) {
      if (rt.ids[row] == e) {
        rt.entries.push_back(row);
        rt.expert_of.push_back(e);
      }
    }
  }
  return rt;
}

struct ExpertSet {
  GgmlType type;
  int64_t n_in, n_out;
  size_t stride;
  std::vector<uint8_t> host;
  DevBuf<uint8_t> dev;
  std::vector<std::unique_ptr<DevBuf<uint8_t>>> own;  // pointer-table layout: one allocation per expert
  std::unique_ptr<DevBuf<const uint8_t*>> table;
  ExpertSet(GgmlType t, int64_t in, int64_t out, int E, float scale, Rng& rng, bool ptr_table)
      : type(t), n_in(in), n_out(out), stride(core::row_size(t, in) * static_cast<size_t>(out)), dev(stride * E) {
    std::vector<float> v = random_values(rng, out * E, in, false);
    for (float& f : v) f *= scale;
    host = quantize_rows(t, v, out * E, in);
    dev.upload(host);
    if (ptr_table) {
      std::vector<const uint8_t*> ptrs;
      for (int e = 0; e < E; ++e) {
        own.push_back(std::make_unique<DevBuf<uint8_t>>(stride));
        own.back()->upload(std::vector<uint8_t>(host.begin() + stride * e, host.begin() + stride * (e + 1)));
        ptrs.push_back(own.back()->get());
      }
      table = std::make_unique<DevBuf<const uint8_t*>>(ptrs.size());
      table->upload(ptrs);
    }
  }
  const uint8_t* row(int e, int64_t r) const { return &host[stride * e + core::row_size(type, n_in) * r]; }
  cuda::WeightSet view() const {
    cuda::WeightSet w;
    w.type = type;
    w.n_in = n_in;
    w.n_out = n_out;
    if (table) {
      w.ptrs = table->get();
    } else {
      w.base = dev.get();
      w.stride = stride;
    }
    return w;
  }
};

struct Layer {
  int64_t n_embd, n_ff;
  int E;
  ExpertSet gate, up, down;
  Layer(GgmlType tg, GgmlType tu, GgmlType td, int64_t embd, int64_t ff, int E_, Rng& rng, bool ptrs)
      : n_embd(embd), n_ff(ff), E(E_), gate(tg, embd, ff, E_, 0.25f, rng, ptrs), up(tu, embd, ff, E_, 0.25f, rng, ptrs),
        down(td, ff, embd, E_, 0.25f, rng, ptrs) {}
  cuda::MoeExperts view() const { return {gate.view(), up.view(), down.view()}; }
  std::string label() const {
    return std::string(name(gate.type)) + "/" + name(up.type) + "/" + name(down.type);
  }
};

// How far silu(g) * u can move when g and u are off by up to bg and bu
// (|silu'| < 1.1).
double silu_bound(double g, double u, double bg, double bu) {
  return 1.1 * bg * (std::fabs(u) + bu) + std::fabs(cpu_silu(static_cast<float>(g))) * bu * 1.01;
}

// Checks the decode step's h, hq and y of positions `pos` against the CPU:
// gate/up and down products within mmvq's summation-order bound, silu to
// 2e-6 relative, hq bit for bit against the CPU's quantization of the GPU's h.
void check_decode_rows(const Layer& L, const Routing& rt, const Acts& x, const std::vector<int>& pos,
                       const std::vector<float>& h, const std::vector<BlockQ8A>& hq, bool check_hq,
                       const std::vector<float>& y, const std::string& what) {
  Report rh(what + " h"), rq(what + " hq"), ry(what + " y");
  const double u24 = std::ldexp(1.0, -24);
  for (int p : pos) {
    const int e = rt.expert_of[p], row = rt.entries[p], t = row / rt.k;
    for (int64_t f = 0; f < L.n_ff; ++f) {
      const void* ag = x.row(L.gate.type, t);
      const void* au = x.row(L.up.type, t);
      const float g = core::vec_dot(L.gate.type, L.gate.row(e, f), ag, L.n_embd);
      const float u = core::vec_dot(L.up.type, L.up.row(e, f), au, L.n_embd);
      const float want = cpu_silu(g) * u;
      const double ng = is_quant(L.gate.type) ? L.n_embd / 32 : L.n_embd;
      const double nu = is_quant(L.up.type) ? L.n_embd / 32 : L.n_embd;
      const double bg = (2 * ng + 40) * u24 * abs_terms(L.gate.type, L.gate.row(e, f), ag, L.n_embd);
      const double bu = (2 * nu + 40) * u24 * abs_terms(L.up.type, L.up.row(e, f), au, L.n_embd);
      const double bound = 2e-6 * std::fabs(want) + silu_bound(g, u, bg, bu) + 1e-30;
      const float got = h[p * L.n_ff + f];
      if (!(std::fabs(static_cast<double>(got) - want) <= bound)) {
        rh.bad("position " + std::to_string(p) + " (expert " + std::to_string(e) + ", row " + std::to_string(row) +
                   ") feature " + std::to_string(f),
               got, want, bound);
      }
    }
    std::vector<BlockQ8A> q(static_cast<size_t>(L.n_ff / 32));
    core::quantize_activations(&h[p * L.n_ff], q.data(), L.n_ff);
    if (check_hq && std::memcmp(q.data(), &hq[p * L.n_ff / 32], q.size() * sizeof(BlockQ8A)) != 0) {
      rq.bad("position " + std::to_string(p) + " (quantized from the GPU's own h)", 0, 0, 0);
    }
    const void* act = is_quant(L.down.type) ? static_cast<const void*>(check_hq ? &hq[p * L.n_ff / 32] : q.data())
                                            : static_cast<const void*>(&h[p * L.n_ff]);
    for (int64_t o = 0; o < L.n_embd; ++o) {
      const float want = core::vec_dot(L.down.type, L.down.row(e, o), act, L.n_ff);
      const float got = y[static_cast<size_t>(row) * L.n_embd + o];
      const double n_terms = is_quant(L.down.type) ? L.n_ff / 32 : L.n_ff;
      const double bound = (2 * n_terms + 40) * u24 * abs_terms(L.down.type, L.down.row(e, o), act, L.n_ff) + 1e-30;
      if (!(std::fabs(static_cast<double>(got) - want) <= bound)) {
        ry.bad("row " + std::to_string(row) + " (position " + std::to_string(p) + ", expert " + std::to_string(e) +
                   ") out " + std::to_string(o),
               got, want, bound);
      }
    }
  }
  INFO(rh.text());
  CHECK(rh.count() == 0);
  INFO(rq.text());
  CHECK(rq.count() == 0);
  INFO(ry.text());
  CHECK(ry.count() == 0);
}

// A gate/up/down product of the prompt step's reference: a quantized matrix
// against F16 activations x16 (the GEMM's reference and bound), a float one
// against F32 activations xf (vec_dot's bits: bound 0).
strata::test::RefDot prompt_dot(const ExpertSet& m, int e, int64_t r, const float* x16, const float* xf) {
  if (is_quant(m.type)) return gemm_ref_row(m.type, m.row(e, r), x16, m.n_in);
  return {core::vec_dot(m.type, m.row(e, r), xf, m.n_in), 0.0};
}

// Checks the prompt step's outputs of every position against the reference:
// h (F32, where written) and hh (F16, where written) from the gate and up
// products, hh the F16 of h where both are; y from the GPU's own h as the
// down reads it (hh for a quantized down).
void check_prompt_rows(const Layer& L, const Routing& rt, const Acts& x, const std::vector<float>& h,
                       const std::vector<uint16_t>& hh, const std::vector<float>& y, const std::string& what) {
  Report rh(what + " h"), rhh(what + " hh"), ry(what + " y");
  for (int p = 0; p < rt.T * rt.k; ++p) {
    const int e = rt.expert_of[p], row = rt.entries[p], t = row / rt.k;
    for (int64_t f = 0; f < L.n_ff; ++f) {
      const strata::test::RefDot g = prompt_dot(L.gate, e, f, &x.hf[t * L.n_embd], &x.f[t * L.n_embd]);
      const strata::test::RefDot u = prompt_dot(L.up, e, f, &x.hf[t * L.n_embd], &x.f[t * L.n_embd]);
      const double want = cpu_silu(static_cast<float>(g.value)) * u.value;
      const double bound = 2e-6 * std::fabs(want) + silu_bound(g.value, u.value, g.bound, u.bound) + 1e-30;
      const std::string where = "position " + std::to_string(p) + " (expert " + std::to_string(e) + ", row " +
                                std::to_string(row) + ") feature " + std::to_string(f);
      const size_t i = static_cast<size_t>(p) * L.n_ff + f;
      if (!h.empty() && !(std::fabs(h[i] - want) <= bound)) rh.bad(where, h[i], want, bound);
      if (!hh.empty()) {
        const float got = core::fp16_to_f32(hh[i]);
        // and the F16 rounding: half an ulp, 2^-25 below the normal range
        const double b16 = bound * 1.001 + std::ldexp(std::fabs(want), -11) + std::ldexp(1.0, -25);
        if (!(std::fabs(got - want) <= b16)) rhh.bad(where, got, want, b16);
        if (!h.empty() && hh[i] != core::f32_to_fp16(h[i])) rhh.bad(where + " (not the F16 of h)", got, h[i], 0.0);
      }
    }
    std::vector<float> act16(static_cast<size_t>(L.n_ff));
    if (!hh.empty())
      for (int64_t f = 0; f < L.n_ff; ++f) act16[f] = core::fp16_to_f32(hh[static_cast<size_t>(p) * L.n_ff + f]);
    const float* hf = h.empty() ? nullptr : &h[static_cast<size_t>(p) * L.n_ff];
    for (int64_t o = 0; o < L.n_embd; ++o) {
      const strata::test::RefDot want = prompt_dot(L.down, e, o, act16.data(), hf);
      const float got = y[static_cast<size_t>(row) * L.n_embd + o];
      if (!(std::fabs(got - want.value) <= want.bound)) {
        ry.bad("row " + std::to_string(row) + " (position " + std::to_string(p) + ", expert " + std::to_string(e) +
                   ") out " + std::to_string(o),
               got, want.value, want.bound);
      }
    }
  }
  INFO(rh.text());
  CHECK(rh.count() == 0);
  INFO(rhh.text());
  CHECK(rhh.count() == 0);
  INFO(ry.text());
  CHECK(ry.count() == 0);
}

// Device copies of a routing and of the layer's inputs.
struct PromptRun {
  DevBuf<int32_t> offsets, entries;
  DevBuf<float> x;
  DevBuf<uint16_t> xh;
  DevBuf<cuda::GemmTile> tiles;
  DevBuf<int32_t> count;
  DevBuf<float> h, y;
  DevBuf<uint16_t> hh;
  cuda::RowTableView table;
  int64_t max_tiles;
  PromptRun(const Layer& L, const Routing& rt, const Acts& a)
      : offsets(rt.offsets.size()), entries(rt.entries.size()), x(a.f.size()), xh(a.h.size()),
        tiles(static_cast<size_t>(cuda::gemm_max_tiles(rt.T * rt.k, rt.E))), count(1),
        h(static_cast<size_t>(rt.T * rt.k * L.n_ff)), y(static_cast<size_t>(rt.T * rt.k * L.n_embd)),
        hh(static_cast<size_t>(rt.T * rt.k * L.n_ff)), max_tiles(cuda::gemm_max_tiles(rt.T * rt.k, rt.E)) {
    offsets.upload(rt.offsets);
    entries.upload(rt.entries);
    x.upload(a.f);
    table = {offsets.get(), entries.get(), rt.T, rt.k, rt.E};
  }
  void poison() {
    h.poison();
    y.poison();
    hh.poison();
    tiles.poison();
    count.poison();
  }
};

Acts moe_inputs(Rng& rng, int T, int64_t n_embd) {
  std::vector<float> f = random_values(rng, T, n_embd, true);
  for (float& v : f) v *= 0.25f;  // keeps gate values where silu's exp is well inside F32
  return make_acts(std::move(f), T, n_embd);
}

}  // namespace

TEST_CASE("gemm_tile_map lists each group's tiles", "[gpu][moe]") {
  Rng rng(case_seed("gemm_tile_map"));
  const Routing rt = make_routing(rng, 300, 6, 24);
  TestStream st;
  DevBuf<int32_t> off(rt.offsets.size());
  off.upload(rt.offsets);
  const std::vector<int32_t> subset = {3, rt.E - 1, 0, 1000, rt.E - 2};
  DevBuf<int32_t> list(subset.size());
  list.upload(subset);
  for (int use_list = 0; use_list < 2; ++use_list) {
    const int64_t max_tiles = cuda::gemm_max_tiles(rt.T * rt.k, rt.E);
    DevBuf<cuda::GemmTile> tiles(static_cast<size_t>(max_tiles));
    DevBuf<int32_t> count(1);
    tiles.poison();
    count.poison();
    std::vector<int32_t> groups;
    for (int e = 0; e < rt.E; ++e) groups.push_back(e);
    if (use_list) groups = subset;
    cuda::gemm_tile_map(off.get(), rt.E, use_list ? list.get() : nullptr, static_cast<int32_t>(groups.size()),
                        tiles.get(), count.get(), max_tiles, st.s);
    st.sync();
    std::vector<cuda::GemmTile> want;
    for (int32_t g : groups) {
      if (g < 0 || g >= rt.E) continue;
      for (int b = rt.offsets[g]; b < rt.offsets[g + 1]; b += cuda::kGemmTileRows) {
        want.push_back({g, b, std::min(b + cuda::kGemmTileRows, rt.offsets[g + 1]), 0});
      }
    }
    const std::vector<int32_t> n = count.download();
    const std::vector<cuda::GemmTile> got = tiles.download();
    INFO("list=" << use_list << " count " << n[0] << " want " << want.size());
    REQUIRE(n[0] == static_cast<int32_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("tile " << i << ": got {" << got[i].group << ", " << got[i].begin << ", " << got[i].end << "} want {"
                   << want[i].group << ", " << want[i].begin << ", " << want[i].end << "}");
      CHECK((got[i].group == want[i].group && got[i].begin == want[i].begin && got[i].end == want[i].end));
    }
  }
}

TEST_CASE("MoE prompt step: grouped gate/up and down match the reference", "[gpu][moe]") {
  Rng rng(case_seed("moe_prompt"));
  struct Combo {
    GgmlType g, u, d;
    bool ptrs;
  };
  const Combo combos[] = {
      {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K, false}, {GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q8_0, true},
      {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q4_K, false}, {GgmlType::Q6_K, GgmlType::Q6_K, GgmlType::Q5_K, false},
      {GgmlType::BF16, GgmlType::BF16, GgmlType::F16, false},  {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q4_K, false},
      {GgmlType::F16, GgmlType::Q4_K, GgmlType::F32, false},   {GgmlType::BF16, GgmlType::BF16, GgmlType::Q4_K, false},
      {GgmlType::Q3_K, GgmlType::Q3_K, GgmlType::Q3_K, true},  {GgmlType::Q2_K, GgmlType::Q2_K, GgmlType::Q3_K, false},
      {GgmlType::IQ4_XS, GgmlType::IQ4_XS, GgmlType::IQ4_NL, true},
      {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ3_XXS, false},
      {GgmlType::IQ3_S, GgmlType::IQ3_S, GgmlType::IQ2_S, true},
      {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_1, true},
      {GgmlType::Q5_0, GgmlType::Q1_0, GgmlType::Q2_0, false},
  };
  const int T = 96, k = 6, E = 16;
  const int64_t n_embd = 512, n_ff = 256;
  for (const Combo& c : combos) {
    const Layer L(c.g, c.u, c.d, n_embd, n_ff, E, rng, c.ptrs);
    const Routing rt = make_routing(rng, T, k, E);
    const Acts a = moe_inputs(rng, T, n_embd);
    PromptRun run(L, rt, a);
    TestStream st;
    run.poison();
    // x rounded to F16 on the GPU (checked against the CPU's rounding below).
    cuda::f32_to_f16(run.x.get(), run.xh.get(), T * n_embd, st.s);
    const cuda::MoeScratch scratch{run.tiles.get(), run.count.get(), run.h.get(), run.hh.get()};
    cuda::moe_experts_prompt(L.view(), run.table, run.x.get(), run.xh.get(), scratch, run.y.get(), st.s);
    st.sync();
    INFO("combo " << L.label() << (c.ptrs ? " (pointer table)" : ""));
    CHECK(same_bits(run.xh.download(), a.h));
    // What moe_experts_listed writes: hh for a quantized down, h for a float
    // one or where gate and up of two types need it for the gate.
    const bool qd = is_quant(c.d), h_used = !qd || c.g != c.u;
    const std::vector<float> h = h_used ? run.h.download() : std::vector<float>();
    const std::vector<uint16_t> hh = qd ? run.hh.download() : std::vector<uint16_t>();
    const std::vector<float> y = run.y.download();
    check_prompt_rows(L, rt, a, h, hh, y, "moe prompt " + L.label());
    if (!h_used) {
      uint32_t bits;
      std::memcpy(&bits, &run.h.download()[0], 4);
      CHECK(bits == 0xffffffffu);  // the F32 h is not written when nothing reads it
    }

    // Determinism: a second run gives the same bits.
    run.poison();
    cuda::moe_experts_prompt(L.view(), run.table, run.x.get(), run.xh.get(), scratch, run.y.get(), st.s);
    st.sync();
    if (h_used) CHECK(same_bits(h, run.h.download()));
    if (qd) CHECK(same_bits(hh, run.hh.download()));
    CHECK(same_bits(y, run.y.download()));

    // A subset of the experts (as for experts streamed one by one): only
    // their rows are written, equal to the full run's.
    const std::vector<int32_t> subset = {3, E - 2, 0};
    DevBuf<int32_t> list(subset.size());
    list.upload(subset);
    run.poison();
    cuda::gemm_tile_map(run.offsets.get(), E, list.get(), 3, run.tiles.get(), run.count.get(), run.max_tiles, st.s);
    cuda::moe_gate_up(L.view(), run.table, run.x.get(), run.xh.get(), run.tiles.get(), run.count.get(), run.max_tiles,
                      h_used ? run.h.get() : nullptr, qd ? run.hh.get() : nullptr, st.s);
    cuda::moe_down(L.view(), run.table, h_used ? run.h.get() : nullptr, qd ? run.hh.get() : nullptr, run.tiles.get(),
                   run.count.get(), run.max_tiles, run.y.get(), st.s);
    st.sync();
    const std::vector<float> ys = run.y.download();
    int wrong = 0, first = -1;
    for (int p = 0; p < T * k; ++p) {
      const int e = rt.expert_of[p];
      const bool listed = e == 3 || e == E - 2 || e == 0;
      const float* got = &ys[static_cast<size_t>(rt.entries[p]) * n_embd];
      for (int64_t o = 0; o < n_embd; ++o) {
        uint32_t bits;
        std::memcpy(&bits, &got[o], 4);
        const bool ok = listed ? std::memcmp(&got[o], &y[static_cast<size_t>(rt.entries[p]) * n_embd + o], 4) == 0
                               : bits == 0xffffffffu;
        if (!ok && wrong++ == 0) first = p;
      }
    }
    INFO("subset run: " << wrong << " wrong outputs, first at position " << first);
    CHECK(wrong == 0);
  }
}

TEST_CASE("MoE decode step: batched mmvq over the router's choices", "[gpu][moe]") {
  Rng rng(case_seed("moe_decode"));
  const GgmlType combos[][3] = {{GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K},
                                {GgmlType::Q8_0, GgmlType::Q5_K, GgmlType::Q4_K},
                                {GgmlType::Q3_K, GgmlType::Q3_K, GgmlType::Q2_K},
                                {GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ4_XS},
                                {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ3_XXS},
                                {GgmlType::IQ2_S, GgmlType::IQ3_S, GgmlType::IQ2_S},
                                {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1},
                                {GgmlType::Q4_0, GgmlType::Q1_0, GgmlType::Q2_0},
                                {GgmlType::BF16, GgmlType::BF16, GgmlType::F32}};
  const int T = 3, k = 4, E = 16;
  const int64_t n_embd = 512, n_ff = 256;
  for (const auto& c : combos) {
    const Layer L(c[0], c[1], c[2], n_embd, n_ff, E, rng, false);
    Routing rt = make_routing(rng, T, k, E);
    const Acts a = moe_inputs(rng, T, n_embd);
    // Positions in entry order: position b is entry b here (no grouping).
    Routing flat = rt;
    for (int b = 0; b < T * k; ++b) {
      flat.entries[b] = b;
      flat.expert_of[b] = rt.ids[b];
    }
    DevBuf<int32_t> ids(rt.ids.size());
    ids.upload(rt.ids);
    DevBuf<float> x(a.f.size()), h(static_cast<size_t>(T * k * n_ff)), y(static_cast<size_t>(T * k * n_embd));
    DevBuf<BlockQ8A> xq(a.q.size()), hq(static_cast<size_t>(T * k * n_ff / 32));
    x.upload(a.f);
    xq.upload(a.q);
    h.poison();
    y.poison();
    hq.poison();
    TestStream st;
    cuda::moe_experts_decode(L.view(), ids.get(), T, k, x.get(), xq.get(), h.get(), hq.get(), y.get(), st.s);
    st.sync();
    INFO("combo " << L.label());
    std::vector<int> all(static_cast<size_t>(T * k));
    for (int p = 0; p < T * k; ++p) all[p] = p;
    check_decode_rows(L, flat, a, all, h.download(), hq.download(), is_quant(c[2]), y.download(),
                      "moe decode " + L.label());
  }
}

int main(int argc, char** argv) {
  if (cuda::device_count() == 0) {
    std::printf("gemm_ops_tests: no CUDA device, skipping\n");
    return 77;
  }
  std::printf("gemm_ops_tests: quantized GEMMs on %s\n",
              cuda::gemm_kernel() == cuda::GemmKernel::Wgmma ? "wgmma" : "mma.sync");
  return Catch::Session().run(argc, argv);
}
