// get_rows against core::dequantize_row for every supported GGUF type.
#include <cmath>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/quant.h"
#include "cuda/gemm/type_paths.h"
#include "cuda/norm/embed.cuh"
#include "ops/ops_util.h"

using namespace strata;
using core::GgmlType;
using strata::test::test_stream;

// Tolerance: bit-exact. The device dequantizers perform the reference's F32
// operations in the same order without fused multiply-adds.
TEST_CASE("get_rows dequantizes table rows exactly as core::dequantize_row") {
  for (GgmlType type : cuda::path_types<cuda::KernelPath::Embed>()) {
    DYNAMIC_SECTION(core::type_traits(type).name) {
      test::Rng rng = test::rng_for(1000 + static_cast<uint64_t>(type));
      const int64_t n_rows = 50, n_cols = 768, T = 17;
      const size_t row_bytes = core::row_size(type, n_cols);
      std::vector<uint8_t> table(row_bytes * n_rows);
      for (int64_t r = 0; r < n_rows; ++r) {
        const std::vector<float> src = rng.vec(n_cols, 2.0f);
        core::quantize_row(type, src.data(), &table[r * row_bytes], n_cols);
      }
      std::vector<int32_t> ids(T);
      for (int32_t& id : ids) id = rng.int_in(0, n_rows - 1);  // repeats allowed
      ids[3] = ids[4];
      std::vector<float> want(static_cast<size_t>(T) * n_cols);
      for (int64_t t = 0; t < T; ++t) core::dequantize_row(type, &table[ids[t] * row_bytes], &want[t * n_cols], n_cols);

      cuda::DeviceBuffer dtable = test::to_device(table), dids = test::to_device(ids);
      cuda::DeviceBuffer out = test::poisoned(want.size() * sizeof(float));
      cuda::get_rows(type, dtable.data(), n_rows, n_cols, dids.as<int32_t>(), T, out.as<float>(), test_stream().get());
      const std::vector<float> got = test::to_host<float>(out, want.size());
      CHECK_REPORT(test::byte_mismatches(got.data(), want.data(), want.size() * sizeof(float)));
    }
  }
}

TEST_CASE("get_rows: an id outside the table gives NaN, and unsupported types and shapes throw") {
  const int64_t n_cols = 32;
  const std::vector<float> table(2 * n_cols, 1.0f);
  const std::vector<int32_t> ids = {1, 2, -1, 0};
  cuda::DeviceBuffer dtable = test::to_device(table), dids = test::to_device(ids);
  cuda::DeviceBuffer out = test::poisoned(ids.size() * n_cols * sizeof(float));
  cuda::get_rows(GgmlType::F32, dtable.data(), 2, n_cols, dids.as<int32_t>(), 4, out.as<float>(), test_stream().get());
  const std::vector<float> got = test::to_host<float>(out, ids.size() * n_cols);
  CHECK(got[0] == 1.0f);
  CHECK(std::isnan(got[n_cols]));  // id 2 of 2 rows
  CHECK(std::isnan(got[2 * n_cols]));  // id -1
  CHECK(std::isnan(got[3 * n_cols - 1]));
  CHECK(got[4 * n_cols - 1] == 1.0f);

  float* none = nullptr;
  CHECK(test::status_of([&] { cuda::get_rows(GgmlType::MXFP4, dtable.data(), 2, n_cols, nullptr, 1, none, test_stream().get()); }) ==
        STRATA_ERR_UNSUPPORTED);
  CHECK(test::status_of([&] { cuda::get_rows(GgmlType::Q4_K, dtable.data(), 2, 32, nullptr, 1, none, test_stream().get()); }) ==
        STRATA_ERR_INVALID_ARGUMENT);  // 32 is not a multiple of 256
}
