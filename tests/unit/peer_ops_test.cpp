// Peer share ops: the combine without a peer is MoeChunk's, a split adds up, token ranges compose, FP16 rounding edges.
#include "cpu/peer_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/fp16.h"
#include "core/runtime/thread_pool.h"
#include "cpu/moe.h"
#include "error_checks.h"
#include "prefill/row_table.h"
#include "test_random.h"

using namespace strata::core;
using namespace strata::core::cpu;
using strata::prefill::RowTable;
using strata::test::poison;
using strata::test::Rng;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One chunk's combine inputs: y [T * k][n], w [T][k].
struct Rows {
  int64_t T;
  int k;
  int64_t n;
  std::vector<float> y, w;
  Rows(Rng& rng, int64_t T_, int k_, int64_t n_)
      : T(T_), k(k_), n(n_), y(rng.vec(static_cast<size_t>(T_ * k_ * n_), 2.0f)), w(rng.vec(T_ * k_)) {}
  size_t out_size() const { return static_cast<size_t>(T * n); }
};

// A peer flag per row: none, all, or random.
enum class Split { None, All, Random };
std::vector<uint8_t> peer_flags(Rng& rng, int64_t n_rows, Split split) {
  if (split == Split::Random) return rng.flags(static_cast<size_t>(n_rows));
  return std::vector<uint8_t>(static_cast<size_t>(n_rows), split == Split::All ? 1 : 0);
}

}  // namespace

TEST_CASE("combine_with_peer without peer rows is x + MoeChunk's combine, bit for bit") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t n_embd = 64, n_ff = 32;
  const int n_expert = 6, k = 3, T = 7;
  const std::vector<float> gate = rng.vec(n_expert * n_ff * n_embd, 0.3f), up = rng.vec(gate.size(), 0.3f),
                           down = rng.vec(gate.size(), 0.3f);
  const MoeWeights mw = MoeWeights::make(GgmlType::F32, gate.data(), GgmlType::F32, up.data(), GgmlType::F32,
                                         down.data(), n_embd, n_ff, n_expert);
  const std::vector<float> X = rng.vec(T * n_embd);
  std::vector<int32_t> ids(T * k);
  for (int r = 0; r < T * k; ++r) ids[r] = (r / k + r % k) % n_expert;  // k distinct experts a token
  const std::vector<float> wts = rng.vec(T * k);
  const RowTable table = RowTable::build(ids, T, k, n_expert);
  std::vector<float> Y(T * n_embd);
  poison(Y);
  moe_forward(mw, X.data(), table, wts.data(), Y.data(), nullptr);

  // The rows MoeChunk combined: expert_ffn of each (token, slot).
  std::vector<float> y(static_cast<size_t>(T) * k * n_embd);
  for (int r = 0; r < T * k; ++r) expert_ffn(mw, ids[r], &X[(r / k) * n_embd], &y[r * n_embd]);
  const std::vector<float> x = rng.vec(T * n_embd, 3.0f);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] + Y[i];

  const std::vector<uint8_t> none(T * k, 0);
  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<float> got = x;
    combine_with_peer(y.data(), wts.data(), none.data(), T, k, n_embd, nullptr, got.data(), p);
    CHECK(same_bits(got, want));
  }
}

// Tolerance of the split against the all-own combine: the two differ only in
// how the slots are grouped, each sum of at most k products off by k * u of
// sum |w y|; 1e-5 of |x| + sum |w y| is far above that.
TEST_CASE("combine_with_peer with the peer's sums: the hand-written order bit for bit, the all-own sum closely") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  ThreadPool pool(2);
  for (Split split : {Split::None, Split::All, Split::Random}) {
    for (auto [T, k, n] : {std::tuple<int64_t, int, int64_t>{9, 8, 67}, {1, 1, 5}, {4, 3, 256}}) {
      INFO("split " << static_cast<int>(split) << " T=" << T << " k=" << k << " n=" << n);
      const Rows c(rng, T, k, n);
      const std::vector<uint8_t> peer = peer_flags(rng, T * k, split), none(T * k, 0);
      const std::vector<float> x = rng.vec(c.out_size(), 3.0f);

      std::vector<float> sums(c.out_size());
      poison(sums);
      peer_sums(c.y.data(), c.w.data(), peer.data(), 0, T, k, n, sums.data(), &pool);
      std::vector<float> got = x;
      combine_with_peer(c.y.data(), c.w.data(), peer.data(), T, k, n, sums.data(), got.data(), &pool);
      std::vector<float> all_own = x;
      combine_with_peer(c.y.data(), c.w.data(), none.data(), T, k, n, nullptr, all_own.data());

      std::vector<float> want(c.out_size()), bound(c.out_size());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t i = 0; i < n; ++i) {
          float own = 0.0f, theirs = 0.0f;
          double mag = std::fabs(x[t * n + i]);
          for (int s = 0; s < k; ++s) {
            const int64_t r = t * k + s;
            const float prod = c.w[r] * c.y[r * n + i];
            mag += std::fabs(prod);
            if (peer[r]) {
              theirs = theirs + prod;
            } else {
              own = own + prod;
            }
          }
          CHECK(std::memcmp(&sums[t * n + i], &theirs, sizeof(float)) == 0);
          want[t * n + i] = x[t * n + i] + (own + theirs);
          bound[t * n + i] = static_cast<float>(1e-5 * mag);
        }
      }
      CHECK(same_bits(got, want));
      size_t far = 0;
      for (size_t i = 0; i < got.size(); ++i) far += !(std::fabs(got[i] - all_own[i]) <= bound[i]);
      CHECK(far == 0);
    }
  }
}

TEST_CASE("peer_sums over token pieces equals one call and writes only its rows") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t T = 11, n = 37;
  const int k = 4;
  const Rows c(rng, T, k, n);
  const std::vector<uint8_t> peer = peer_flags(rng, T * k, Split::Random);
  std::vector<float> whole(c.out_size());
  poison(whole);
  peer_sums(c.y.data(), c.w.data(), peer.data(), 0, T, k, n, whole.data());
  for (float v : whole) REQUIRE(!std::isnan(v));

  ThreadPool pool(3);
  for (auto [a, b] : {std::pair<int64_t, int64_t>{3, 8}, {0, 0}, {0, T}, {T, T}, {5, 6}}) {
    INFO("pieces [0, " << a << "), [" << a << ", " << b << "), [" << b << ", " << T << ")");
    std::vector<float> pieces(c.out_size());
    poison(pieces);
    peer_sums(c.y.data(), c.w.data(), peer.data(), 0, a, k, n, pieces.data(), &pool);
    peer_sums(c.y.data(), c.w.data(), peer.data(), a, b, k, n, pieces.data());
    peer_sums(c.y.data(), c.w.data(), peer.data(), b, T, k, n, pieces.data(), &pool);
    CHECK(same_bits(pieces, whole));

    // [a, b) alone: the other rows keep their poison.
    std::vector<float> middle(c.out_size()), want(c.out_size());
    poison(middle);
    poison(want);
    std::copy(whole.begin() + a * n, whole.begin() + b * n, want.begin() + a * n);
    peer_sums(c.y.data(), c.w.data(), peer.data(), a, b, k, n, middle.data(), &pool);
    CHECK(same_bits(middle, want));
  }
}

TEST_CASE("peer_sums skips the other card's rows: NaN there does not reach the sums") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  const int64_t T = 5, n = 16;
  const int k = 3;
  Rows c(rng, T, k, n);
  const std::vector<uint8_t> peer = peer_flags(rng, T * k, Split::Random);
  // Each card leaves the other's rows unwritten.
  Rows own = c, theirs = c;
  for (int64_t r = 0; r < T * k; ++r) {
    float* row = (peer[r] ? own.y.data() : theirs.y.data()) + r * n;
    std::fill(row, row + n, std::numeric_limits<float>::quiet_NaN());
  }
  std::vector<float> sums(c.out_size()), sums_clean(c.out_size());
  peer_sums(theirs.y.data(), c.w.data(), peer.data(), 0, T, k, n, sums.data());
  peer_sums(c.y.data(), c.w.data(), peer.data(), 0, T, k, n, sums_clean.data());
  CHECK(same_bits(sums, sums_clean));
  const std::vector<float> x = rng.vec(c.out_size());
  std::vector<float> got = x, want = x;
  combine_with_peer(own.y.data(), c.w.data(), peer.data(), T, k, n, sums.data(), got.data());
  combine_with_peer(c.y.data(), c.w.data(), peer.data(), T, k, n, sums.data(), want.data());
  CHECK(same_bits(got, want));
}

TEST_CASE("round_to_f16 leaves what an FP16 transfer leaves, in place too") {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    float in, want;
  };
  const Case cases[] = {
      {0.0f, 0.0f},
      {1.0f, 1.0f},
      {65504.0f, 65504.0f},            // largest half
      {65519.996f, 65504.0f},          // just under the midpoint to inf
      {65520.0f, inf},                 // the midpoint: ties to even is inf
      {-1e6f, -inf},                   // overflow
      {inf, inf},
      {0x1p-14f, 0x1p-14f},            // smallest normal
      {0x1p-24f, 0x1p-24f},            // smallest subnormal
      {1023 * 0x1p-24f, 1023 * 0x1p-24f},
      {0x1p-25f, 0.0f},                // tie between 0 and 2^-24: even is 0
      {3 * 0x1p-25f, 2 * 0x1p-24f},    // tie between 1 and 2 units: even is 2
      {0x1p-26f, 0.0f},                // underflow
      {1.0f + 0x1p-11f, 1.0f},         // tie between 1 and 1 + 2^-10: even is 1
      {1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f},
      {-(1.0f + 0x1.8p-11f), -(1.0f + 0x1p-10f)},  // above the tie: rounds away
      {0.1f, 0x1.998p-4f},
  };
  std::vector<float> in, want;
  for (const Case& c : cases) {
    in.push_back(c.in);
    want.push_back(c.want);
  }
  std::vector<float> out(in.size());
  poison(out);
  round_to_f16(in.data(), out.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("in " << in[i] << " (" << std::hexfloat << in[i] << ") got " << out[i] << " want " << want[i]);
    CHECK(std::memcmp(&out[i], &want[i], sizeof(float)) == 0);
  }
  // In place, and the sign of zero and NaN survive.
  std::vector<float> v = {-0.0f, std::numeric_limits<float>::quiet_NaN(), 65520.0f};
  round_to_f16(v.data(), v.data(), 3);
  CHECK((std::signbit(v[0]) && v[0] == 0.0f));
  CHECK(std::isnan(v[1]));
  CHECK(v[2] == inf);
}

TEST_CASE("peer ops: argument checks") {
  const float f = 0.0f;
  const uint8_t p = 0;
  float out = 0.0f;
  CHECK_FAILS_WITH(peer_sums(&f, &f, &p, 2, 1, 1, 1, &out), STRATA_ERR_INVALID_ARGUMENT, "t_begin");
  CHECK_FAILS_WITH(peer_sums(&f, &f, &p, -1, 1, 1, 1, &out), STRATA_ERR_INVALID_ARGUMENT, "t_begin");
  CHECK_FAILS_WITH(peer_sums(&f, &f, &p, 0, 1, 0, 1, &out), STRATA_ERR_INVALID_ARGUMENT, "k >= 1");
  CHECK_FAILS_WITH(combine_with_peer(&f, &f, &p, 1, 1, 0, nullptr, &out), STRATA_ERR_INVALID_ARGUMENT, "n >= 1");
  CHECK_FAILS_WITH(combine_with_peer(&f, &f, &p, -1, 1, 1, nullptr, &out), STRATA_ERR_INVALID_ARGUMENT, "T >= 0");
}
