// The C ABI: every entry point turns exceptions into a strata_status and a thread-local message.
#include "strata/strata.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/base/bytes.h"
#include "core/base/error.h"
#include "core/base/version.h"
#include "core/model/dequantize_file.h"
#include "core/model/inspect.h"
#include "core/model/model.h"
#include "core/model/synth.h"
#include "core/runtime/sampler.h"
#include "core/runtime/session.h"
#include "core/text/chat.h"
#include "core/text/unicode.h"

using strata::core::Error;
using strata::core::fail;

struct strata_model {
  std::shared_ptr<const strata::core::Model> model;
};
// A session and a sampler take one thread at a time (strata.h): `busy` is set for the length of a call on them.
struct strata_session {
  std::unique_ptr<strata::core::Session> session;
  mutable std::atomic<bool> busy{false};
};
struct strata_sampler {
  std::unique_ptr<strata::core::Sampler> sampler;
  mutable std::atomic<bool> busy{false};
};

namespace {

thread_local std::string g_last_error;

// Messages name keys, tensors and texts from files and callers: printable() keeps them to one safe line.
strata_status set_error(strata_status status, const char* message) {
  g_last_error = strata::core::printable(message);
  return status;
}

// Every entry point body runs inside this: no exception crosses the ABI.
template <typename F>
strata_status guarded(F&& body) noexcept {
  try {
    body();
    return STRATA_OK;
  } catch (const Error& e) {
    return set_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(STRATA_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(STRATA_ERR_INTERNAL, e.what());
  } catch (...) {
    return set_error(STRATA_ERR_INTERNAL, "unknown internal error");
  }
}

void require(const void* p, const char* what) {
  if (!p) fail(STRATA_ERR_INVALID_ARGUMENT, "{} is NULL", what);
}

// Holds an object's `busy` flag for one call; a second thread (or a callback re-entering the object) is refused with
// STRATA_ERR_BUSY and leaves the flag to the call that holds it.
class InUse {
 public:
  template <typename T>
  InUse(const T* object, const char* what) : busy_(object->busy) {
    if (busy_.exchange(true, std::memory_order_acquire))
      fail(STRATA_ERR_BUSY,
           "{}: another call is running on this {} (one thread at a time, no calls from its callbacks)", what, what);
  }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;
  ~InUse() { busy_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool>& busy_;
};

// The sizes a struct has had in headers that callers may be built with, oldest first, the last sizeof(T). A struct
// grows only by appended fields that grow its size: a field in the old tail padding would be read from callers
// that never set it. The layouts of 2026-12-07 are the first; list a struct here when a field is appended to it.
template <typename T>
std::span<const size_t> abi_sizes() {
  static constexpr size_t kSizes[] = {sizeof(T)};
  return kSizes;
}
template <>
std::span<const size_t> abi_sizes<strata_synth_params>() {
  static constexpr size_t kSizes[] = {offsetof(strata_synth_params, quant_mix), sizeof(strata_synth_params)};
  return kSizes;
}

// A struct from an older or newer caller: its size must be one of abi_sizes.
template <typename T>
void check_size(const T* p, const char* what) {
  const std::span<const size_t> sizes = abi_sizes<T>();
  if (std::find(sizes.begin(), sizes.end(), p->struct_size) == sizes.end())
    fail(STRATA_ERR_INVALID_ARGUMENT, "{}.struct_size is {}; this library takes {} (set it with its _init function "
         "or to sizeof)", what, p->struct_size, fmt::join(sizes, " or "));
}

// The caller's params (NULL: the defaults) in the current layout: the fields its struct_size holds, and init's
// defaults for the fields appended after the header it was built with. Reads only struct_size bytes.
template <typename T>
T params_of(const T* p, const char* what, void (*init)(T*)) {
  T full;
  init(&full);
  if (!p) return full;
  check_size(p, what);
  std::memcpy(&full, p, p->struct_size);
  full.struct_size = sizeof(T);
  return full;
}

// Writes to a caller's output struct (its size checked by check_size first) the fields its struct_size holds.
template <typename T>
void fill_out(T* out, T full) {
  full.struct_size = out->struct_size;
  std::memcpy(out, &full, out->struct_size);
}

// Memory handed to the caller, released with strata_free (malloc/free pair).
template <typename T>
T* copy_out(const T* data, size_t n, size_t extra = 0) {
  void* p = std::malloc(sizeof(T) * n + extra + 1);
  if (!p) throw std::bad_alloc();
  if (n) std::memcpy(p, data, sizeof(T) * n);
  std::memset(static_cast<char*>(p) + sizeof(T) * n, 0, extra + 1);
  return static_cast<T*>(p);
}

strata::core::ProgressFn progress_of(strata_progress_fn fn, void* user) {
  if (!fn) return {};
  return [fn, user](uint64_t done, uint64_t total) { return fn(done, total, user) == 0; };
}

// The tokenizer's bound for a C max_tokens (0: none).
size_t bound(size_t max_tokens) { return max_tokens ? max_tokens : SIZE_MAX; }

// ids, refused when the tokenizer stopped past max_tokens (see Tokenizer::encode).
void copy_tokens(const std::vector<int32_t>& ids, size_t max_tokens, int32_t** out_tokens, size_t* out_count) {
  if (ids.size() > bound(max_tokens)) fail(STRATA_ERR_CONTEXT_FULL, "the text needs more than {} tokens", max_tokens);
  *out_tokens = copy_out(ids.data(), ids.size());
  *out_count = ids.size();
}

}  // namespace

extern "C" {

STRATA_API const char* strata_version_string(void) { return strata::core::version_string(); }

STRATA_API void strata_version(int* out_major, int* out_minor, int* out_patch) {
  int v[3] = {0, 0, 0};
  std::sscanf(strata::core::version_string(), "%d.%d.%d", &v[0], &v[1], &v[2]);
  if (out_major) *out_major = v[0];
  if (out_minor) *out_minor = v[1];
  if (out_patch) *out_patch = v[2];
}

STRATA_API const char* strata_last_error(void) { return g_last_error.c_str(); }

STRATA_API const char* strata_status_name(strata_status status) {
  switch (status) {
    case STRATA_OK: return "STRATA_OK";
    case STRATA_ABORTED: return "STRATA_ABORTED";
    case STRATA_ERR_INVALID_ARGUMENT: return "STRATA_ERR_INVALID_ARGUMENT";
    case STRATA_ERR_IO: return "STRATA_ERR_IO";
    case STRATA_ERR_FORMAT: return "STRATA_ERR_FORMAT";
    case STRATA_ERR_UNSUPPORTED: return "STRATA_ERR_UNSUPPORTED";
    case STRATA_ERR_OUT_OF_MEMORY: return "STRATA_ERR_OUT_OF_MEMORY";
    case STRATA_ERR_DEVICE: return "STRATA_ERR_DEVICE";
    case STRATA_ERR_CONTEXT_FULL: return "STRATA_ERR_CONTEXT_FULL";
    case STRATA_ERR_STATE: return "STRATA_ERR_STATE";
    case STRATA_ERR_BUSY: return "STRATA_ERR_BUSY";
    case STRATA_ERR_INTERNAL: return "STRATA_ERR_INTERNAL";
    case STRATA_STATUS_MAX_ENUM: break;
  }
  return "STRATA_ERR_UNKNOWN";
}

STRATA_API void strata_free(void* ptr) { std::free(ptr); }

STRATA_API strata_status strata_printable(const char* text, size_t len, char** out_text) {
  return guarded([&] {
    if (!text && len > 0) fail(STRATA_ERR_INVALID_ARGUMENT, "text is NULL with len {}", len);
    require(out_text, "out_text");
    const std::string p = strata::core::printable(text ? std::string_view(text, len) : std::string_view());
    *out_text = copy_out(p.data(), p.size());
  });
}

STRATA_API strata_status strata_parse_size(const char* text, uint64_t* out_bytes) {
  return guarded([&] {
    require(text, "text");
    require(out_bytes, "out_bytes");
    *out_bytes = strata::core::parse_byte_size(text);
  });
}

// ------------------------------------------------------------------ model

STRATA_API void strata_model_params_init(strata_model_params* p) {
  if (!p) return;
  std::memset(p, 0, sizeof(*p));
  p->struct_size = sizeof(*p);
  p->peer_device = -1;
  p->adapt_swaps = 16;
}

STRATA_API strata_status strata_model_load(const char* path, const strata_model_params* params,
                                           strata_model** out_model) {
  return guarded([&] {
    require(path, "path");
    require(out_model, "out_model");
    const strata_model_params p = params_of(params, "strata_model_params", strata_model_params_init);
    strata::core::ModelOptions o;
    o.devices = p.devices ? p.devices : "";
    o.layer_split = p.layer_split ? p.layer_split : "";
    o.vram_budget = p.vram_budget;
    o.n_threads = p.n_threads;
    o.peer_device = p.peer_device;
    o.adapt_swaps = p.adapt_swaps;
    if (p.expert_profile_len > 0 && !p.expert_profile)
      fail(STRATA_ERR_INVALID_ARGUMENT, "expert_profile is NULL but expert_profile_len is {}", p.expert_profile_len);
    if (p.expert_profile) o.expert_profile = std::span(p.expert_profile, p.expert_profile_len);  // load checks it
    o.progress = progress_of(p.progress, p.progress_user_data);
    auto m = std::make_unique<strata_model>();
    m->model = strata::core::Model::load(path, o);
    *out_model = m.release();
  });
}

STRATA_API void strata_model_free(strata_model* model) { delete model; }

STRATA_API strata_status strata_model_get_info(const strata_model* model, strata_model_info* out) {
  return guarded([&] {
    require(model, "model");
    require(out, "out_info");
    check_size(out, "strata_model_info");
    strata_model_info info{};
    const auto& c = model->model->config();
    const auto& w = model->model->weights();
    info.architecture = c.arch_name.c_str();
    info.name = c.name.c_str();
    info.n_vocab = c.n_vocab;
    info.n_ctx_train = c.n_ctx_train;
    info.n_embd = c.n_embd;
    info.n_layer = c.n_layer;
    info.n_head = c.n_head;
    info.n_head_kv = c.n_head_kv;
    info.n_expert = c.n_expert;
    info.n_expert_used = c.n_expert_used;
    info.n_ff_expert = c.n_ff_exp;
    info.n_params = w.n_params;
    info.expert_bytes = w.expert_bytes;
    info.dense_bytes = w.dense_bytes;
    info.backend = model->model->backend_name();
    info.device_bytes = model->model->device_bytes();
    const strata::core::ExpertResidency r = model->model->residency();
    info.n_experts_resident = r.resident;
    info.n_experts_streamed = r.streamed;
    info.streamed_bytes = r.streamed_bytes;
    info.link_gbps = r.link_GBps;
    fill_out(out, info);
  });
}

// -------------------------------------------------------------- tokenizer

STRATA_API strata_status strata_model_special_token(const strata_model* model, strata_special_token which,
                                                    int32_t* out_token) {
  return guarded([&] {
    require(model, "model");
    require(out_token, "out_token");
    const auto& t = model->model->tokenizer();
    switch (which) {
      case STRATA_TOKEN_BOS: *out_token = t.bos(); return;
      case STRATA_TOKEN_EOS: *out_token = t.eos(); return;
      case STRATA_TOKEN_EOT: *out_token = model->model->eot_token(); return;
      case STRATA_TOKEN_PAD: *out_token = t.pad(); return;
      case STRATA_TOKEN_MIN_ENUM:
      case STRATA_TOKEN_MAX_ENUM: break;
    }
    fail(STRATA_ERR_INVALID_ARGUMENT, "unknown special token kind {}", static_cast<int>(which));
  });
}

STRATA_API strata_status strata_tokenize(const strata_model* model, const char* text, size_t len, int parse_special,
                                         int32_t** out_tokens, size_t* out_count) {
  return strata_tokenize_max(model, text, len, parse_special, 0, out_tokens, out_count);
}

STRATA_API strata_status strata_tokenize_max(const strata_model* model, const char* text, size_t len,
                                             int parse_special, size_t max_tokens, int32_t** out_tokens,
                                             size_t* out_count) {
  return guarded([&] {
    require(model, "model");
    if (len) require(text, "text");
    require(out_tokens, "out_tokens");
    require(out_count, "out_count");
    const std::string_view s(text ? text : "", len);
    copy_tokens(model->model->tokenizer().encode(s, parse_special != 0, bound(max_tokens)), max_tokens, out_tokens,
                out_count);
  });
}

STRATA_API strata_status strata_detokenize(const strata_model* model, const int32_t* tokens, size_t n_tokens,
                                           char** out_text, size_t* out_len) {
  return guarded([&] {
    require(model, "model");
    if (n_tokens) require(tokens, "tokens");
    require(out_text, "out_text");
    const std::string s = model->model->tokenizer().decode(std::span<const int32_t>(tokens, n_tokens));
    *out_text = copy_out(s.data(), s.size());
    if (out_len) *out_len = s.size();
  });
}

namespace {

std::vector<strata::core::ChatMessage> chat_messages(const strata_chat_message* messages, size_t n_messages) {
  if (n_messages) require(messages, "messages");
  std::vector<strata::core::ChatMessage> msgs;
  for (size_t i = 0; i < n_messages; ++i) {
    if (!messages[i].role || !messages[i].content) fail(STRATA_ERR_INVALID_ARGUMENT, "message {} has a NULL field", i);
    msgs.push_back({messages[i].role, messages[i].content});
  }
  return msgs;
}

}  // namespace

STRATA_API strata_status strata_chat_format(const strata_chat_message* messages, size_t n_messages,
                                            int add_generation_prompt, char** out_text) {
  return guarded([&] {
    require(out_text, "out_text");
    const std::string s =
        strata::core::format_chatml(chat_messages(messages, n_messages), add_generation_prompt != 0).text;
    *out_text = copy_out(s.data(), s.size());
  });
}

STRATA_API strata_status strata_chat_tokenize(const strata_model* model, const strata_chat_message* messages,
                                              size_t n_messages, int add_generation_prompt, int content_special,
                                              size_t max_tokens, int32_t** out_tokens, size_t* out_count) {
  return guarded([&] {
    require(model, "model");
    require(out_tokens, "out_tokens");
    require(out_count, "out_count");
    const strata::core::ChatText c =
        strata::core::format_chatml(chat_messages(messages, n_messages), add_generation_prompt != 0);
    const strata::core::Tokenizer& t = model->model->tokenizer();
    const std::vector<int32_t> ids =
        content_special ? t.encode(c.text, true, bound(max_tokens)) : t.encode(c.text, c.markers, bound(max_tokens));
    copy_tokens(ids, max_tokens, out_tokens, out_count);
  });
}

// ---------------------------------------------------------------- session

STRATA_API void strata_session_params_init(strata_session_params* p) {
  if (!p) return;
  std::memset(p, 0, sizeof(*p));
  p->struct_size = sizeof(*p);
  p->kv_type = STRATA_KV_F16;
  p->decode_cpu_share = -1;
  p->peer_share = -1;
  p->helper_share = -1;
}

STRATA_API strata_status strata_session_new(strata_model* model, const strata_session_params* params,
                                            strata_session** out_session) {
  return guarded([&] {
    require(model, "model");
    require(out_session, "out_session");
    const strata_session_params p = params_of(params, "strata_session_params", strata_session_params_init);
    strata::core::SessionOptions o;
    o.n_ctx = p.n_ctx;
    switch (p.kv_type) {
      case STRATA_KV_F16: o.kv_type = strata::core::KvType::F16; break;
      case STRATA_KV_INT8: o.kv_type = strata::core::KvType::Int8; break;
      default: fail(STRATA_ERR_INVALID_ARGUMENT, "unknown kv_type {}", static_cast<int>(p.kv_type));
    }
    o.chunk_size = p.chunk_size;
    if (p.no_pipeline != 0 && p.no_pipeline != 1)
      fail(STRATA_ERR_INVALID_ARGUMENT, "no_pipeline must be 0 or 1, got {}", p.no_pipeline);
    o.pipeline = p.no_pipeline == 0;
    o.decode_cpu_share = p.decode_cpu_share;
    for (const auto& [v, name] : {std::pair{p.peer_f32, "peer_f32"}, std::pair{p.no_helper, "no_helper"},
                                  std::pair{p.helper_exact, "helper_exact"}})
      if (v != 0 && v != 1) fail(STRATA_ERR_INVALID_ARGUMENT, "{} must be 0 or 1, got {}", name, v);
    o.peer_share = p.peer_share;
    o.peer_f32 = p.peer_f32 == 1;
    o.peer_pieces = p.peer_pieces;
    o.helper = p.no_helper == 0;
    o.helper_share = p.helper_share;
    o.helper_exact = p.helper_exact == 1;
    o.progress = progress_of(p.progress, p.progress_user_data);
    auto s = std::make_unique<strata_session>();
    s->session = std::make_unique<strata::core::Session>(model->model, std::move(o));
    *out_session = s.release();
  });
}

STRATA_API void strata_session_free(strata_session* session) { delete session; }

STRATA_API strata_status strata_session_prompt(strata_session* session, const int32_t* tokens, size_t n_tokens) {
  return strata_session_prompt_each(session, tokens, n_tokens, nullptr, nullptr);
}

STRATA_API strata_status strata_session_prompt_each(strata_session* session, const int32_t* tokens, size_t n_tokens,
                                                    strata_logits_fn on_logits, void* user_data) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    require(tokens, "tokens");
    strata::core::LogitsFn each;
    if (on_logits)
      each = [&](int32_t pos, std::span<const float> l) {
        return on_logits(pos, l.data(), static_cast<int32_t>(l.size()), user_data) == 0;
      };
    session->session->prompt(std::span<const int32_t>(tokens, n_tokens), each);
  });
}

STRATA_API strata_status strata_session_decode(strata_session* session, int32_t token, const float** out_logits) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    const std::span<const float> l = session->session->decode(token);
    if (out_logits) *out_logits = l.data();
  });
}

STRATA_API strata_status strata_session_logits(const strata_session* session, const float** out_logits,
                                               int32_t* out_n_vocab) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    require(out_logits, "out_logits");
    const std::span<const float> l = session->session->logits();
    *out_logits = l.data();
    if (out_n_vocab) *out_n_vocab = static_cast<int32_t>(l.size());
  });
}

STRATA_API int32_t strata_session_n_past(const strata_session* session) {
  return session ? session->session->n_past() : 0;
}

STRATA_API strata_status strata_session_reset(strata_session* session) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    session->session->reset();
  });
}

STRATA_API void strata_session_cancel(strata_session* session) {
  if (session) session->session->cancel();
}

STRATA_API strata_status strata_session_get_stats(const strata_session* session, strata_stats* out) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    require(out, "out_stats");
    check_size(out, "strata_stats");
    strata_stats st{};
    const auto& s = session->session->stats();
    st.prompt_tokens = s.prompt_tokens;
    st.prompt_ms = s.prompt_ms;
    st.decode_tokens = s.decode_tokens;
    st.decode_ms = s.decode_ms;
    st.attention_ms = s.phases.attention_ms;
    st.routing_ms = s.phases.routing_ms;
    st.grouping_ms = s.phases.grouping_ms;
    st.stream_wait_ms = s.phases.stream_wait_ms;
    st.expert_ms = s.phases.expert_ms;
    st.combine_ms = s.phases.combine_ms;
    st.transfer_ms = s.phases.transfer_ms;
    st.other_ms = s.phases.other_ms;
    st.bytes_streamed = s.phases.bytes_streamed;
    st.device_bytes = session->session->device_bytes();
    st.peer_share = s.phases.peer_share;
    st.peer_predicted_alone_ms = s.phases.peer_predicted_alone_ms;
    st.peer_predicted_ms = s.phases.peer_predicted_ms;
    st.decode_attention_ms = s.decode_phases.attention_ms;
    st.decode_routing_ms = s.decode_phases.routing_ms;
    st.decode_grouping_ms = s.decode_phases.grouping_ms;
    st.decode_stream_wait_ms = s.decode_phases.stream_wait_ms;
    st.decode_expert_ms = s.decode_phases.expert_ms;
    st.decode_combine_ms = s.decode_phases.combine_ms;
    st.decode_bytes_streamed = s.decode_phases.bytes_streamed;
    fill_out(out, st);
  });
}

STRATA_API strata_status strata_session_expert_counts(const strata_session* session, uint64_t* out_counts,
                                                      size_t capacity, size_t* out_written) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    const auto& c = session->session->expert_counts();
    if (capacity < c.size())
      fail(STRATA_ERR_INVALID_ARGUMENT, "capacity {} is smaller than n_layer * n_expert = {}", capacity, c.size());
    require(out_counts, "out_counts");
    std::copy(c.begin(), c.end(), out_counts);
    if (out_written) *out_written = c.size();
  });
}

// ---------------------------------------------------------------- sampler

STRATA_API void strata_sampler_params_init(strata_sampler_params* p) {
  if (!p) return;
  std::memset(p, 0, sizeof(*p));
  p->struct_size = sizeof(*p);
  const strata::core::SamplerParams d;
  p->temperature = d.temperature;
  p->top_k = d.top_k;
  p->top_p = d.top_p;
  p->min_p = d.min_p;
  p->repeat_penalty = d.repeat_penalty;
  p->repeat_last_n = d.repeat_last_n;
  p->seed = d.seed;
}

STRATA_API strata_status strata_sampler_new(const strata_sampler_params* params, strata_sampler** out_sampler) {
  return guarded([&] {
    require(out_sampler, "out_sampler");
    const strata_sampler_params p = params_of(params, "strata_sampler_params", strata_sampler_params_init);
    strata::core::SamplerParams sp;
    sp.temperature = p.temperature;
    sp.top_k = p.top_k;
    sp.top_p = p.top_p;
    sp.min_p = p.min_p;
    sp.repeat_penalty = p.repeat_penalty;
    sp.repeat_last_n = p.repeat_last_n;
    sp.seed = p.seed;
    auto s = std::make_unique<strata_sampler>();
    s->sampler = std::make_unique<strata::core::Sampler>(sp);
    *out_sampler = s.release();
  });
}

STRATA_API void strata_sampler_free(strata_sampler* sampler) { delete sampler; }

STRATA_API strata_status strata_sampler_sample(strata_sampler* sampler, const float* logits, int32_t n_vocab,
                                               int32_t* out_token) {
  return guarded([&] {
    require(sampler, "sampler");
    require(logits, "logits");
    require(out_token, "out_token");
    if (n_vocab <= 0) fail(STRATA_ERR_INVALID_ARGUMENT, "n_vocab must be > 0, got {}", n_vocab);
    const InUse in_use(sampler, "sampler");
    *out_token = sampler->sampler->sample(std::span<const float>(logits, static_cast<size_t>(n_vocab)));
  });
}

STRATA_API void strata_sampler_accept(strata_sampler* sampler, int32_t token) {
  if (sampler) sampler->sampler->accept(token);
}

STRATA_API strata_status strata_session_sample(strata_session* session, strata_sampler* sampler, int32_t* out_token) {
  return guarded([&] {
    require(session, "session");
    const InUse in_use(session, "session");
    require(sampler, "sampler");
    const InUse sampler_in_use(sampler, "sampler");
    require(out_token, "out_token");
    *out_token = sampler->sampler->sample(session->session->logits());
  });
}

// ------------------------------------------------------------------ tools

STRATA_API void strata_synth_params_init(strata_synth_params* p) {
  if (!p) return;
  std::memset(p, 0, sizeof(*p));
  p->struct_size = sizeof(*p);
  p->shape = "tiny";
  p->quant = "q4_k";
  p->vocab = "small";
  p->seed = 1;
  p->router_skew = 1.0f;
}

STRATA_API strata_status strata_synth_write(const strata_synth_params* params, const char* path) {
  return guarded([&] {
    require(params, "params");
    require(path, "path");
    const strata_synth_params p = params_of(params, "strata_synth_params", strata_synth_params_init);
    strata::core::SynthParams sp;
    if (p.shape) sp.shape = p.shape;
    sp.n_layer = p.n_layer;
    if (p.quant) sp.quant = p.quant;
    if (p.quant_mix) sp.quant_mix = p.quant_mix;
    if (p.vocab) sp.vocab = p.vocab;
    sp.seed = p.seed;
    sp.router_skew = p.router_skew;
    sp.n_threads = p.n_threads;
    sp.progress = progress_of(p.progress, p.progress_user_data);
    strata::core::write_synthetic_model(sp, path);
  });
}

STRATA_API strata_status strata_inspect_file(const char* path, char** out_text) {
  return guarded([&] {
    require(path, "path");
    require(out_text, "out_text");
    const std::string s = strata::core::inspect_file(path);
    *out_text = copy_out(s.data(), s.size());
  });
}

STRATA_API strata_status strata_dequantize_file(const char* in_path, const char* out_path, int32_t n_threads) {
  return guarded([&] {
    require(in_path, "in_path");
    require(out_path, "out_path");
    if (n_threads < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "n_threads must be >= 0, got {}", n_threads);
    strata::core::write_dequantized(in_path, out_path, static_cast<unsigned>(n_threads));
  });
}

}  // extern "C"
