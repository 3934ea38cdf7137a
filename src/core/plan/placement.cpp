// plan_placement: the budget claims in order, expert ranking, residency, ring depth and the host arena layout.
#include "core/plan/placement.h"

#include <algorithm>

#include "core/base/bytes.h"
#include "core/base/error.h"

namespace strata::core {

int32_t PlacementPlan::n_resident() const {
  return static_cast<int32_t>(std::count(resident.begin(), resident.end(), uint8_t{1}));
}

std::vector<bool> PlacementPlan::streamed_mask(int layer) const {
  std::vector<bool> mask(n_experts(layer));
  for (int e = 0; e < n_experts(layer); ++e) mask[e] = !is_resident(layer, e);
  return mask;
}

namespace {

void check_input(const PlacementInput& in) {
  if (in.dense_bytes.size() != in.expert_bytes.size()) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "placement: {} layers of dense bytes but {} of expert bytes",
         in.dense_bytes.size(), in.expert_bytes.size());
  }
  if (!in.profile.empty()) {
    if (in.profile.size() != in.expert_bytes.size()) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "placement: profile has {} layers, the model {}", in.profile.size(),
           in.expert_bytes.size());
    }
    for (size_t l = 0; l < in.profile.size(); ++l) {
      if (in.profile[l].size() != in.expert_bytes[l].size()) {
        fail(STRATA_ERR_INVALID_ARGUMENT, "placement: profile of layer {} has {} experts, the model {}", l,
             in.profile[l].size(), in.expert_bytes[l].size());
      }
      for (double c : in.profile[l]) {
        if (!(c >= 0)) fail(STRATA_ERR_INVALID_ARGUMENT, "placement: profile of layer {} has a count {}", l, c);
      }
    }
  }
  for (size_t l = 0; l < in.expert_bytes.size(); ++l) {
    for (size_t e = 0; e < in.expert_bytes[l].size(); ++e) {
      if (in.expert_bytes[l][e] == 0) {
        fail(STRATA_ERR_INVALID_ARGUMENT, "placement: expert {} of layer {} has 0 bytes", e, l);
      }
    }
  }
  if (in.min_slots < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "placement: min_slots {} < 1", in.min_slots);
  if (in.max_slots < 0 || (in.max_slots > 0 && in.max_slots < in.min_slots)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "placement: max_slots {} below min_slots {}", in.max_slots, in.min_slots);
  }
  if (in.ring_slots_wanted < 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "placement: ring_slots_wanted {} < 0", in.ring_slots_wanted);
  }
  if (in.arena_align < 64) fail(STRATA_ERR_INVALID_ARGUMENT, "placement: arena_align {} < 64", in.arena_align);
  align_up(0, in.arena_align);  // throws for a non-power of two
  align_up(0, in.slot_align);
}

// Uniform order: round r takes expert r of every layer that has one, so a
// prefix of any length gives each layer ceil or floor of its fair share.
std::vector<ExpertRef> uniform_order(const std::vector<std::vector<uint64_t>>& experts) {
  size_t rounds = 0;
  for (const auto& layer : experts) rounds = std::max(rounds, layer.size());
  std::vector<ExpertRef> order;
  for (size_t r = 0; r < rounds; ++r) {
    for (size_t l = 0; l < experts.size(); ++l) {
      if (r < experts[l].size()) order.push_back({static_cast<int32_t>(l), static_cast<int32_t>(r)});
    }
  }
  return order;
}

}  // namespace

PlacementPlan plan_placement(const PlacementInput& in) {
  check_input(in);
  PlacementPlan p;
  p.n_layer = static_cast<int32_t>(in.expert_bytes.size());
  p.layer_base.assign(p.n_layer + 1, 0);
  uint64_t max_blob = 0;
  size_t max_per_layer = 0;
  for (int l = 0; l < p.n_layer; ++l) {
    const auto& layer = in.expert_bytes[l];
    p.layer_base[l + 1] = p.layer_base[l] + static_cast<int32_t>(layer.size());
    max_per_layer = std::max(max_per_layer, layer.size());
    for (uint64_t b : layer) max_blob = std::max(max_blob, b);
  }
  const int32_t n_total = p.layer_base.back();
  auto blob = [&](const ExpertRef& x) { return in.expert_bytes[x.layer][x.expert]; };

  if (in.slot_bytes != 0 && in.slot_bytes < max_blob) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "placement: slot_bytes {} below the largest expert blob {}", in.slot_bytes,
         max_blob);
  }
  p.slot_bytes = align_up(std::max(in.slot_bytes, max_blob), in.slot_align);

  p.fixed_bytes = in.fixed_bytes;
  for (uint64_t b : in.dense_bytes) p.dense_bytes = add_bytes(p.dense_bytes, b);
  p.kv_bytes = in.kv_bytes;
  p.prompt_bytes = in.prompt_bytes;
  p.budget = in.budget;
  const uint64_t base = add_bytes(add_bytes(p.fixed_bytes, p.dense_bytes), add_bytes(p.kv_bytes, p.prompt_bytes));

  // Rank: a stable sort of the uniform order by count keeps ties evenly spread.
  p.rank = uniform_order(in.expert_bytes);
  if (!in.profile.empty()) {
    std::stable_sort(p.rank.begin(), p.rank.end(), [&](const ExpertRef& a, const ExpertRef& b) {
      return in.profile[a.layer][a.expert] > in.profile[b.layer][b.expert];
    });
  }

  p.resident.assign(n_total, 0);
  p.resident_offset.assign(n_total, UINT64_MAX);
  p.arena_offset.assign(n_total, UINT64_MAX);
  auto make_resident = [&](const ExpertRef& x) {
    p.resident[p.index(x.layer, x.expert)] = 1;
    p.resident_offset[p.index(x.layer, x.expert)] = p.resident_bytes;
    p.resident_bytes += align_up(blob(x), in.slot_align);
  };

  uint64_t all_experts = 0;
  for (const ExpertRef& x : p.rank) all_experts = add_bytes(all_experts, align_up(blob(x), in.slot_align));

  if (base <= in.budget && all_experts <= in.budget - base) {
    // Everything fits: no ring, no arena unless asked for.
    for (const ExpertRef& x : p.rank) make_resident(x);
  } else {
    // No ring for a device without routed experts (base alone did not fit).
    const int32_t min_slots = n_total > 0 ? in.min_slots : 0;
    const uint64_t min_ring = mul_bytes(p.slot_bytes, static_cast<uint64_t>(min_slots));
    const uint64_t need = add_bytes(base, min_ring);
    if (need > in.budget) {
      fail(STRATA_ERR_OUT_OF_MEMORY,
           "placement: the device needs {} but its budget is {}: {} short (fixed {} + dense {} + KV {} + prompt "
           "buffers {} + ring {} x {})",
           format_bytes(need), format_bytes(in.budget), format_bytes(need - in.budget), format_bytes(p.fixed_bytes),
           format_bytes(p.dense_bytes), format_bytes(p.kv_bytes), format_bytes(p.prompt_bytes), min_slots,
           format_bytes(p.slot_bytes));
    }
    const int32_t cap =
        in.max_slots > 0 ? in.max_slots : std::max(in.min_slots, static_cast<int32_t>(2 * max_per_layer));
    const int32_t wanted = std::clamp(std::max(in.ring_slots_wanted, in.min_slots), in.min_slots, cap);
    const uint64_t extra_fit = (in.budget - need) / p.slot_bytes;
    p.ring_slots = in.min_slots + static_cast<int32_t>(std::min<uint64_t>(extra_fit, wanted - in.min_slots));

    // Residents in rank order, first fit. What is left afterwards is smaller
    // than every streamed blob, so smaller than a slot: the ring's depth is
    // settled by the reservation above. The ring is never deeper than what
    // streams either: n_streamed < ring_slots would mean all experts fit in
    // the ring's bytes plus the residents', i.e. in the budget, handled above.
    uint64_t free = in.budget - need - static_cast<uint64_t>(p.ring_slots - in.min_slots) * p.slot_bytes;
    for (const ExpertRef& x : p.rank) {
      const uint64_t a = align_up(blob(x), in.slot_align);
      if (a <= free) {
        make_resident(x);
        free -= a;
      }
    }
  }

  for (int l = 0; l < p.n_layer; ++l) {
    for (int e = 0; e < p.n_experts(l); ++e) {
      const bool res = p.is_resident(l, e);
      if (!res) {
        p.streamed.push_back({l, e});
        p.streamed_bytes += in.expert_bytes[l][e];
      }
      if (!res || in.arena_holds_resident) {
        p.arena_offset[p.index(l, e)] = align_up(p.arena_bytes, in.arena_align);
        p.arena_bytes = p.arena_offset[p.index(l, e)] + in.expert_bytes[l][e];
      }
    }
  }
  p.ring_bytes = static_cast<uint64_t>(p.ring_slots) * p.slot_bytes;
  p.device_bytes = base + p.ring_bytes + p.resident_bytes;
  return p;
}

}  // namespace strata::core
