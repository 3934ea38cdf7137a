// libstrata: the C++ API, a header-only layer over the C ABI in strata.h.
//
//   auto model   = strata::Model::load("model.gguf", {.devices = "0"});
//   auto session = model.new_session({.n_ctx = 32768, .kv = strata::KvType::Int8});
//   session.prompt(model.tokenize(text));
//   strata::Sampler sampler({.temperature = 0.7f, .seed = 42});
//   for (int32_t tok = session.sample(sampler); tok != model.eot(); tok = session.sample(sampler))
//     std::cout << model.detokenize({tok}), session.decode(tok);
//
// Errors throw strata::Error (status + message). Thread safety as in strata.h:
// a Model may be shared by threads; a Session or Sampler by one at a time.
#ifndef STRATA_HPP
#define STRATA_HPP

#ifndef __cplusplus
#error "strata.hpp is the C++ API; C programs include strata/strata.h"
#endif

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "strata/strata.h"

namespace strata {

class Error : public std::runtime_error {
 public:
  Error(strata_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  strata_status status() const noexcept { return status_; }

 private:
  strata_status status_;
};

namespace detail {

inline void check(strata_status status) {
  if (status < 0 || status == STRATA_ABORTED) throw Error(status, strata_last_error());
}

struct Free {
  void operator()(strata_model* p) const noexcept { strata_model_free(p); }
  void operator()(strata_session* p) const noexcept { strata_session_free(p); }
  void operator()(strata_sampler* p) const noexcept { strata_sampler_free(p); }
  void operator()(void* p) const noexcept { strata_free(p); }
};

// Returns done/total progress to a std::function; returning false stops the call.
using Progress = std::function<bool(uint64_t done, uint64_t total)>;
inline int progress_trampoline(uint64_t done, uint64_t total, void* user) {
  return (*static_cast<const Progress*>(user))(done, total) ? 0 : 1;
}

}  // namespace detail

enum class KvType { F16 = STRATA_KV_F16, Int8 = STRATA_KV_INT8 };

struct ModelParams {
  std::string devices;      // "", "cpu", "0", "0,1", "0,0"
  std::string layer_split;  // "", "auto", "24,24"
  uint64_t vram_budget = 0;
  int32_t n_threads = 0;
  int32_t peer_device = -1;
  int32_t adapt_swaps = 16;  // adaptive residency swaps per prompt; 0 disables
  std::vector<uint64_t> expert_profile;  // routed rows per (layer, expert) to rank residents; empty: uniform
  detail::Progress progress;  // bytes loaded
};

struct SessionParams {
  int32_t n_ctx = 0;
  KvType kv = KvType::F16;
  int32_t chunk_size = 0;
  bool pipeline = true;  // several stages: overlap chunks across stages
  double decode_cpu_share = -1;  // streamed experts in GPU decode: CPU share, < 0 automatic
  double peer_share = -1;        // peer_device: share of stream-all chunks' streamed experts, < 0 cost model
  bool peer_f32 = false;         // peer_device: F32 transfers (default FP16)
  int32_t peer_pieces = 0;       // peer_device: host route in pieces (0 off, 1 = 8, K)
  bool helper = true;            // layer split, one-chunk prompts: idle stages help (seed 000)
  double helper_share = -1;      // < 0: the rule min(0.45, 0.5 - T / 16384), off below 0.3
  bool helper_exact = false;     // helped == unhelped bit for bit
  detail::Progress progress;  // prompt tokens done
};

struct SamplerParams {
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  uint64_t seed = 0;
};

using Stats = strata_stats;
using ModelInfo = strata_model_info;

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p = {}) {
    strata_sampler_params c;
    strata_sampler_params_init(&c);
    c.temperature = p.temperature;
    c.top_k = p.top_k;
    c.top_p = p.top_p;
    c.min_p = p.min_p;
    c.repeat_penalty = p.repeat_penalty;
    c.repeat_last_n = p.repeat_last_n;
    c.seed = p.seed;
    strata_sampler* s = nullptr;
    detail::check(strata_sampler_new(&c, &s));
    handle_.reset(s);
  }
  int32_t sample(std::span<const float> logits) {
    int32_t tok = -1;
    detail::check(strata_sampler_sample(handle_.get(), logits.data(), static_cast<int32_t>(logits.size()), &tok));
    return tok;
  }
  void accept(int32_t token) { strata_sampler_accept(handle_.get(), token); }
  strata_sampler* get() const { return handle_.get(); }

 private:
  std::unique_ptr<strata_sampler, detail::Free> handle_;
};

class Session {
 public:
  // Runs the tokens as a prompt (in chunks); their last logits become current.
  void prompt(std::span<const int32_t> tokens) {
    detail::check(strata_session_prompt(handle_.get(), tokens.data(), tokens.size()));
  }
  // As prompt(), calling each(position, logits) for every position.
  void prompt_each(std::span<const int32_t> tokens,
                   const std::function<bool(int32_t, std::span<const float>)>& each) {
    auto fn = [](int32_t pos, const float* l, int32_t n, void* user) -> int {
      const auto& f = *static_cast<const std::function<bool(int32_t, std::span<const float>)>*>(user);
      return f(pos, std::span<const float>(l, static_cast<size_t>(n))) ? 0 : 1;
    };
    detail::check(strata_session_prompt_each(handle_.get(), tokens.data(), tokens.size(), fn,
                                             const_cast<void*>(static_cast<const void*>(&each))));
  }
  // Appends one token; the logits stay valid until the next call that changes the session.
  std::span<const float> decode(int32_t token) {
    const float* l = nullptr;
    detail::check(strata_session_decode(handle_.get(), token, &l));
    return {l, static_cast<size_t>(n_vocab_)};
  }
  std::span<const float> logits() const {
    const float* l = nullptr;
    int32_t n = 0;
    detail::check(strata_session_logits(handle_.get(), &l, &n));
    return {l, static_cast<size_t>(n)};
  }
  int32_t sample(Sampler& sampler) {
    int32_t tok = -1;
    detail::check(strata_session_sample(handle_.get(), sampler.get(), &tok));
    return tok;
  }
  int32_t n_past() const { return strata_session_n_past(handle_.get()); }
  void reset() { detail::check(strata_session_reset(handle_.get())); }
  void cancel() { strata_session_cancel(handle_.get()); }
  Stats stats() const {
    Stats s{};
    s.struct_size = sizeof(s);
    detail::check(strata_session_get_stats(handle_.get(), &s));
    return s;
  }
  std::vector<uint64_t> expert_counts() const {
    size_t n = 0;
    std::vector<uint64_t> out(static_cast<size_t>(n_layer_) * static_cast<size_t>(n_expert_));
    detail::check(strata_session_expert_counts(handle_.get(), out.data(), out.size(), &n));
    return out;
  }
  strata_session* get() const { return handle_.get(); }

 private:
  friend class Model;
  Session(strata_session* s, std::unique_ptr<detail::Progress> progress, const ModelInfo& info)
      : progress_(std::move(progress)), handle_(s), n_vocab_(info.n_vocab), n_layer_(info.n_layer),
        n_expert_(info.n_expert) {}
  std::unique_ptr<detail::Progress> progress_;  // outlives the C session that points at it
  std::unique_ptr<strata_session, detail::Free> handle_;
  int32_t n_vocab_, n_layer_, n_expert_;
};

struct ChatMessage {
  std::string role, content;
};

namespace detail {

// The C view of messages; valid while `messages` lives.
inline std::vector<strata_chat_message> c_messages(std::span<const ChatMessage> messages) {
  std::vector<strata_chat_message> c;
  for (const ChatMessage& m : messages) c.push_back({m.role.c_str(), m.content.c_str()});
  return c;
}

}  // namespace detail

class Model {
 public:
  static Model load(const std::string& path, const ModelParams& p = {}) {
    strata_model_params c;
    strata_model_params_init(&c);
    c.devices = p.devices.c_str();
    c.layer_split = p.layer_split.c_str();
    c.vram_budget = p.vram_budget;
    c.n_threads = p.n_threads;
    c.peer_device = p.peer_device;
    c.adapt_swaps = p.adapt_swaps;
    c.expert_profile = p.expert_profile.empty() ? nullptr : p.expert_profile.data();
    c.expert_profile_len = p.expert_profile.size();
    if (p.progress) {
      c.progress = detail::progress_trampoline;
      c.progress_user_data = const_cast<detail::Progress*>(&p.progress);
    }
    strata_model* m = nullptr;
    detail::check(strata_model_load(path.c_str(), &c, &m));
    return Model(m);
  }

  Session new_session(const SessionParams& p = {}) const {
    strata_session_params c;
    strata_session_params_init(&c);
    c.n_ctx = p.n_ctx;
    c.kv_type = static_cast<strata_kv_type>(p.kv);
    c.chunk_size = p.chunk_size;
    c.no_pipeline = p.pipeline ? 0 : 1;
    c.decode_cpu_share = p.decode_cpu_share;
    c.peer_share = p.peer_share;
    c.peer_f32 = p.peer_f32 ? 1 : 0;
    c.peer_pieces = p.peer_pieces;
    c.no_helper = p.helper ? 0 : 1;
    c.helper_share = p.helper_share;
    c.helper_exact = p.helper_exact ? 1 : 0;
    std::unique_ptr<detail::Progress> progress;
    if (p.progress) {
      progress = std::make_unique<detail::Progress>(p.progress);
      c.progress = detail::progress_trampoline;
      c.progress_user_data = progress.get();
    }
    strata_session* s = nullptr;
    detail::check(strata_session_new(handle_.get(), &c, &s));
    return Session(s, std::move(progress), info_);
  }

  // max_tokens > 0 bounds the work: a text that needs more than max_tokens
  // tokens throws Error(STRATA_ERR_CONTEXT_FULL) (strata_tokenize_max).
  std::vector<int32_t> tokenize(std::string_view text, bool parse_special = false, size_t max_tokens = 0) const {
    int32_t* ids = nullptr;
    size_t n = 0;
    detail::check(
        strata_tokenize_max(handle_.get(), text.data(), text.size(), parse_special ? 1 : 0, max_tokens, &ids, &n));
    std::unique_ptr<void, detail::Free> owner(ids);
    return std::vector<int32_t>(ids, ids + n);
  }
  // Tokens of a ChatML chat, control tokens only where the template put them
  // (strata_chat_tokenize); content_special also matches them in messages;
  // max_tokens as for tokenize().
  std::vector<int32_t> chat_tokenize(std::span<const ChatMessage> messages, bool add_generation_prompt = true,
                                     bool content_special = false, size_t max_tokens = 0) const {
    const std::vector<strata_chat_message> c = detail::c_messages(messages);
    int32_t* ids = nullptr;
    size_t n = 0;
    detail::check(strata_chat_tokenize(handle_.get(), c.data(), c.size(), add_generation_prompt ? 1 : 0,
                                       content_special ? 1 : 0, max_tokens, &ids, &n));
    std::unique_ptr<void, detail::Free> owner(ids);
    return std::vector<int32_t>(ids, ids + n);
  }
  std::string detokenize(std::span<const int32_t> tokens) const {
    char* text = nullptr;
    size_t n = 0;
    detail::check(strata_detokenize(handle_.get(), tokens.data(), tokens.size(), &text, &n));
    std::unique_ptr<void, detail::Free> owner(text);
    return std::string(text, n);
  }
  std::string detokenize(std::initializer_list<int32_t> tokens) const {
    return detokenize(std::span<const int32_t>(tokens.begin(), tokens.size()));
  }
  int32_t special(strata_special_token which) const {
    int32_t t = -1;
    detail::check(strata_model_special_token(handle_.get(), which, &t));
    return t;
  }
  int32_t eos() const { return special(STRATA_TOKEN_EOS); }
  int32_t eot() const { return special(STRATA_TOKEN_EOT); }
  const ModelInfo& info() const { return info_; }
  strata_model* get() const { return handle_.get(); }

 private:
  explicit Model(strata_model* m) : handle_(m, detail::Free{}) {
    info_ = ModelInfo{};
    info_.struct_size = sizeof(info_);
    detail::check(strata_model_get_info(m, &info_));
  }
  std::shared_ptr<strata_model> handle_;  // shared: copies of a Model are cheap
  ModelInfo info_{};
};

// ChatML text of messages, ending with the assistant's turn opener when asked.
inline std::string chat_format(std::span<const ChatMessage> messages, bool add_generation_prompt = true) {
  const std::vector<strata_chat_message> c = detail::c_messages(messages);
  char* text = nullptr;
  detail::check(strata_chat_format(c.data(), c.size(), add_generation_prompt ? 1 : 0, &text));
  std::unique_ptr<void, detail::Free> owner(text);
  return std::string(text);
}

// Untrusted text as one printable line for logs and terminals (strata_printable).
inline std::string printable(std::string_view text) {
  char* out = nullptr;
  detail::check(strata_printable(text.data(), text.size(), &out));
  std::unique_ptr<void, detail::Free> owner(out);
  return std::string(out);
}

// Bytes of a size such as "12GiB" or "800MB" (strata_parse_size); throws Error naming the text.
inline uint64_t parse_size(const std::string& text) {
  uint64_t bytes = 0;
  detail::check(strata_parse_size(text.c_str(), &bytes));
  return bytes;
}

}  // namespace strata

#endif  // STRATA_HPP
