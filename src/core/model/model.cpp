// A loaded model: the mapped GGUF file, its configuration, weights, tokenizer and stages. Immutable.
#include "core/model/model.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/plan/stages.h"
#include "core/runtime/backends.h"
#include "core/text/vocab_gguf.h"

namespace strata::core {
namespace {

// The backend of a logical device. Error(DEVICE) when this build has none for its kind.
const BackendEntry& backend_of(const LogicalDevice& d) {
  const BackendEntry* b = find_backend(d.kind);
  if (!b) fail(STRATA_ERR_DEVICE, "model: {} asked for, but this build has no backend for it", d.name());
  return *b;
}

// Free memory of every GPU a logical device names (0 for the others).
std::vector<uint64_t> gpu_free_bytes(const std::vector<LogicalDevice>& devices) {
  int max_ordinal = -1;
  for (const LogicalDevice& d : devices) max_ordinal = std::max(max_ordinal, d.ordinal);
  std::vector<uint64_t> free(static_cast<size_t>(max_ordinal + 1), 0);
  for (const LogicalDevice& d : devices)
    if (!d.is_cpu()) free[d.ordinal] = backend_of(d).memory_bytes(d.ordinal);
  return free;
}

// The peer_device of a model with one stage: another logical device of the
// same kind as the stage's. Error(INVALID_ARGUMENT) for an index outside the
// list, Error(UNSUPPORTED) with a layer split (its idle cards help instead:
// the stage helper) or a device of the other kind.
LogicalDevice check_peer_device(const std::vector<LogicalDevice>& devices, const PartitionPlan& plan, int32_t peer) {
  if (peer >= static_cast<int32_t>(devices.size()))
    fail(STRATA_ERR_INVALID_ARGUMENT, "model: peer_device {} is not in the device list ({} devices)", peer,
         devices.size());
  if (plan.n_stage() > 1)
    fail(STRATA_ERR_UNSUPPORTED, "model: peer_device with a layer split; under a split each stage's idle neighbour "
         "helps it instead (the stage helper)");
  const int32_t primary = plan.stages.front().device;
  if (peer == primary) fail(STRATA_ERR_INVALID_ARGUMENT, "model: peer_device {} is the stage's own device", peer);
  if (devices[peer].is_cpu() != devices[primary].is_cpu())
    fail(STRATA_ERR_UNSUPPORTED, "model: peer_device {} ({}) for a stage on {}: both must be GPUs or both the CPU",
         peer, devices[peer].name(), devices[primary].name());
  return devices[peer];
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& path, const ModelOptions& options) {
  if (options.n_threads < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "model: n_threads must be >= 0, got {}", options.n_threads);
  if (options.adapt_swaps < 0)
    fail(STRATA_ERR_INVALID_ARGUMENT, "model: adapt_swaps must be >= 0, got {}", options.adapt_swaps);
  std::vector<LogicalDevice> devices = parse_devices(options.devices);
  if (options.devices.empty() && devices.front().is_cpu())
    log_info("no CUDA device found; using the CPU backend");
  const LayerSplit split = parse_layer_split(options.layer_split);

  std::shared_ptr<Model> m(new Model(GgufFile::open(path)));
  m->devices_ = std::move(devices);
  m->config_ = read_model_config(m->file_);
  const GgufTensorInfo* embd = m->file_.find_tensor("token_embd.weight");
  if (!embd || embd->n_dims != 2) fail(STRATA_ERR_FORMAT, "model: tensor 'token_embd.weight' is missing or not 2-D");
  m->config_.n_vocab = static_cast<int32_t>(embd->ne[1]);
  m->weights_ = bind_weights(m->file_, m->config_);
  m->tokenizer_ = std::make_unique<Tokenizer>(vocab_from_gguf(m->file_));
  // One row of token_embd and of the output head per token, as llama.cpp requires: a head with more rows would
  // sample ids the tokenizer cannot print (output.weight's rows are checked against token_embd's when bound).
  if (m->tokenizer_->n_vocab() != m->config_.n_vocab)
    fail(STRATA_ERR_FORMAT, "model: the vocabulary has {} tokens but token_embd.weight and the output head have {} "
         "rows", m->tokenizer_->n_vocab(), m->config_.n_vocab);
  m->eot_ = m->tokenizer_->find("<|im_end|>").value_or(m->tokenizer_->eos());
  m->adapt_swaps_ = options.adapt_swaps;
  const size_t n_pairs = static_cast<size_t>(m->config_.n_layer) * m->config_.n_expert;
  if (!options.expert_profile.empty() && options.expert_profile.size() != n_pairs)
    fail(STRATA_ERR_INVALID_ARGUMENT, "model: expert_profile has {} counts, the model {} (layers x experts = {} x {})",
         options.expert_profile.size(), n_pairs, m->config_.n_layer, m->config_.n_expert);
  m->n_threads_ = options.n_threads > 0 ? options.n_threads
                                        : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));

  const std::vector<StageDevice> budgets =
      stage_devices(m->devices_, options.vram_budget, gpu_free_bytes(m->devices_),
                    backend_of({LogicalDevice::Kind::Cpu}).memory_bytes(-1));
  const PartitionPlan plan = plan_stages(m->config_, m->weights_, budgets, split);
  ExpertOptions experts{options.adapt_swaps > 0, options.expert_profile, std::nullopt};
  if (options.peer_device >= 0) experts.peer = check_peer_device(m->devices_, plan, options.peer_device);
  experts.single_stage = plan.stages.size() == 1;
  // CPU stages share the threads: one pool each, together n_threads.
  const auto n_cpu_stages = std::count_if(plan.stages.begin(), plan.stages.end(),
                                          [&](const StagePlan& s) { return m->devices_[s.device].is_cpu(); });
  const int32_t stage_threads = std::max<int32_t>(1, m->n_threads_ / std::max<int32_t>(1, n_cpu_stages));
  // Progress over all stages: bytes of the file, which every stage's weights are part of.
  const uint64_t total = m->file_.bytes().size();
  uint64_t done = 0, stage_done = 0;
  const ProgressFn progress = [&](uint64_t sent, uint64_t) {
    stage_done = sent;
    return !options.progress || options.progress(std::min(total, done + sent), total);
  };
  for (const StagePlan& sp : plan.stages) {
    Stage stage{sp, m->devices_[sp.device], nullptr};
    stage.backend = backend_of(stage.device).load(StageLoad{*m, sp, stage.device, budgets[sp.device].budget,
                                                            options.vram_budget, stage_threads, experts, progress});
    done += stage_done;
    stage_done = 0;
    if (plan.n_stage() > 1)
      log_info("model: stage {} on {}: layers {}..{}", m->stages_.size(), stage.device.name(), sp.first_layer,
               sp.end_layer() - 1);
    m->stages_.push_back(std::move(stage));
  }
  if (experts.peer && m->residency().streamed == 0)
    log_info("model: every expert fits the budget, so the peer_device has nothing to stream");
  if (options.progress && !options.progress(total, total)) fail(STRATA_ABORTED, "model: load cancelled");
  return m;
}

uint64_t Model::device_bytes() const {
  uint64_t n = 0;
  for (const Stage& s : stages_) n += s.backend->device_bytes();
  return n;
}

bool Model::adapt(std::span<const uint64_t> routed) const {
  if (adapt_swaps_ == 0) return false;
  std::unique_lock lock(residency_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // another session is running: adapt at a later request
  for (const Stage& s : stages_) s.backend->adapt(routed, adapt_swaps_);
  return true;
}

ExpertResidency Model::residency() const {
  ExpertResidency all;
  int32_t streaming_chunk = 0;  // the smallest planned chunk of a streaming stage
  int32_t chunk = 0;            // the smallest planned chunk of any stage
  for (const Stage& s : stages_) {
    const ExpertResidency r = s.backend->residency();
    if (r.streamed > 0) streaming_chunk = streaming_chunk > 0 ? std::min(streaming_chunk, r.chunk) : r.chunk;
    chunk = chunk > 0 ? std::min(chunk, r.chunk) : r.chunk;
    all.resident += r.resident;
    all.streamed += r.streamed;
    all.streamed_bytes += r.streamed_bytes;
    all.ring_slots = std::max(all.ring_slots, r.ring_slots);
    if (r.streamed > 0) all.link_GBps = all.link_GBps > 0 ? std::min(all.link_GBps, r.link_GBps) : r.link_GBps;
  }
  all.chunk = streaming_chunk > 0 ? streaming_chunk : chunk > 0 ? chunk : all.chunk;
  return all;
}

std::unique_ptr<RouteBuffer> Model::new_route(size_t floats) const {
  for (const Stage& s : stages_)
    if (!s.device.is_cpu()) return s.backend->new_route(floats);
  return stages_.front().backend->new_route(floats);
}

}  // namespace strata::core
