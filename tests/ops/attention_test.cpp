// kv_write against the CPU KvCache's bytes, and prompt/decode attention against cpu::attention_row.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/runtime/kv_cache.h"
#include "cpu/ops.h"
#include "cuda/attention/attention.cuh"
#include "cuda/attention/kv.cuh"
#include "ops/ops_util.h"

using namespace strata;
using core::KvType;
using strata::test::test_stream;

namespace {

const char* type_name(KvType t) { return t == KvType::F16 ? "f16" : "int8"; }

// One layer's K or V plane on the device, poisoned, with its view.
struct DevicePlane {
  cuda::DeviceBuffer data, scales;
  cuda::KvDeviceView view;

  DevicePlane(KvType type, int n_ctx, int n_head_kv, int head_dim)
      : data(test::poisoned(cuda::kv_data_bytes(type, n_ctx, n_head_kv, head_dim))),
        scales(test::poisoned(cuda::kv_scale_bytes(type, n_ctx, n_head_kv))) {
    view.type = type;
    view.data = data.data();
    view.scales = scales.as<float>();
    view.n_ctx = n_ctx;
    view.n_head_kv = n_head_kv;
    view.head_dim = head_dim;
  }

  // Copies positions [0, n) of a CPU view (its layout is the device's).
  void upload_prefix(const core::KvView& cpu, int32_t n) {
    const size_t rows = static_cast<size_t>(n) * view.n_head_kv;
    const size_t esize = view.type == KvType::F16 ? 2 : 1;
    cuda::copy_async(data.data(), cpu.data, rows * view.head_dim * esize, test_stream().get());
    if (view.type == KvType::Int8) cuda::copy_async(scales.data(), cpu.scales, rows * sizeof(float), test_stream().get());
    test_stream().synchronize();
  }
};

// A CPU cache of one layer with positions [0, n_written) filled with random rows.
struct FilledCache {
  core::KvCache cpu;
  FilledCache(KvType type, int n_ctx, int n_head_kv, int dk, int dv, int32_t n_written, test::Rng& rng)
      : cpu(type, 1, n_ctx, n_head_kv, dk, dv) {
    for (int32_t p = 0; p < n_written; ++p) {
      const std::vector<float> k = rng.vec(static_cast<size_t>(n_head_kv) * dk);
      const std::vector<float> v = rng.vec(static_cast<size_t>(n_head_kv) * dv);
      cpu.write(0, p, k.data(), v.data());
    }
  }
};

}  // namespace

// Tolerance: bit-exact. The device encodes with the CPU's operations (RNE
// half conversion; d = amax / 127 and roundf(x / d) with IEEE division), so
// the stored bytes and scales must be identical; positions not named must
// keep their poison.
TEST_CASE("kv_write stores rows exactly as the CPU KvCache") {
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (int head_dim : {128, 80, 7}) {
      DYNAMIC_SECTION(type_name(type) << " head_dim=" << head_dim) {
        test::Rng rng = test::rng_for(300 + head_dim + static_cast<int>(type));
        const int n_ctx = 50, n_head_kv = 4, T = 9;
        // Distinct positions in random order.
        std::vector<int32_t> all(n_ctx);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng.gen);
        const std::vector<int32_t> pos(all.begin(), all.begin() + T);
        std::vector<float> x = rng.vec(static_cast<size_t>(T) * n_head_kv * head_dim, 4.0f);
        std::fill_n(x.begin() + head_dim, head_dim, 0.0f);  // one all-zero row: Int8 d = 0

        core::KvCache cpu(type, 1, n_ctx, n_head_kv, head_dim, head_dim);
        for (int t = 0; t < T; ++t) {
          const float* row = &x[static_cast<size_t>(t) * n_head_kv * head_dim];
          cpu.write(0, pos[t], row, row);
        }
        DevicePlane dev(type, n_ctx, n_head_kv, head_dim);
        cuda::DeviceBuffer dx = test::to_device(x), dpos = test::to_device(pos);
        cuda::kv_write(dx.as<float>(), dpos.as<int32_t>(), T, dev.view, test_stream().get());

        const core::KvView kv = cpu.k_view(0);
        const size_t esize = type == KvType::F16 ? 2 : 1;
        const size_t row_bytes = head_dim * esize;
        const std::vector<uint8_t> got = test::to_host<uint8_t>(dev.data, dev.data.size());
        const std::vector<float> got_scales = test::to_host<float>(dev.scales, dev.scales.count<float>());
        std::vector<bool> written(n_ctx, false);
        for (int32_t p : pos) written[p] = true;
        for (int32_t p = 0; p < n_ctx; ++p) {
          for (int h = 0; h < n_head_kv; ++h) {
            const size_t r = static_cast<size_t>(p) * n_head_kv + h;
            INFO("position " << p << " head " << h << (written[p] ? " (written)" : " (not written: must stay 0xFF)"));
            if (written[p]) {
              CHECK_REPORT(test::byte_mismatches(&got[r * row_bytes], static_cast<const uint8_t*>(kv.data) + r * row_bytes,
                                                 row_bytes));
              if (type == KvType::Int8) CHECK_REPORT(test::byte_mismatches(&got_scales[r], &kv.scales[r], sizeof(float)));
            } else {
              const std::vector<uint8_t> ff(row_bytes, 0xFF);
              CHECK_REPORT(test::byte_mismatches(&got[r * row_bytes], ff.data(), row_bytes));
            }
          }
        }
      }
    }
  }
}

namespace {

struct AttnCase {
  int n_head, n_head_kv, dk, dv;
  int32_t pos0;
  int T;  // prompt rows (decode: n_kv = pos0 + T, one query)
};

// A case's cache: n_kv random positions written on the CPU, uploaded into
// poisoned device planes of n_ctx positions.
struct CaseCache {
  FilledCache filled;
  DevicePlane k, v;
  CaseCache(KvType type, int n_ctx, const AttnCase& c, int32_t n_kv, test::Rng& rng)
      : filled(type, n_ctx, c.n_head_kv, c.dk, c.dv, n_kv, rng),
        k(type, n_ctx, c.n_head_kv, c.dk),
        v(type, n_ctx, c.n_head_kv, c.dv) {
    k.upload_prefix(filled.cpu.k_view(0), n_kv);
    v.upload_prefix(filled.cpu.v_view(0), n_kv);
  }
};

std::string describe(const AttnCase& c) {
  return "heads=" + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " dk=" + std::to_string(c.dk) +
         " dv=" + std::to_string(c.dv) + " pos0=" + std::to_string(c.pos0) + " T=" + std::to_string(c.T);
}

// Reference: cpu::attention_row for query row t over [0, pos0 + t].
std::vector<float> reference(const std::vector<float>& q, const core::KvCache& cache, const AttnCase& c, int rows,
                             int32_t first_n_kv, float scale) {
  std::vector<float> want(static_cast<size_t>(rows) * c.n_head * c.dv);
  for (int t = 0; t < rows; ++t) {
    core::cpu::attention_row(&q[static_cast<size_t>(t) * c.n_head * c.dk], cache.k_view(0), cache.v_view(0), c.n_head,
                             first_n_kv + t, scale, &want[static_cast<size_t>(t) * c.n_head * c.dv]);
  }
  return want;
}

std::function<std::string(size_t)> where(const AttnCase& c) {
  return [c](size_t i) {
    return "row " + std::to_string(i / (c.n_head * c.dv)) + " head " + std::to_string(i / c.dv % c.n_head) + " col " +
           std::to_string(i % c.dv);
  };
}

// Both sides read the same stored K/V, so only F32 rounding (dot order, the
// online vs two-pass softmax, expf ulps) separates them; outputs are
// averages of |V| <= 1.
constexpr test::Tol kAttnTol{1e-5, 1e-5};

// The prompt's tensor-core path (attention.cuh) takes head dims that are
// multiples of 16 (the test's buffers are always aligned enough).
bool tensor_core_path(const AttnCase& c) { return c.dk % 16 == 0 && c.dv % 16 == 0; }

// attention_prompt on the mma.sync tensor cores (Q and P as F16 hi + lo
// pairs, K and V exact): F32-class. A CPU emulation of this precision
// against a double two-pass reference gave at most 1.4e-6 on these shapes;
// the tensor cores' F32 accumulation (which truncates rather than rounds)
// adds a little.
constexpr test::Tol kSplitTol{3e-5, 3e-5};

// attention_prompt on the warpgroup kernel (Q split, P rounded to F16): each
// softmax weight moves by at most 2^-11 of itself and the sum l keeps the
// unrounded weights, so an output moves by at most 2^-11 = 4.9e-4 of the
// largest |V| it averages (|V| <= 1 here), beside kSplitTol's. A key
// wrongly masked or not in a row of up to ~700 keys moves it by ~1e-3.
constexpr test::Tol kSplitQTol{4.9e-4 + 3e-5, 3e-5};

// Whether attention_prompt takes the warpgroup kernel (attention.cuh).
bool warpgroup_path(KvType type, const AttnCase& c) {
  return type == KvType::F16 && c.dk == 128 && c.dv == 128 && cuda::attention_kernel() == cuda::AttentionKernel::Wgmma;
}

// attention_prompt_f16 on the tensor cores: |got - want| <= kF16TolFrac *
// max |want|. Q * scale and the softmax weights p are rounded to F16
// (relative 2^-11) as MMA operands, moving each weight by up to ~1e-3 of
// itself, so an output moves by about that fraction of the largest |V| it
// averages. A CPU emulation of exactly this precision (F16 Q and P, F32
// sums, 64-key online softmax) against a double two-pass reference gave at
// most 8e-4 * max |want| on these shapes and data; 5e-3 leaves margin for
// the device's exp2 ulps and summation order, yet a key wrongly masked or
// not in a row of few keys moves it by ~1e-1.
constexpr double kF16TolFrac = 5e-3;

struct PromptFn {
  const char* name;
  void (*fn)(const float*, const cuda::KvDeviceView&, const cuda::KvDeviceView&, int, int64_t, int32_t, float, float*,
             cudaStream_t);
  bool split;  // Q as hi + lo pairs on the tensor cores
};
constexpr PromptFn kPromptFns[] = {{"attention_prompt", cuda::attention_prompt, true},
                                   {"attention_prompt_f16", cuda::attention_prompt_f16, false}};

test::Tol prompt_tol(const PromptFn& f, KvType type, const AttnCase& c, const std::vector<float>& want) {
  if (!tensor_core_path(c)) return kAttnTol;
  if (f.split) return warpgroup_path(type, c) ? kSplitQTol : kSplitTol;
  float max_abs = 0.0f;
  for (float w : want) max_abs = std::max(max_abs, std::fabs(w));
  return {kF16TolFrac * max_abs, 0.0};
}

}  // namespace

// Tolerance: prompt_tol (F32 path: kAttnTol; tensor cores: kSplitTol for
// attention_prompt, kSplitQTol where it takes the warpgroup kernel, 5e-3 of
// the largest output for attention_prompt_f16); two runs bit-identical.
TEST_CASE("attention_prompt and attention_prompt_f16 match cpu::attention_row, causal, GQA, F16 and INT8") {
  const AttnCase cases[] = {
      // tensor-core path (head dims multiples of 16)
      {8, 2, 128, 128, 0, 70},     // first chunk, several key tiles, padding rows
      {8, 2, 128, 128, 100, 37},   // a later chunk over earlier positions
      {32, 4, 128, 128, 0, 19},    // qwen3-30b-a3b heads
      {32, 4, 128, 128, 0, 300},   // qwen3: 19 row tiles, the last partial; 5 key tiles
      {32, 4, 128, 128, 200, 77},  // qwen3, a chunk after 200 cached positions
      {32, 4, 128, 128, 37, 700},  // qwen3, 12 key tiles, blocks of 16 tokens starting mid-tile
      {2, 2, 128, 128, 0, 200},    // no GQA: 128 tokens a block, warps skipping tiles past their rows
      {4, 4, 64, 64, 5, 66},       // no GQA, head dim 64
      {16, 2, 64, 64, 0, 150},     // head dim 64, group 8
      {4, 1, 32, 32, 3, 130},      // head dim 32 (64-wide instance, half its dims unused)
      {4, 2, 80, 80, 10, 33},      // head dim 80 (128-wide instance)
      {8, 2, 128, 64, 0, 50},      // head_dim_v < head_dim_k
      {16, 2, 256, 256, 0, 40},    // largest head dims
      {16, 2, 256, 256, 64, 45},   // largest head dims, later chunk
      {8, 2, 64, 64, 17, 1},       // one row after 17 cached positions
      // F32 path (a head dim not a multiple of 16)
      {6, 3, 40, 24, 3, 29},       // odd sizes: scalar loads, masked columns
      {3, 1, 18, 10, 2, 9},        // head_dim_k not a multiple of 4: padded Q/K columns
      {2, 1, 16, 8, 0, 1},         // one row
  };
  for (const PromptFn& f : kPromptFns) {
    for (KvType type : {KvType::F16, KvType::Int8}) {
      for (const AttnCase& c : cases) {
        DYNAMIC_SECTION(f.name << " " << type_name(type) << " " << describe(c)
                               << (tensor_core_path(c) ? " (tensor cores)" : " (f32)")) {
          test::Rng rng = test::rng_for(400 + c.dk + c.T + static_cast<int>(type));
          const int32_t n_kv = c.pos0 + c.T;
          const int n_ctx = n_kv + 13;  // unwritten, poisoned positions after the last one
          CaseCache cache(type, n_ctx, c, n_kv, rng);

          const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
          const std::vector<float> q = rng.vec(static_cast<size_t>(c.T) * c.n_head * c.dk, 3.0f);
          const std::vector<float> want = reference(q, cache.filled.cpu, c, c.T, c.pos0 + 1, scale);

          cuda::DeviceBuffer dq = test::to_device(q);
          cuda::DeviceBuffer out = test::poisoned(want.size() * sizeof(float));
          auto run = [&] {
            f.fn(dq.as<float>(), cache.k.view, cache.v.view, c.n_head, c.T, c.pos0, scale, out.as<float>(),
                 test_stream().get());
            return test::to_host<float>(out, want.size());
          };
          const std::vector<float> got = run();
          CHECK_REPORT(test::mismatches(got.data(), want.data(), got.size(), prompt_tol(f, type, c, want), where(c)));
          test::poison(out);
          CHECK(test::bit_equal(run(), got));
        }
      }
    }
  }
}

// Tolerance: bit-exact. The F16 rows are F32 rows rounded once: those of
// attention_prompt_f16 where the warpgroup kernel writes them (F16 cache,
// head dims 128: Q as one F16), else attention_prompt's, converted (INT8
// cache; F32 path).
TEST_CASE("attention_prompt_to_f16 gives the F32 kernels' rows rounded to F16") {
  const AttnCase cases[] = {{32, 4, 128, 128, 0, 300}, {32, 4, 128, 128, 200, 77}, {6, 3, 40, 24, 3, 29}};
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (const AttnCase& c : cases) {
      DYNAMIC_SECTION(type_name(type) << " " << describe(c)) {
        test::Rng rng = test::rng_for(480 + c.dk + c.T + static_cast<int>(type));
        const int32_t n_kv = c.pos0 + c.T;
        CaseCache cache(type, n_kv, c, n_kv, rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
        const std::vector<float> q = rng.vec(static_cast<size_t>(c.T) * c.n_head * c.dk, 3.0f);
        const size_t n = static_cast<size_t>(c.T) * c.n_head * c.dv;
        cuda::DeviceBuffer dq = test::to_device(q), out = test::poisoned(n * sizeof(float));
        cuda::DeviceBuffer out_h = test::poisoned(n * sizeof(uint16_t));
        cudaStream_t s = test_stream().get();
        const bool f16_q = warpgroup_path(type, c);
        (f16_q ? cuda::attention_prompt_f16 : cuda::attention_prompt)(dq.as<float>(), cache.k.view, cache.v.view,
                                                                       c.n_head, c.T, c.pos0, scale, out.as<float>(), s);
        const std::vector<float> rows = test::to_host<float>(out, n);
        std::vector<uint16_t> want(n);
        for (size_t i = 0; i < n; ++i) want[i] = core::f32_to_fp16(rows[i]);
        cuda::attention_prompt_to_f16(dq.as<float>(), cache.k.view, cache.v.view, c.n_head, c.T, c.pos0, scale,
                                      out.as<float>(), out_h.as<uint16_t>(), s);
        CHECK_REPORT(test::byte_mismatches(test::to_host<uint16_t>(out_h, n).data(), want.data(), n * 2));
      }
    }
  }
}

// The F32 kernel stays the prompt's path where the tensor-core path's
// alignment does not hold: q misaligned by one float (attention_prompt_f16,
// whose tensor-core results would miss kAttnTol).
TEST_CASE("attention_prompt_f16 with an unaligned q takes the F32 path") {
  const AttnCase c{8, 2, 128, 128, 3, 21};
  test::Rng rng = test::rng_for(471);
  const int32_t n_kv = c.pos0 + c.T;
  CaseCache cache(KvType::F16, n_kv, c, n_kv, rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
  std::vector<float> q = rng.vec(static_cast<size_t>(c.T) * c.n_head * c.dk + 1, 3.0f);
  const std::vector<float> want =
      reference(std::vector<float>(q.begin() + 1, q.end()), cache.filled.cpu, c, c.T, c.pos0 + 1, scale);
  cuda::DeviceBuffer dq = test::to_device(q);
  cuda::DeviceBuffer out = test::poisoned(want.size() * sizeof(float));
  cuda::attention_prompt_f16(dq.as<float>() + 1, cache.k.view, cache.v.view, c.n_head, c.T, c.pos0, scale,
                             out.as<float>(), test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(out, want.size()).data(), want.data(), want.size(), kAttnTol,
                                where(c)));
}

// Tolerance: kAttnTol; bit-identical from run to run and whatever max_kv
// (the grid): max_kv = n_kv, and n_ctx (up to 32 ranges, blocks past the
// ranges of n_kv exiting, the merge exiting with one range). n_kv values
// cover one split, two, many, and the 32-split cap.
TEST_CASE("attention_decode (split-K, n_kv on the device) matches cpu::attention_row") {
  const AttnCase cases[] = {
      {32, 4, 128, 128, 0, 1},      // n_kv = 1
      {32, 4, 128, 128, 0, 64},     // one split, full
      {32, 4, 128, 128, 0, 200},    // four splits of 64 keys, the last short
      {32, 4, 128, 128, 0, 2048},   // 32 splits of 64, full
      {32, 4, 128, 128, 0, 2100},   // 33 splits of 64, the last short: two ranges on lane 0
      {32, 4, 128, 128, 0, 8192},   // 128 splits of 64, full: four ranges on every lane
      {32, 4, 128, 128, 0, 8200},   // 65 splits of 128, the last short
      {16, 1, 128, 128, 0, 5000},   // group of 16, 79 splits of 64, the last 8 keys
      {8, 8, 64, 64, 0, 20000},     // no GQA, 105 splits of 192 keys, the last 32
      {16, 4, 128, 128, 0, 3000},   // group of 4
      {16, 8, 128, 128, 0, 1500},   // group of 2
      {32, 4, 64, 64, 0, 999},      // head dim 64, group of 8
      {6, 2, 40, 24, 0, 777},       // odd sizes (the per-head F32 kernel for F16 too)
  };
  // F16 caches of head dim 64 or 128 take attention_decode.cu's kernel, the rest attention_impl.cuh's.
  for (KvType type : {KvType::F16, KvType::Int8}) {
    for (const AttnCase& c : cases) {
      DYNAMIC_SECTION(type_name(type) << " " << describe(c)) {
        test::Rng rng = test::rng_for(500 + c.T + c.dk + static_cast<int>(type));
        const int32_t n_kv = c.T;
        const int n_ctx = n_kv + 8200;  // max_kv = n_ctx: the grid's full 128 ranges
        CaseCache cache(type, n_ctx, c, n_kv, rng);

        const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
        const std::vector<float> q = rng.vec(static_cast<size_t>(c.n_head) * c.dk, 3.0f);
        const std::vector<float> want = reference(q, cache.filled.cpu, c, 1, n_kv, scale);

        cuda::DeviceBuffer dq = test::to_device(q);
        cuda::DeviceBuffer d_n_kv = test::to_device(std::vector<int32_t>{n_kv});
        cuda::DeviceBuffer out = test::poisoned(want.size() * sizeof(float));
        cuda::DeviceBuffer ws = test::poisoned(cuda::attention_decode_workspace_bytes(c.n_head, c.dv));
        cuda::attention_decode_workspace_init(ws.data(), c.n_head, test_stream().get());
        auto run = [&](int32_t max_kv) {
          cuda::attention_decode(dq.as<float>(), cache.k.view, cache.v.view, c.n_head, d_n_kv.as<int32_t>(), max_kv,
                                 scale, out.as<float>(), ws.data(), ws.size(), test_stream().get());
          return test::to_host<float>(out, want.size());
        };
        const std::vector<float> got = run(n_kv);
        CHECK_REPORT(test::mismatches(got.data(), want.data(), got.size(), kAttnTol, where(c)));
        for (int32_t max_kv : {n_kv, n_kv + 1, n_ctx}) {
          INFO("max_kv " << max_kv);
          test::poison(out);
          test::poison(ws);  // the partials: a range not written shows
          cuda::attention_decode_workspace_init(ws.data(), c.n_head, test_stream().get());
          CHECK(test::bit_equal(run(max_kv), got));
          CHECK(test::bit_equal(run(max_kv), got));  // the call left its counters ready for the next
        }
      }
    }
  }
}

// A device n_kv outside [1, max_kv] cannot be refused on the host: every
// output row becomes NaN, with one range in the grid and with several.
TEST_CASE("attention_decode gives NaN rows for a device n_kv outside [1, max_kv]") {
  const int n_head = 8, n_head_kv = 2, d = 64, n_ctx = 1024;
  DevicePlane k(KvType::F16, n_ctx, n_head_kv, d), v(KvType::F16, n_ctx, n_head_kv, d);
  test::Rng rng = test::rng_for(577);
  cuda::DeviceBuffer dq = test::to_device(rng.vec(static_cast<size_t>(n_head) * d));
  cuda::DeviceBuffer ws = test::poisoned(cuda::attention_decode_workspace_bytes(n_head, d));
  cuda::attention_decode_workspace_init(ws.data(), n_head, test_stream().get());
  cuda::DeviceBuffer out(test::kDevice, static_cast<size_t>(n_head) * d * sizeof(float));
  for (int32_t max_kv : {200, n_ctx}) {
    for (int32_t bad : {0, -3, max_kv + 1}) {
      INFO("max_kv " << max_kv << ", n_kv " << bad);
      cuda::DeviceBuffer d_n_kv = test::to_device(std::vector<int32_t>{bad});
      cuda::memset_async(out.data(), 0, out.size(), test_stream().get());
      cuda::attention_decode(dq.as<float>(), k.view, v.view, n_head, d_n_kv.as<int32_t>(), max_kv, 0.125f,
                             out.as<float>(), ws.data(), ws.size(), test_stream().get());
      const std::vector<float> got = test::to_host<float>(out, static_cast<size_t>(n_head) * d);
      CHECK(std::all_of(got.begin(), got.end(), [](float x) { return std::isnan(x); }));
    }
  }
}

TEST_CASE("attention launchers reject bad arguments") {
  DevicePlane k(KvType::F16, 64, 2, 128), v(KvType::F16, 64, 2, 128);
  float* none = nullptr;
  const cudaStream_t s = test_stream().get();
  CHECK(test::status_of([&] { cuda::attention_prompt(none, k.view, v.view, 8, 10, 60, 1.0f, none, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // pos0 + T > n_ctx
  CHECK(test::status_of([&] { cuda::attention_prompt(none, k.view, v.view, 7, 1, 0, 1.0f, none, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // 7 heads over 2 kv heads
  CHECK(test::status_of([&] { cuda::attention_prompt_f16(none, k.view, v.view, 8, 10, 60, 1.0f, none, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // pos0 + T > n_ctx
  CHECK(test::status_of([&] { cuda::attention_prompt_f16(none, k.view, v.view, 8, 1, 0, 1.0f, none, nullptr); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // the legacy default stream
  const cuda::DeviceBuffer n_kv = test::to_device(std::vector<int32_t>{1});
  const int32_t* d_n_kv = n_kv.as<int32_t>();
  CHECK(test::status_of([&] { cuda::attention_decode(none, k.view, v.view, 8, nullptr, 1, 1.0f, none, none, 0, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // no device n_kv
  CHECK(test::status_of([&] { cuda::attention_decode(none, k.view, v.view, 8, d_n_kv, 0, 1.0f, none, none, 0, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // max_kv = 0
  CHECK(test::status_of([&] { cuda::attention_decode(none, k.view, v.view, 8, d_n_kv, 65, 1.0f, none, none, 0, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // max_kv > n_ctx
  DevicePlane big_k(KvType::F16, 4096, 1, 64), big_v(KvType::F16, 4096, 1, 64);
  CHECK(test::status_of([&] {
          cuda::attention_decode(none, big_k.view, big_v.view, 1, d_n_kv, 4096, 1.0f, none, none, 16, s);
        }) == STRATA_ERR_INVALID_ARGUMENT);  // the grid has splits: workspace too small
  DevicePlane wide_k(KvType::F16, 4, 1, 512), wide_v(KvType::F16, 4, 1, 512);
  CHECK(test::status_of([&] { cuda::attention_prompt(none, wide_k.view, wide_v.view, 1, 1, 0, 1.0f, none, s); }) ==
        STRATA_ERR_UNSUPPORTED);  // head_dim 512
  cuda::KvDeviceView no_scales = k.view;
  no_scales.type = KvType::Int8;
  no_scales.scales = nullptr;
  CHECK(test::status_of([&] { cuda::kv_write(none, nullptr, 1, no_scales, s); }) == STRATA_ERR_INVALID_ARGUMENT);
}
