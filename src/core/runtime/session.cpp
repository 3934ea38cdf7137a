// One conversation: the context (KV cache in the executor), prompt in chunks, decode, stats.
#include "core/runtime/session.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>

#include "core/base/env.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/plan/cost.h"

namespace strata::core {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// STRATA_PREFILL_TIMING=1: every prompt's phases on stderr.
bool prefill_timing() { return env_flag(EnvVar::PrefillTiming); }

void log_phases(const SessionStats& s) {
  const PhaseTimes& p = s.phases;
  log_info("prompt {} tokens in {:.1f} ms ({:.0f} tok/s): attention {:.1f}, routing {:.1f}, grouping {:.1f}, "
           "stream wait {:.1f}, experts {:.1f}, combine {:.1f}, transfer {:.1f}, other {:.1f} ms; {:.2f} GB streamed "
           "({:.1f} GB/s over the prompt)",
           s.prompt_tokens, s.prompt_ms, s.prompt_ms > 0 ? s.prompt_tokens / (s.prompt_ms / 1000) : 0.0,
           p.attention_ms, p.routing_ms, p.grouping_ms, p.stream_wait_ms, p.expert_ms, p.combine_ms, p.transfer_ms,
           p.other_ms, p.bytes_streamed / 1e9, s.prompt_ms > 0 ? p.bytes_streamed / (s.prompt_ms * 1e6) : 0.0);
}

// The environment's peer-pieces and stage-helper variables override the options.
void apply_env(SessionOptions& o) {
  if (const auto v = env_number(EnvVar::PeerPieces)) o.peer_pieces = static_cast<int32_t>(*v);
  if (const auto v = env_number(EnvVar::PrefillHelp)) o.helper = *v != 0;
  if (const auto v = env_number(EnvVar::PrefillHelpFrac)) o.helper_share = *v;
}

// A share option: a fraction in [0, 1], or a negative value for the cost model's choice. NaN is neither.
void check_share(double share, const char* name) {
  if (!(share <= 1))
    fail(STRATA_ERR_INVALID_ARGUMENT, "session: {} must be in [0, 1] (or < 0 for automatic), got {}", name, share);
}

}  // namespace

Session::Session(std::shared_ptr<const Model> model, SessionOptions options)
    : model_(std::move(model)), options_(std::move(options)) {
  const ModelConfig& c = model_->config();
  if (options_.n_ctx < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "session: n_ctx must be >= 0, got {}", options_.n_ctx);
  if (options_.n_ctx > c.n_ctx_train)
    fail(STRATA_ERR_INVALID_ARGUMENT, "session: n_ctx {} exceeds the model's context length {}", options_.n_ctx,
         c.n_ctx_train);
  if (options_.n_ctx == 0) options_.n_ctx = std::min(c.n_ctx_train, 4096);
  if (options_.chunk_size < 0)
    fail(STRATA_ERR_INVALID_ARGUMENT, "session: chunk_size must be >= 0, got {}", options_.chunk_size);
  if (options_.chunk_size == 0) options_.chunk_size = model_->residency().chunk;
  // No chunk holds more tokens than the context: larger buffers would never fill.
  options_.chunk_size = std::min(options_.chunk_size, options_.n_ctx);
  check_share(options_.decode_cpu_share, "decode_cpu_share");
  apply_env(options_);
  check_share(options_.peer_share, "peer_share");
  check_share(options_.helper_share, "helper_share");
  options_.peer_pieces = resolve_peer_pieces(options_.peer_pieces);
  pipeline_ = std::make_unique<Pipeline>(*model_, options_);
  expert_counts_.assign(static_cast<size_t>(c.n_layer) * c.n_expert, 0);
  adapted_counts_ = expert_counts_;
}

void Session::check_tokens(std::span<const int32_t> tokens) const {
  if (failed_) fail(STRATA_ERR_STATE, "session: an earlier call failed; reset the session first");
  if (tokens.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "session: no tokens");
  // The count first: a caller's wrong count must not make the id check read past its buffer.
  if (tokens.size() > static_cast<size_t>(options_.n_ctx - n_past_))
    fail(STRATA_ERR_CONTEXT_FULL, "session: {} tokens do not fit: {} of the context's {} are used", tokens.size(),
         n_past_, options_.n_ctx);
  const int32_t n_vocab = model_->config().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      fail(STRATA_ERR_INVALID_ARGUMENT, "session: token {} at index {} is outside the vocabulary [0, {})", tokens[i], i,
           n_vocab);
}

// An exception other than a cancellation leaves the KV cache in an unknown
// state: the session refuses further work until reset().
void Session::run_guarded(const std::function<void()>& body) {
  cancel_.store(false);
  try {
    body();
  } catch (const Error& e) {
    if (e.status() != STRATA_ABORTED) failed_ = true;
    throw;
  } catch (...) {
    failed_ = true;
    throw;
  }
}

void Session::prompt(std::span<const int32_t> tokens, const LogitsFn& each) {
  check_tokens(tokens);
  // A new request: the model may move hot streamed experts into VRAM first.
  std::vector<uint64_t> routed(expert_counts_.size());
  for (size_t i = 0; i < routed.size(); ++i) routed[i] = expert_counts_[i] - adapted_counts_[i];
  if (model_->adapt(routed)) adapted_counts_ = expert_counts_;
  std::shared_lock running(model_->residency_mutex());
  run_guarded([&] {
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t n_vocab = model_->config().n_vocab;
    stats_ = SessionStats{};
    logits_.clear();
    const int32_t total = static_cast<int32_t>(tokens.size());
    chunks_.clear();
    for (int32_t done = 0; done < total;) {
      const int32_t n = std::min(options_.chunk_size, total - done);
      const bool last = done + n == total;
      // Logits of every row when the caller wants them, else only the prompt's last.
      const int32_t first = each ? 0 : (last ? n - 1 : n);
      chunks_.push_back({tokens.subspan(done, n), n_past_ + done, first});
      done += n;
    }
    int32_t done = 0;
    const Pipeline::Sink sink = [&](size_t c, std::span<const float> logits) {
      const Pipeline::Chunk& ch = chunks_[c];
      const int32_t n = static_cast<int32_t>(ch.tokens.size());
      n_past_ += n;
      done += n;
      for (int32_t r = ch.first_logit_row; each && r < n; ++r) {
        const std::span<const float> row = logits.subspan(static_cast<size_t>(r - ch.first_logit_row) * n_vocab, n_vocab);
        if (!each(ch.pos0 + r, row)) fail(STRATA_ABORTED, "session: stopped by the logits callback");
      }
      if (done == total) logits_.assign(logits.end() - n_vocab, logits.end());
      if (options_.progress && !options_.progress(done, total))
        fail(STRATA_ABORTED, "session: prompt stopped by the progress callback after {} of {} tokens", done, total);
      if (done < total && cancel_.load())
        fail(STRATA_ABORTED, "session: prompt cancelled after {} of {} tokens", done, total);
    };
    pipeline_->run(chunks_, sink, stats_.phases, expert_counts_.data(), cancel_);
    stats_.prompt_tokens = total;
    stats_.prompt_ms = ms_since(t0);
    if (prefill_timing()) log_phases(stats_);
  });
}

std::span<const float> Session::decode(int32_t token) {
  check_tokens(std::span<const int32_t>(&token, 1));
  std::shared_lock running(model_->residency_mutex());
  run_guarded([&] {
    const auto t0 = std::chrono::steady_clock::now();
    const Pipeline::Chunk chunk{std::span<const int32_t>(&token, 1), n_past_, 0};
    // Into scratch first: a cancelled step leaves the current logits as they were.
    pipeline_->run(std::span<const Pipeline::Chunk>(&chunk, 1),
                   [&](size_t, std::span<const float> logits) { next_logits_.assign(logits.begin(), logits.end()); },
                   stats_.decode_phases, expert_counts_.data(), cancel_);
    logits_.swap(next_logits_);
    n_past_ += 1;
    stats_.decode_tokens += 1;
    stats_.decode_ms += ms_since(t0);
  });
  return logits_;
}

std::span<const float> Session::logits() const {
  if (logits_.empty()) fail(STRATA_ERR_STATE, "session: no logits yet (run a prompt or decode first)");
  return logits_;
}

void Session::reset() {
  n_past_ = 0;
  failed_ = false;
  logits_.clear();
  stats_ = SessionStats{};
  std::fill(expert_counts_.begin(), expert_counts_.end(), 0);
  std::fill(adapted_counts_.begin(), adapted_counts_.end(), 0);
}

}  // namespace strata::core
