// matvec_q / matmul_q: float64 agreement per weight type, matmul rows == matvec bit for bit, thread-count independence.
#include <cmath>
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/runtime/thread_pool.h"
#include "cpu/matmul.h"
#include "test_matrices.h"
#include "test_random.h"

using namespace strata::core;
using namespace strata::core::cpu;
using strata::test::poison;
using strata::test::Rng;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("matvec_q matches float64 on the stored weights and activations, for every weight type") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  ThreadPool pool(3);
  const int64_t n_in = 512, n_out = 37;
  for (GgmlType type : strata::test::kWeightTypes) {
    INFO("type=" << type_traits(type).name);
    const auto w = strata::test::random_matrix(rng, type, n_in, n_out, 0.5f);
    const auto x = rng.vec(n_in, 2.0f);
    std::vector<float> y(n_out);
    poison(y);
    matvec_q(type, w.data(), n_in, n_out, x.data(), y.data(), &pool);
    const auto a = strata::test::activation_values(type, x.data(), n_in);
    for (int64_t r = 0; r < n_out; ++r) {
      const auto wr = strata::test::weight_row(type, w.data(), n_in, r);
      const double ref = strata::test::dot64(wr, a), tol = strata::test::dot_tolerance(type, wr, a);
      INFO("row " << r << ": got " << y[r] << " want " << ref << " tol " << tol);
      CHECK(std::fabs(y[r] - ref) <= tol);
    }
  }
}

TEST_CASE("matmul_q rows equal matvec_q calls bit for bit, for any thread count") {
  Rng rng(strata::test::test_seed());
  INFO("seed=" << rng.seed);
  ThreadPool p1(1), p2(2), p3(3);
  const int64_t n_in = 256, n_out = 19, T = 5;
  for (GgmlType type : strata::test::kWeightTypes) {
    INFO("type=" << type_traits(type).name);
    const auto w = strata::test::random_matrix(rng, type, n_in, n_out, 1.0f);
    const auto X = rng.vec(T * n_in, 3.0f);
    std::vector<float> singles(T * n_out);
    poison(singles);
    for (int64_t t = 0; t < T; ++t) matvec_q(type, w.data(), n_in, n_out, &X[t * n_in], &singles[t * n_out], nullptr);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p1, &p2, &p3}) {
      INFO("threads=" << (pool ? pool->n_threads() : 0));
      std::vector<float> Y(T * n_out);
      poison(Y);
      matmul_q(type, w.data(), n_in, n_out, X.data(), T, Y.data(), pool);
      CHECK(same_bits(Y, singles));
    }
  }
}

TEST_CASE("matmul_q rejects bad shapes") {
  std::vector<uint8_t> w(1 << 16);
  std::vector<float> x(512), y(64);
  CHECK_THROWS_AS(matmul_q(GgmlType::Q4_K, w.data(), 100, 4, x.data(), 1, y.data(), nullptr), Error);  // not /256
  CHECK_THROWS_AS(matmul_q(GgmlType::F32, w.data(), 0, 4, x.data(), 1, y.data(), nullptr), Error);
  CHECK_THROWS_AS(matmul_q(GgmlType::F32, w.data(), 8, 4, x.data(), -1, y.data(), nullptr), Error);
  CHECK_THROWS_AS(matmul_q(GgmlType::I32, w.data(), 8, 4, x.data(), 1, y.data(), nullptr), Error);  // no dot
  // T = 0 writes nothing.
  poison(y);
  matmul_q(GgmlType::F32, w.data(), 8, 4, x.data(), 0, y.data(), nullptr);
  CHECK(std::isnan(y[0]));
}
