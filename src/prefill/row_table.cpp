// RowTable::build: validation, a counting sort of rows by expert, and the active order.
#include "prefill/row_table.h"

#include <algorithm>

#include "core/base/error.h"

namespace strata::prefill {

using core::fail;

RowTable RowTable::build(std::span<const int32_t> topk_ids, int n_tokens, int k, int n_expert) {
  if (n_tokens < 0 || k < 1 || n_expert < 1 || k > n_expert) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "row table: invalid shape n_tokens={} k={} n_expert={}", n_tokens, k,
         n_expert);
  }
  const int64_t n_rows = static_cast<int64_t>(n_tokens) * k;
  if (n_rows > INT32_MAX) fail(STRATA_ERR_INVALID_ARGUMENT, "row table: {} rows do not fit int32", n_rows);
  if (static_cast<int64_t>(topk_ids.size()) != n_rows) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "row table: {} ids given for n_tokens={} x k={}", topk_ids.size(),
         n_tokens, k);
  }

  RowTable t;
  t.n_tokens = n_tokens;
  t.k = k;
  t.n_expert = n_expert;
  t.offsets.assign(n_expert + 1, 0);

  // Validate and count. last_token[e] catches an expert named twice by one token.
  std::vector<int32_t> last_token(n_expert, -1);
  for (int32_t tok = 0; tok < n_tokens; ++tok) {
    for (int32_t slot = 0; slot < k; ++slot) {
      const int32_t e = topk_ids[static_cast<size_t>(tok) * k + slot];
      if (e < 0 || e >= n_expert) {
        fail(STRATA_ERR_INVALID_ARGUMENT, "row table: token {} slot {} routes to expert {}, outside [0, {})", tok,
             slot, e, n_expert);
      }
      if (last_token[e] == tok) {
        fail(STRATA_ERR_INVALID_ARGUMENT, "row table: token {} routes to expert {} twice", tok, e);
      }
      last_token[e] = tok;
      t.offsets[e + 1] += 1;
    }
  }
  for (int e = 0; e < n_expert; ++e) t.offsets[e + 1] += t.offsets[e];

  // Scatter rows in ascending row order, which keeps each group ascending.
  t.entries.resize(n_rows);
  std::vector<int32_t> fill(t.offsets.begin(), t.offsets.end() - 1);
  for (int32_t row = 0; row < n_rows; ++row) t.entries[fill[topk_ids[row]]++] = row;

  for (int e = 0; e < n_expert; ++e) {
    if (t.rows(e) > 0) t.active.push_back(e);
  }
  // active starts in id order, so a stable sort on size alone breaks ties by lower id.
  std::stable_sort(t.active.begin(), t.active.end(), [&](int32_t a, int32_t b) { return t.rows(a) > t.rows(b); });
  return t;
}

}  // namespace strata::prefill
