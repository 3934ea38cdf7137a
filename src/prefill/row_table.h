// RowTable: a prompt chunk's (token, slot) rows grouped by routed expert (CSR), the plan expert GEMMs execute.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata::prefill {

// The grouping plan for one layer of one chunk. Row r = token * k + slot names
// the slot-th expert chosen for token `token`. The CPU reference MoE, the GPU
// grouped GEMMs and the expert-streaming ring all walk this same table, so its
// orders are part of the contract:
//  - entries of expert e are entries[offsets[e] .. offsets[e+1]), ascending
//    row index (so ascending token) within the group;
//  - active lists every expert with at least one row, biggest group first,
//    equal sizes by lower expert id (the ring streams in this order).
struct RowTable {
  int32_t n_tokens = 0;
  int32_t k = 0;
  int32_t n_expert = 0;
  std::vector<int32_t> offsets;  // [n_expert + 1], CSR bounds of each expert's group
  std::vector<int32_t> entries;  // [n_tokens * k], token * k + slot, grouped by expert
  std::vector<int32_t> active;   // experts with >= 1 row, biggest group first, ties by lower id

  // Builds the table from the router's choices topk_ids[token * k + slot].
  // Throws Error(STRATA_ERR_INVALID_ARGUMENT) when n_tokens < 0, k < 1,
  // n_expert < 1, k > n_expert, the span size is not n_tokens * k, an id is
  // outside [0, n_expert), or one token names the same expert twice (a router
  // never does; a table with it would double-count that expert).
  static RowTable build(std::span<const int32_t> topk_ids, int n_tokens, int k, int n_expert);

  // Number of rows routed to expert e (0 for an inactive expert).
  int32_t rows(int e) const { return offsets[e + 1] - offsets[e]; }
  // The rows of expert e, ascending.
  std::span<const int32_t> group(int e) const {
    return std::span<const int32_t>(entries).subspan(offsets[e], rows(e));
  }
};

}  // namespace strata::prefill
