// A loaded model: the mapped GGUF file, its configuration, weights and tokenizer. Immutable.
#include "core/model.h"

#include <thread>

#include "core/error.h"
#include "core/cpu/forward.h"
#include "core/log.h"
#include "core/vocab_gguf.h"
#ifdef STRATA_HAVE_CUDA
#include "cuda/backend.h"
#endif

namespace strata::core {

std::shared_ptr<const Model> Model::load(const std::string& path, const ModelOptions& options) {
  if (options.n_threads < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "model: n_threads must be >= 0, got {}", options.n_threads);
  std::vector<LogicalDevice> devices = parse_devices(options.devices);
  if (options.devices.empty() && devices.front().is_cpu())
    log_info("no CUDA device found; using the CPU backend");
  if (devices.size() > 1 || !options.layer_split.empty())
    fail(STRATA_ERR_UNSUPPORTED, "model: several devices / layer_split are not part of this version yet");
  if (options.peer_device >= 0) fail(STRATA_ERR_UNSUPPORTED, "model: peer_device is not part of this version yet");

  std::shared_ptr<Model> m(new Model(GgufFile::open(path)));
  m->devices_ = std::move(devices);
  m->config_ = read_model_config(m->file_);
  const GgufTensorInfo* embd = m->file_.find_tensor("token_embd.weight");
  if (!embd || embd->n_dims != 2) fail(STRATA_ERR_FORMAT, "model: tensor 'token_embd.weight' is missing or not 2-D");
  m->config_.n_vocab = static_cast<int32_t>(embd->ne[1]);
  m->weights_ = bind_weights(m->file_, m->config_);
  m->tokenizer_ = std::make_unique<Tokenizer>(vocab_from_gguf(m->file_));
  if (m->tokenizer_->n_vocab() > m->config_.n_vocab)
    fail(STRATA_ERR_FORMAT, "model: the vocabulary has {} tokens but token_embd has only {} rows",
         m->tokenizer_->n_vocab(), m->config_.n_vocab);
  m->eot_ = m->tokenizer_->find("<|im_end|>").value_or(m->tokenizer_->eos());
  m->n_threads_ = options.n_threads > 0 ? options.n_threads
                                        : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));

  const LogicalDevice& device = m->devices_.front();
  if (device.is_cpu()) {
    // The CPU backend reads the weights in place from the mapping: nothing to copy.
    m->backend_ = make_cpu_backend(*m);
    const uint64_t size = m->file_.bytes().size();
    if (options.progress && !options.progress(size, size)) fail(STRATA_ABORTED, "model: load cancelled");
  } else {
#ifdef STRATA_HAVE_CUDA
    m->backend_ = cuda::make_backend(*m, device.ordinal, options.progress);
#else
    fail(STRATA_ERR_DEVICE, "model: {} asked for, but this build has no CUDA backend", device.name());
#endif
  }
  return m;
}

}  // namespace strata::core
