// DecodeHost: the CPU's share of decode's streamed experts.
#include "cuda/decode_host.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace strata::cuda {

DecodeHost::DecodeHost(const core::Model& model, const core::StagePlan& plan, const DeviceWeights& w, int64_t max_rows,
                       double share)
    : model_(model), c_(model.config()), plan_(plan), w_(w), share_(share) {
  const int64_t E = c_.n_embd, k = c_.n_expert_used;
  arena_ptrs_ = core::arena_pointers(*w_.experts, w_.arena.as<uint8_t>());
  pool_ = std::make_unique<core::ThreadPool>(decode_cpu_threads(model.n_threads()), kCpuDecodeSpinUs);
  job_ = std::make_unique<core::Background>(kCpuDecodeSpinUs);
  cpu_rate_ = core::CpuDecodeTracker(w_.cpu);
  h_xn_ = HostBuffer(static_cast<size_t>(max_rows * E) * sizeof(float), cudaHostAllocPortable | cudaHostAllocMapped);
  h_y_ = HostBuffer(static_cast<size_t>(max_rows * k * E) * sizeof(float));
}

DecodeHost::~DecodeHost() { join(); }

core::cpu::MoeWeights DecodeHost::arena_weights(int32_t layer) const {
  const core::LayerWeights& l = model_.weights().layers[plan_.first_layer + layer];
  core::cpu::MoeWeights w = core::cpu::MoeWeights::of(l);
  const size_t base = static_cast<size_t>(layer) * c_.n_expert;
  w.gate.ptrs = &arena_ptrs_.gate[base];
  w.up.ptrs = &arena_ptrs_.up[base];
  w.down.ptrs = &arena_ptrs_.down[base];
  return w;
}

int32_t DecodeHost::cpu_count(int32_t layer, int32_t n) {
  if (share_ > 0) return static_cast<int32_t>(std::lround(share_ * n));
  if (share_ == 0) return 0;
  return cpu_rate_.choose(n, static_cast<double>(w_.experts->layouts[layer].bytes), w_.link_GBps);
}

void DecodeHost::start_rows(int32_t layer, const prefill::RowTable& table, const std::vector<int32_t>& experts) {
  job_->start([this, layer, &table, &experts] {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t E = c_.n_embd;
    const float* xn = h_xn_.as<float>();
    float* y = h_y_.as<float>();
    // Every expert's rows gathered, then all of them in one call (two pool dispatches for the layer).
    std::vector<int64_t> first{0};
    for (int32_t e : experts) first.push_back(first.back() + static_cast<int64_t>(table.group(e).size()));
    std::vector<float> X(static_cast<size_t>(first.back() * E)), Y(X.size());
    std::vector<core::cpu::ExpertRows> jobs;
    for (size_t i = 0; i < experts.size(); ++i) {
      const std::span<const int32_t> rows = table.group(experts[i]);
      for (size_t j = 0; j < rows.size(); ++j)
        std::copy_n(xn + rows[j] / c_.n_expert_used * E, E, &X[(first[i] + j) * E]);
      jobs.push_back({experts[i], &X[first[i] * E], static_cast<int64_t>(rows.size()), &Y[first[i] * E]});
    }
    core::cpu::experts_rows(arena_weights(layer), jobs, pool_.get());
    for (size_t i = 0; i < experts.size(); ++i) {
      const std::span<const int32_t> rows = table.group(experts[i]);
      for (size_t j = 0; j < rows.size(); ++j)
        std::copy_n(&Y[(first[i] + j) * E], E, y + static_cast<int64_t>(rows[j]) * E);
    }
    job_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
}

void DecodeHost::finish_rows(int32_t layer, const prefill::RowTable& table, const std::vector<int32_t>& experts,
                             float* y, cudaStream_t stream) {
  job_->wait();
  if (share_ < 0)
    cpu_rate_.observe(static_cast<int32_t>(experts.size()), static_cast<double>(w_.experts->layouts[layer].bytes),
                      job_s_);
  const int64_t E = c_.n_embd;
  for (int32_t e : experts)
    for (int32_t r : table.group(e))
      copy_async(y + static_cast<int64_t>(r) * E, h_y_.as<float>() + static_cast<int64_t>(r) * E, E * sizeof(float),
                 stream);
}

void DecodeHost::join() noexcept { const core::WaitOnExit finish(job_.get()); }

}  // namespace strata::cuda
