// build_row_table on the device against prefill::RowTable::build on the host, bit for bit.
#include <algorithm>
#include <numeric>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "cuda/moe/row_table.cuh"
#include "ops/ops_util.h"
#include "prefill/row_table.h"

using namespace strata;
using strata::test::test_stream;

TEST_CASE("build_row_table equals the host RowTable: offsets and entries, every group ascending") {
  struct Case {
    int T, n_expert, k;
  };
  // qwen3-30b-a3b at 1, 37, 2048 and 8192 tokens; tiny; many experts; rows not a multiple of the block's step.
  for (const Case c : {Case{1, 128, 8}, Case{37, 128, 8}, Case{2048, 128, 8}, Case{8192, 128, 8}, Case{300, 8, 2},
                       Case{19, 2048, 16}, Case{5, 6, 6}}) {
    INFO("T " << c.T << ", " << c.n_expert << " experts, k " << c.k);
    test::Rng rng = test::rng_for(static_cast<uint64_t>(c.T * 131 + c.n_expert));
    // Each token picks k distinct experts, skewed so that some groups are big and some empty.
    std::vector<int32_t> ids;
    std::vector<int32_t> perm(c.n_expert);
    for (int t = 0; t < c.T; ++t) {
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.begin() + std::min(c.n_expert, 3 * c.k), rng.gen);
      ids.insert(ids.end(), perm.begin(), perm.begin() + c.k);
    }
    const prefill::RowTable want = prefill::RowTable::build(ids, c.T, c.k, c.n_expert);
    const cuda::DeviceBuffer d_ids = test::to_device(ids);
    cuda::DeviceBuffer offsets = test::poisoned((c.n_expert + 1) * sizeof(int32_t));
    cuda::DeviceBuffer entries = test::poisoned(ids.size() * sizeof(int32_t));
    cuda::build_row_table(d_ids.as<int32_t>(), static_cast<int32_t>(ids.size()), c.n_expert, offsets.as<int32_t>(),
                          entries.as<int32_t>(), test_stream().get());
    test_stream().synchronize();
    CHECK(test::to_host<int32_t>(offsets, c.n_expert + 1) == want.offsets);
    CHECK(test::to_host<int32_t>(entries, ids.size()) == want.entries);
  }
}

TEST_CASE("build_row_table refuses what it cannot build") {
  cuda::DeviceBuffer offsets = test::poisoned(8 * sizeof(int32_t));
  CHECK(test::status_of([&] {
          cuda::build_row_table(nullptr, 0, 0, offsets.as<int32_t>(), nullptr, test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(test::status_of([&] {
          cuda::build_row_table(nullptr, 0, 4096, offsets.as<int32_t>(), nullptr, test_stream().get());
        }) == STRATA_ERR_INVALID_ARGUMENT);
}
