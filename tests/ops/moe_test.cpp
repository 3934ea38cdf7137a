// Router top-k, SwiGLU, combine (a peer's share too), residual add, RowTable gather/scatter vs the CPU reference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "cpu/ops.h"
#include "cpu/peer_ops.h"
#include "cuda/moe/moe.cuh"
#include "ops/ops_util.h"
#include "prefill/row_table.h"

using namespace strata;
using core::RouterMode;
using strata::test::Mem;
using strata::test::test_stream;

namespace {

const char* mode_name(RouterMode m) {
  switch (m) {
    case RouterMode::SoftmaxTopkNorm: return "softmax-topk-norm";
    case RouterMode::SoftmaxTopk: return "softmax-topk";
    case RouterMode::TopkSoftmax: return "topk-softmax";
  }
  return "?";
}

struct RouterCase {
  int T, n_expert, k;
  bool ties;  // logits drawn from 4 values, so ranks are decided by the id rule
};

// Well separated logits (distinct multiples of 0.05 in random order), so
// that an ulp of expf cannot reorder them; or, with ties, only 4 distinct values.
std::vector<float> router_logits(const RouterCase& c, test::Rng& rng) {
  std::vector<float> x(static_cast<size_t>(c.T) * c.n_expert);
  std::vector<int> perm(c.n_expert);
  for (int t = 0; t < c.T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng.gen);
    for (int e = 0; e < c.n_expert; ++e) {
      x[static_cast<size_t>(t) * c.n_expert + e] =
          c.ties ? 0.25f * static_cast<float>(rng.int_in(-2, 1)) : 0.05f * static_cast<float>(perm[e] - c.n_expert / 2);
    }
  }
  return x;
}

// The peer's rows of a chunk: none, all, or random flags (any nonzero byte).
enum class Split { None, All, Random };
const char* split_name(Split s) { return s == Split::None ? "none" : s == Split::All ? "all" : "random"; }
std::vector<uint8_t> peer_flags(test::Rng& rng, size_t n_rows, Split split) {
  if (split == Split::Random) return rng.flags(n_rows);
  return std::vector<uint8_t>(n_rows, split == Split::All ? 1 : 0);
}

// y as one card leaves it: the other card's rows (peer flag != `mine`) never
// written, here NaN, so a kernel that reads them fails.
std::vector<float> rows_of(const std::vector<float>& y, const std::vector<uint8_t>& peer, bool mine, int64_t n) {
  std::vector<float> v = y;
  for (size_t r = 0; r < peer.size(); ++r)
    if ((peer[r] != 0) != mine) std::fill_n(v.begin() + r * n, n, NAN);
  return v;
}

template <typename T>
std::vector<T> all_ff(size_t n) {
  std::vector<T> v(n);
  std::memset(v.data(), 0xff, n * sizeof(T));
  return v;
}

}  // namespace

// Tolerance: ids exactly equal (including every tie, decided by lower id);
// weights 2e-6 relative (device expf may differ from the host's by an ulp).
TEST_CASE("route_topk matches cpu::route_topk, tie rules included") {
  const RouterCase cases[] = {
      {33, 128, 8, false},    // qwen3-30b-a3b
      {33, 128, 8, true},     // ties everywhere
      {5, 6, 6, false},       // k = n_expert
      {4, 6, 6, true},
      {7, 2048, 16, false},   // many experts, 4 warps per block
      {3, 2000, 1000, true},  // large k: one warp per block
      {1, 1, 1, false},
  };
  for (RouterMode mode : {RouterMode::SoftmaxTopkNorm, RouterMode::SoftmaxTopk, RouterMode::TopkSoftmax}) {
    for (const RouterCase& c : cases) {
      DYNAMIC_SECTION(mode_name(mode) << " T=" << c.T << " n_expert=" << c.n_expert << " k=" << c.k
                                      << (c.ties ? " ties" : "")) {
        test::Rng rng = test::rng_for(600 + c.n_expert + c.k + c.ties);
        const std::vector<float> logits = router_logits(c, rng);
        std::vector<int32_t> want_ids(static_cast<size_t>(c.T) * c.k);
        std::vector<float> want_w(want_ids.size());
        for (int t = 0; t < c.T; ++t)
          core::cpu::route_topk(&logits[static_cast<size_t>(t) * c.n_expert], c.n_expert, c.k, mode,
                                &want_ids[static_cast<size_t>(t) * c.k], &want_w[static_cast<size_t>(t) * c.k]);

        cuda::DeviceBuffer dl = test::to_device(logits);
        cuda::DeviceBuffer ids = test::poisoned(want_ids.size() * sizeof(int32_t));
        cuda::DeviceBuffer w = test::poisoned(want_w.size() * sizeof(float));
        cuda::route_topk(dl.as<float>(), c.T, c.n_expert, c.k, mode, ids.as<int32_t>(), w.as<float>(),
                         test_stream().get());
        const std::vector<int32_t> got_ids = test::to_host<int32_t>(ids, want_ids.size());
        const std::vector<float> got_w = test::to_host<float>(w, want_w.size());
        size_t first_bad = got_ids.size();
        for (size_t i = 0; i < got_ids.size() && first_bad == got_ids.size(); ++i)
          if (got_ids[i] != want_ids[i]) first_bad = i;
        INFO("seed=" << test::ops_seed() << " first differing id at token " << first_bad / c.k << " slot "
                     << first_bad % c.k << ": got " << (first_bad < got_ids.size() ? got_ids[first_bad] : -1)
                     << " want " << (first_bad < got_ids.size() ? want_ids[first_bad] : -1));
        CHECK(first_bad == got_ids.size());
        CHECK_REPORT(test::mismatches(got_w, want_w, {0.0, 2e-6}));
      }
    }
  }
}

// Tolerance: 1e-6 relative (+1e-7 absolute): same unfused operations, expf may differ by an ulp.
TEST_CASE("swiglu matches cpu::swiglu, also in place") {
  test::Rng rng = test::rng_for(700);
  const int64_t n = 3 * 768 + 7;
  const std::vector<float> gate = rng.vec(n, 6.0f), up = rng.vec(n, 2.0f);
  std::vector<float> want(n);
  core::cpu::swiglu(gate.data(), up.data(), want.data(), n);
  cuda::DeviceBuffer dg = test::to_device(gate), du = test::to_device(up);
  cuda::DeviceBuffer out = test::poisoned(n * sizeof(float));
  cuda::swiglu(dg.as<float>(), du.as<float>(), out.as<float>(), n, test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(out, n), want, {1e-7, 1e-6}));
  cuda::swiglu(dg.as<float>(), du.as<float>(), dg.as<float>(), n, test_stream().get());  // out == gate
  CHECK_REPORT(test::mismatches(test::to_host<float>(dg, n), want, {1e-7, 1e-6}));
}

// Tolerance: bit-exact. Combine and add are the CPU's F32 operations in the
// CPU's order (slot 0..k-1 from 0, then the residual), without FMA.
TEST_CASE("moe_combine sums slots in order and adds the residual") {
  test::Rng rng = test::rng_for(800);
  const int T = 5, k = 8;
  const int64_t n = 2048 + 3;
  const std::vector<float> y = rng.vec(static_cast<size_t>(T) * k * n, 2.0f);
  const std::vector<float> w = rng.vec(static_cast<size_t>(T) * k);
  const std::vector<float> res = rng.vec(static_cast<size_t>(T) * n, 3.0f);
  std::vector<float> sum(static_cast<size_t>(T) * n), with_res(sum.size());
  for (int t = 0; t < T; ++t) {
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0.0f;
      for (int s = 0; s < k; ++s) {
        const float prod = w[t * k + s] * y[(static_cast<size_t>(t) * k + s) * n + i];
        acc += prod;
      }
      sum[t * n + i] = acc;
      with_res[t * n + i] = res[t * n + i] + acc;
    }
  }
  cuda::DeviceBuffer dy = test::to_device(y), dw = test::to_device(w), dres = test::to_device(res);
  cuda::DeviceBuffer out = test::poisoned(sum.size() * sizeof(float));
  cuda::moe_combine(dy.as<float>(), dw.as<float>(), T, k, n, nullptr, out.as<float>(), test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(out, sum.size()), sum, {0.0, 0.0}));
  cuda::moe_combine(dy.as<float>(), dw.as<float>(), T, k, n, dres.as<float>(), dres.as<float>(), test_stream().get());
  CHECK_REPORT(test::mismatches(test::to_host<float>(dres, sum.size()), with_res, {0.0, 0.0}));
}

// Tolerance: bit-exact (copies).
TEST_CASE("gather_rows / scatter_rows follow a RowTable's groups") {
  test::Rng rng = test::rng_for(900);
  const int T = 37, k = 8, n_expert = 64;
  const int64_t n_cols = 300;
  std::vector<int32_t> ids(static_cast<size_t>(T) * k);
  std::vector<int32_t> experts(n_expert);
  for (int t = 0; t < T; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng.gen);
    std::copy_n(experts.begin(), k, ids.begin() + static_cast<size_t>(t) * k);
  }
  const prefill::RowTable table = prefill::RowTable::build(ids, T, k, n_expert);
  const std::vector<float> x = rng.vec(static_cast<size_t>(T) * n_cols);
  cuda::DeviceBuffer dx = test::to_device(x), entries = test::to_device(table.entries);
  cuda::DeviceBuffer gathered = test::poisoned(table.entries.size() * n_cols * sizeof(float));
  cuda::DeviceBuffer scattered = test::poisoned(table.entries.size() * n_cols * sizeof(float));
  for (int32_t e : table.active) {
    const int32_t off = table.offsets[e];
    cuda::gather_rows(dx.as<float>(), n_cols, entries.as<int32_t>() + off, table.rows(e), k,
                      gathered.as<float>() + static_cast<size_t>(off) * n_cols, test_stream().get());
    cuda::scatter_rows(gathered.as<float>() + static_cast<size_t>(off) * n_cols, n_cols, entries.as<int32_t>() + off,
                       table.rows(e), scattered.as<float>(), test_stream().get());
  }
  std::vector<float> want_gathered(table.entries.size() * n_cols), want_scattered(want_gathered.size());
  for (size_t r = 0; r < table.entries.size(); ++r) {
    const int32_t entry = table.entries[r];
    std::copy_n(&x[static_cast<size_t>(entry / k) * n_cols], n_cols, &want_gathered[r * n_cols]);
    std::copy_n(&x[static_cast<size_t>(entry / k) * n_cols], n_cols, &want_scattered[static_cast<size_t>(entry) * n_cols]);
  }
  CHECK_REPORT(test::mismatches(test::to_host<float>(gathered, want_gathered.size()), want_gathered, {0.0, 0.0}));
  CHECK_REPORT(test::mismatches(test::to_host<float>(scattered, want_scattered.size()), want_scattered, {0.0, 0.0}));
}

TEST_CASE("route_topk rejects k outside [1, n_expert]") {
  float* none = nullptr;
  int32_t* no_ids = nullptr;
  CHECK_THROWS_AS(cuda::route_topk(none, 1, 8, 9, RouterMode::SoftmaxTopkNorm, no_ids, none, test_stream().get()),
                  core::Error);
  CHECK_THROWS_AS(cuda::route_topk(none, 1, 8, 0, RouterMode::SoftmaxTopkNorm, no_ids, none, test_stream().get()),
                  core::Error);
}

// Tolerance: bit-exact. The device sums are cpu::peer_sums's unfused F32
// operations in slot order; F16 rows are core::f32_to_fp16 of them. Rows
// outside [t_begin, t_end) keep their poison.
TEST_CASE("moe_peer_sums matches cpu::peer_sums: token ranges, F32 and F16, device and mapped host output") {
  const int T = 9, k = 8;
  // n = 1024: 16-byte stores where out is aligned; 1028 and 1027: value by value.
  for (int64_t n : {int64_t{1024}, int64_t{1028}, int64_t{1027}}) {
    for (Split split : {Split::None, Split::All, Split::Random}) {
      DYNAMIC_SECTION("n=" << n << " peer rows " << split_name(split)) {
        test::Rng rng = test::rng_for(1400 + n + static_cast<uint64_t>(split));
        const std::vector<uint8_t> peer = peer_flags(rng, T * k, split);
        const std::vector<float> y = rows_of(rng.vec(static_cast<size_t>(T) * k * n, 2.0f), peer, true, n);
        const std::vector<float> w = rng.vec(T * k);
        cuda::DeviceBuffer dy = test::to_device(y), dw = test::to_device(w), dp = test::to_device(peer);
        const size_t size = static_cast<size_t>(T) * n;
        for (auto [tb, te] : {std::pair<int64_t, int64_t>{0, T}, {2, 7}, {T - 1, T}, {3, 3}}) {
          std::vector<float> want = all_ff<float>(size);
          core::cpu::peer_sums(y.data(), w.data(), peer.data(), tb, te, k, n, want.data());
          std::vector<uint16_t> want16 = all_ff<uint16_t>(size);
          for (int64_t i = tb * n; i < te * n; ++i) want16[i] = core::f32_to_fp16(want[i]);
          for (Mem mem : {Mem::Device, Mem::Mapped}) {
            for (int64_t off : {0, 1}) {  // one element off the 16-byte grid: scalar stores
              INFO("tokens [" << tb << ", " << te << ") into " << test::mem_name(mem) << " memory + " << off);
              test::AnyBuffer o32((off + size) * sizeof(float), mem), o16((off + size) * sizeof(uint16_t), mem);
              cuda::moe_peer_sums(dy.as<float>(), dw.as<float>(), dp.as<uint8_t>(), tb, te, k, n,
                                  o32.dev<float>() + off, nullptr, test_stream().get());
              cuda::moe_peer_sums(dy.as<float>(), dw.as<float>(), dp.as<uint8_t>(), tb, te, k, n, nullptr,
                                  o16.dev<uint16_t>() + off, test_stream().get());
              const std::vector<float> got = o32.download<float>(off + size);
              const std::vector<uint16_t> got16 = o16.download<uint16_t>(off + size);
              CHECK_REPORT(test::byte_mismatches(got.data() + off, want.data(), size * sizeof(float)));
              CHECK_REPORT(test::byte_mismatches(got16.data() + off, want16.data(), size * sizeof(uint16_t)));
            }
          }
        }
      }
    }
  }
}

// Tolerance: bit-exact, as cpu::combine_with_peer (own slots in order, then
// the sums, then the residual; unfused F32).
TEST_CASE("moe_combine_peer matches cpu::combine_with_peer: with and without sums, in place or not") {
  const int T = 7, k = 8;
  for (int64_t n : {int64_t{1024}, int64_t{1027}}) {
    for (Split split : {Split::None, Split::All, Split::Random}) {
      DYNAMIC_SECTION("n=" << n << " peer rows " << split_name(split)) {
        test::Rng rng = test::rng_for(1500 + n + static_cast<uint64_t>(split));
        const std::vector<uint8_t> peer = peer_flags(rng, T * k, split);
        const std::vector<float> all_rows = rng.vec(static_cast<size_t>(T) * k * n, 2.0f);
        const std::vector<float> y = rows_of(all_rows, peer, false, n), w = rng.vec(T * k);
        const size_t size = static_cast<size_t>(T) * n;
        const std::vector<float> x = rng.vec(size, 3.0f);
        std::vector<float> sums(size);
        core::cpu::peer_sums(all_rows.data(), w.data(), peer.data(), 0, T, k, n, sums.data());
        cuda::DeviceBuffer dy = test::to_device(y), dw = test::to_device(w), dp = test::to_device(peer);
        for (bool with_sums : {false, true}) {
          std::vector<float> want = x;
          core::cpu::combine_with_peer(y.data(), w.data(), peer.data(), T, k, n, with_sums ? sums.data() : nullptr,
                                       want.data());
          for (Mem sums_mem : {Mem::Device, Mem::Mapped}) {
            for (bool in_place : {false, true}) {
              INFO((with_sums ? "sums in " : "no sums ") << (with_sums ? test::mem_name(sums_mem) : "")
                                                         << (in_place ? " in place" : ""));
              test::AnyBuffer dsums(size * sizeof(float), sums_mem);
              dsums.upload(sums);
              cuda::DeviceBuffer res = test::to_device(x);
              cuda::DeviceBuffer out = in_place ? cuda::DeviceBuffer() : test::poisoned(size * sizeof(float));
              float* dout = in_place ? res.as<float>() : out.as<float>();
              cuda::moe_combine_peer(dy.as<float>(), dw.as<float>(), dp.as<uint8_t>(), T, k, n,
                                     with_sums ? dsums.dev<float>() : nullptr, res.as<float>(), dout,
                                     test_stream().get());
              const std::vector<float> got = test::to_host<float>(in_place ? res : out, size);
              CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), size * sizeof(float)));
            }
          }
        }
        if (split == Split::None) {  // no peer: moe_combine's bits
          cuda::DeviceBuffer res = test::to_device(x);
          cuda::moe_combine(dy.as<float>(), dw.as<float>(), T, k, n, res.as<float>(), res.as<float>(),
                            test_stream().get());
          std::vector<float> want = x;
          core::cpu::combine_with_peer(y.data(), w.data(), peer.data(), T, k, n, nullptr, want.data());
          const std::vector<float> got = test::to_host<float>(res, size);
          CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), size * sizeof(float)));
        }
      }
    }
  }
}

TEST_CASE("moe_peer_sums and moe_combine_peer: argument checks") {
  const float* none = nullptr;
  float* out = nullptr;
  uint16_t* out16 = nullptr;
  const uint8_t* rows = nullptr;
  const cudaStream_t s = test_stream().get();
  auto sums = [&](int64_t tb, int64_t te, float* o32, uint16_t* o16) {
    return test::status_of([&] { cuda::moe_peer_sums(none, none, rows, tb, te, 2, 8, o32, o16, s); });
  };
  float f = 0.0f;
  uint16_t h = 0;
  CHECK(sums(0, 1, nullptr, nullptr) == STRATA_ERR_INVALID_ARGUMENT);  // no output
  CHECK(sums(0, 1, &f, &h) == STRATA_ERR_INVALID_ARGUMENT);            // two outputs
  CHECK(sums(2, 1, &f, nullptr) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(sums(-1, 1, nullptr, &h) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(sums(3, 3, &f, nullptr) == STRATA_OK);  // empty range: nothing launched
  CHECK(test::status_of([&] { cuda::moe_peer_sums(none, none, rows, 0, 1, 2, 8, out, out16, nullptr); }) ==
        STRATA_ERR_INVALID_ARGUMENT);
  CHECK(test::status_of([&] { cuda::moe_combine_peer(none, none, rows, 1, 2, 8, none, none, out, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // no peer_row, no residual
  CHECK(test::status_of([&] { cuda::moe_combine_peer(none, none, rows, 1, 0, 8, none, none, out, s); }) ==
        STRATA_ERR_INVALID_ARGUMENT);
}
