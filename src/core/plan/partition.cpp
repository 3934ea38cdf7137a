// plan_partition: split-point dynamic programs for the auto layer split, explicit counts, and their errors.
#include "core/plan/partition.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "core/base/bytes.h"
#include "core/base/error.h"
#include "core/base/fields.h"

namespace strata::core {

LayerSplit parse_layer_split(std::string_view text) {
  const std::string_view all = trim_blanks(text);
  LayerSplit split;
  if (all.empty()) return split;
  if (all == "auto") {
    split.kind = LayerSplit::Kind::Auto;
    return split;
  }
  split.kind = LayerSplit::Kind::Counts;
  for (std::string_view field : split_fields(all)) {
    field = trim_blanks(field);
    int64_t n = 0;
    bool ok = !field.empty();
    for (char c : field) {
      if (!std::isdigit(static_cast<unsigned char>(c)))
        ok = false;
      else if ((n = n * 10 + (c - '0')) > INT32_MAX)
        ok = false;
      if (!ok) break;
    }
    if (!ok || n == 0) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "layer split '{}': '{}' is not a layer count (use auto or positive counts such as 24,24)", text, field);
    }
    split.counts.push_back(static_cast<int32_t>(n));
  }
  return split;
}

int32_t PartitionPlan::stage_of_layer(int32_t layer) const {
  for (int32_t s = 0; s < n_stage(); ++s) {
    if (layer >= stages[s].first_layer && layer < stages[s].end_layer()) return s;
  }
  fail(STRATA_ERR_INVALID_ARGUMENT, "partition: layer {} is in no stage", layer);
}

int32_t helper_stage(int32_t stage, int32_t n_stage) {
  if (n_stage < 1 || stage < 0 || stage >= n_stage) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "helper_stage: stage {} of {}", stage, n_stage);
  }
  return n_stage == 1 ? -1 : (stage + 1) % n_stage;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Prefix sums over layers, and the stage figures of any range.
struct Layers {
  const PartitionInput& in;
  int32_t n_stage;
  std::vector<uint64_t> bytes{0}, experts{0};
  std::vector<double> compute{0};

  Layers(const PartitionInput& input, int32_t stages) : in(input), n_stage(stages) {
    const size_t n = in.layer_bytes.size();
    for (size_t l = 0; l < n; ++l) {
      bytes.push_back(add_bytes(bytes.back(), in.layer_bytes[l]));
      experts.push_back(add_bytes(experts.back(), in.layer_expert_bytes.empty() ? 0 : in.layer_expert_bytes[l]));
      compute.push_back(compute.back() + (in.layer_compute.empty() ? 0.0 : in.layer_compute[l]));
    }
  }

  // Stage s (on device s) holding layers [a, b).
  StagePlan stage(int32_t s, int32_t a, int32_t b) const {
    const StageDevice& d = in.devices[s];
    StagePlan p;
    p.device = s;
    p.first_layer = a;
    p.n_layers = b - a;
    p.has_embd = s == 0;
    p.has_head = s == n_stage - 1;
    p.fixed_bytes = add_bytes(p.has_embd ? in.embd_bytes : 0, p.has_head ? in.head_bytes : 0);
    p.layer_bytes = bytes[b] - bytes[a];
    p.expert_bytes = experts[b] - experts[a];
    p.reserve_bytes = d.reserve_bytes;
    p.budget = d.budget;
    const uint64_t need = p.needed_bytes();
    p.resident_room = d.budget > need ? d.budget - need : 0;
    p.streamed_bytes = p.expert_bytes > p.resident_room ? p.expert_bytes - p.resident_room : 0;
    p.compute_s = (compute[b] - compute[a]) / d.speed;
    p.stream_s = static_cast<double>(p.streamed_bytes) / (d.link_GBps * 1e9);
    p.time_s = p.compute_s + p.stream_s;
    return p;
  }
};

bool fits(const StagePlan& p) { return p.needed_bytes() <= p.budget; }

// Best split of n_layer layers into n_stage non-empty contiguous ranges:
// minimizes the fold (max or sum) of value(s, a, b) over the stages; +inf
// marks a range that is not allowed. Returns the first layer of every stage
// and its end, or an empty vector when no split has a finite value.
std::vector<int32_t> best_split(int32_t n_stage, int32_t n_layer, bool use_max,
                                const std::function<double(int32_t, int32_t, int32_t)>& value) {
  // best[s][b]: best fold of stages 0..s when stage s ends at layer b.
  std::vector<std::vector<double>> best(n_stage, std::vector<double>(n_layer + 1, kInf));
  std::vector<std::vector<int32_t>> from(n_stage, std::vector<int32_t>(n_layer + 1, -1));
  for (int32_t s = 0; s < n_stage; ++s) {
    // Stage s ends somewhere leaving a layer for each later stage.
    for (int32_t b = s + 1; b <= n_layer - (n_stage - 1 - s); ++b) {
      for (int32_t a = s; a < b; ++a) {
        if (s == 0 && a != 0) break;
        const double prev = s == 0 ? (use_max ? -kInf : 0.0) : best[s - 1][a];
        if (prev == kInf) continue;
        const double v = value(s, a, b);
        if (v == kInf) continue;
        const double total = use_max ? std::max(prev, v) : prev + v;
        if (total < best[s][b]) {
          best[s][b] = total;
          from[s][b] = a;
        }
      }
    }
  }
  if (best[n_stage - 1][n_layer] == kInf) return {};
  std::vector<int32_t> bounds(n_stage + 1);
  bounds[n_stage] = n_layer;
  for (int32_t s = n_stage - 1; s >= 0; --s) bounds[s] = from[s][bounds[s + 1]];
  return bounds;
}

PartitionPlan make_plan(const Layers& layers, const std::vector<int32_t>& bounds) {
  PartitionPlan plan;
  for (int32_t s = 0; s + 1 < static_cast<int32_t>(bounds.size()); ++s) {
    plan.stages.push_back(layers.stage(s, bounds[s], bounds[s + 1]));
    plan.max_time_s = std::max(plan.max_time_s, plan.stages.back().time_s);
  }
  return plan;
}

std::string describe_counts(const std::vector<int32_t>& bounds) {
  std::string s;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) s += (i ? "," : "") + std::to_string(bounds[i + 1] - bounds[i]);
  return s;
}

// Throws OUT_OF_MEMORY for the stage of the plan short by the most.
void check_fit(const PartitionPlan& plan, const std::string& what) {
  const StagePlan* worst = nullptr;
  for (const StagePlan& p : plan.stages) {
    if (!fits(p) && (!worst || p.needed_bytes() - p.budget > worst->needed_bytes() - worst->budget)) worst = &p;
  }
  if (!worst) return;
  fail(STRATA_ERR_OUT_OF_MEMORY,
       "{}: stage {} (device {}, layers {}-{}) needs {} (embedding/head {} + layers {} + prompt buffers and ring {}) "
       "but its budget is {}: {} short",
       what, worst->device, worst->device, worst->first_layer, worst->end_layer() - 1,
       format_bytes(worst->needed_bytes()), format_bytes(worst->fixed_bytes), format_bytes(worst->layer_bytes),
       format_bytes(worst->reserve_bytes), format_bytes(worst->budget), format_bytes(worst->needed_bytes() - worst->budget));
}

void check_input(const PartitionInput& in) {
  const size_t n = in.layer_bytes.size();
  if (n == 0) fail(STRATA_ERR_INVALID_ARGUMENT, "partition: no layers");
  if (n > INT32_MAX) fail(STRATA_ERR_INVALID_ARGUMENT, "partition: {} layers", n);
  if (in.devices.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "partition: no devices");
  if (!in.layer_expert_bytes.empty() && in.layer_expert_bytes.size() != n) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "partition: {} layers of expert bytes for {} layers",
         in.layer_expert_bytes.size(), n);
  }
  if (!in.layer_compute.empty() && in.layer_compute.size() != n) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "partition: {} layers of compute for {} layers", in.layer_compute.size(), n);
  }
  for (double c : in.layer_compute) {
    if (!(c >= 0 && c < kInf)) fail(STRATA_ERR_INVALID_ARGUMENT, "partition: layer compute {}", c);
  }
  for (size_t d = 0; d < in.devices.size(); ++d) {
    const StageDevice& dev = in.devices[d];
    if (!(dev.speed > 0 && dev.speed < kInf) || !(dev.link_GBps > 0 && dev.link_GBps < kInf)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "partition: device {} has speed {} and link {} GB/s", d, dev.speed,
           dev.link_GBps);
    }
  }
}

}  // namespace

PartitionPlan plan_partition(const PartitionInput& in) {
  check_input(in);
  const int32_t n_layer = static_cast<int32_t>(in.layer_bytes.size());
  const int32_t n_dev = static_cast<int32_t>(in.devices.size());

  if (in.split.kind == LayerSplit::Kind::Single) {
    const PartitionPlan plan = make_plan(Layers(in, 1), {0, n_layer});
    check_fit(plan, "single stage");
    return plan;
  }

  if (in.split.kind == LayerSplit::Kind::Counts) {
    const auto& c = in.split.counts;
    if (static_cast<int32_t>(c.size()) != n_dev) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "layer split: {} counts for {} devices", c.size(), n_dev);
    }
    std::vector<int32_t> bounds{0};
    int64_t sum = 0;
    for (size_t s = 0; s < c.size(); ++s) {
      if (c[s] <= 0) fail(STRATA_ERR_INVALID_ARGUMENT, "layer split: stage {} has {} layers", s, c[s]);
      sum += c[s];
      bounds.push_back(static_cast<int32_t>(std::min<int64_t>(sum, INT32_MAX)));
    }
    if (sum != n_layer) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "layer split {}: the counts sum to {}, the model has {} layers",
           describe_counts(bounds), sum, n_layer);
    }
    const PartitionPlan plan = make_plan(Layers(in, n_dev), bounds);
    check_fit(plan, "layer split " + describe_counts(bounds));
    return plan;
  }

  if (n_dev > n_layer) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "layer split auto: {} devices for {} layers (each stage needs a layer)", n_dev,
         n_layer);
  }
  const Layers layers(in, n_dev);
  auto time_of = [&](int32_t s, int32_t a, int32_t b) {
    const StagePlan p = layers.stage(s, a, b);
    return fits(p) ? p.time_s : kInf;
  };
  const std::vector<int32_t> fast = best_split(n_dev, n_layer, true, time_of);
  if (fast.empty()) {
    // Nothing fits: report the split that comes closest (the smallest largest shortfall).
    const std::vector<int32_t> closest = best_split(n_dev, n_layer, true, [&](int32_t s, int32_t a, int32_t b) {
      const StagePlan p = layers.stage(s, a, b);
      return fits(p) ? 0.0 : static_cast<double>(p.needed_bytes() - p.budget);
    });
    check_fit(make_plan(layers, closest),
              "layer split auto: no split fits (closest: " + describe_counts(closest) + ")");
    fail(STRATA_ERR_INTERNAL, "layer split auto: no split fits, yet the closest one does");
  }
  // Second pass: within the best largest time, spread bytes in proportion to
  // budgets. Minimizing sum of budget * fill^2 (fill = wanted / budget) with
  // the total fixed puts every fill at the same value; a plain sum of fill^2
  // would give wanted in proportion to budget squared.
  const double limit = make_plan(layers, fast).max_time_s;
  const double slack = limit * 1e-9 + 1e-15;
  const std::vector<int32_t> even = best_split(n_dev, n_layer, false, [&](int32_t s, int32_t a, int32_t b) {
    const StagePlan p = layers.stage(s, a, b);
    if (!fits(p) || p.time_s > limit + slack) return kInf;
    const uint64_t wanted = p.needed_bytes() + p.expert_bytes;
    if (p.budget == 0) return wanted == 0 ? 0.0 : 1e300;  // only an empty stage fits a zero budget
    const double fill = static_cast<double>(wanted) / static_cast<double>(p.budget);
    return fill * fill * static_cast<double>(p.budget);
  });
  return make_plan(layers, even.empty() ? fast : even);
}

}  // namespace strata::core
