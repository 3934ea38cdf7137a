/* libstrata: the stable C ABI for Mixture-of-Experts inference beyond GPU memory.
 *
 *   strata_model* model;  strata_session* session;  strata_sampler* sampler;
 *   strata_model_params mp;  strata_model_params_init(&mp);
 *   if (strata_model_load("model.gguf", &mp, &model) != STRATA_OK) puts(strata_last_error());
 *   strata_session_params sp;  strata_session_params_init(&sp);
 *   strata_session_new(model, &sp, &session);
 *   strata_session_prompt(session, tokens, n_tokens);          // prefill, in chunks
 *   strata_sampler_new(NULL, &sampler);                          // greedy
 *   strata_session_sample(session, sampler, &tok);               // from the last logits
 *   while (...) { strata_session_decode(session, tok, NULL); strata_session_sample(session, sampler, &tok); }
 *
 * Thread safety: a model is immutable once loaded and may be shared by any
 * number of threads and sessions; a session and a sampler are used by one
 * thread at a time (strata_session_cancel() excepted, which any thread may call).
 * A call that finds another call running on the same session or sampler (from
 * another thread, or from a callback of that call) returns STRATA_ERR_BUSY and
 * leaves the object to the running call; strata_session_n_past() and the free
 * functions are not checked.
 *
 * Conventions: every fallible call returns a strata_status (STRATA_OK = 0);
 * on failure strata_last_error() holds a message for the calling thread and
 * out-parameters are left untouched. Destroy functions accept NULL. Params
 * structs begin with struct_size, are filled by their *_init function, and
 * only ever grow at their end, each new field growing their size: the library
 * takes the size of this header's struct or of any earlier header's (from the
 * layouts of 2026-12-07 on), gives the fields an older caller lacks their
 * defaults and fills of an output struct only what its size holds. No call
 * aborts the process or throws.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(STRATA_BUILDING_LIBRARY)
#define STRATA_API __attribute__((visibility("default")))
#else
#define STRATA_API
#endif

/* ---------------------------------------------------------------- status */

/* Result of every fallible call: 0 is success, negative an error, positive a
 * non-fatal outcome. The message of the last error on this thread comes from
 * strata_last_error(). */
typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_ABORTED = 1,                /* a callback or strata_session_cancel() stopped the call */
  STRATA_ERR_INVALID_ARGUMENT = -1,  /* NULL pointer, bad option value, wrong struct_size */
  STRATA_ERR_IO = -2,                /* file cannot be opened, read or written */
  STRATA_ERR_FORMAT = -3,            /* corrupt or truncated file */
  STRATA_ERR_UNSUPPORTED = -4,       /* unknown architecture, tensor type, feature */
  STRATA_ERR_OUT_OF_MEMORY = -5,     /* host RAM, pinned memory or VRAM does not suffice */
  STRATA_ERR_DEVICE = -6,            /* missing device or a device/driver failure */
  STRATA_ERR_CONTEXT_FULL = -7,      /* the tokens do not fit in the session's context */
  STRATA_ERR_STATE = -8,             /* call not valid in the object's current state */
  STRATA_ERR_BUSY = -9,              /* another call is running on the same session or sampler */
  STRATA_ERR_INTERNAL = -99,         /* a bug: please report it */
  STRATA_STATUS_MAX_ENUM = 0x7fffffff /* not a status: with the negative ones, any int32 is a valid value of the type */
} strata_status;

/* Version of the library as "MAJOR.MINOR.PATCH". Static storage; never NULL. */
STRATA_API const char* strata_version_string(void);

/* Version numbers of the library. Any argument may be NULL. */
STRATA_API void strata_version(int* out_major, int* out_minor, int* out_patch);

/* The message of the last error returned on the calling thread, or "" when
 * no call on this thread has failed yet. Valid until the next failing
 * strata_* call on this thread. Never NULL. */
STRATA_API const char* strata_last_error(void);

/* A short constant name for a status code ("STRATA_ERR_FORMAT"). Never NULL. */
STRATA_API const char* strata_status_name(strata_status status);

/* Frees memory that a strata_* call returned through an out-parameter
 * documented as "free with strata_free". NULL is accepted. */
STRATA_API void strata_free(void* ptr);

/* A copy of len bytes of untrusted text (a request line, a client's message,
 * metadata) safe to print on one line of a log or a terminal: valid UTF-8
 * passes unchanged but for the control characters (U+0000-U+001F,
 * U+007F-U+009F), written \n, \r, \t, \xHH or \u0080-\u009f, and every
 * byte that is not valid UTF-8, written \xHH. strata_last_error()'s messages
 * are already in this form. *out_text is NUL-terminated; free it with
 * strata_free. Errors: INVALID_ARGUMENT (text NULL with len > 0, out_text NULL). */
STRATA_API strata_status strata_printable(const char* text, size_t len, char** out_text);

/* Parses a byte size as the CLI and server options take it ("12GiB", "800MB",
 * "1.5G", "4096", "64 KiB") into *out_bytes. Units, case-insensitive: B,
 * K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024), KB, MB, GB, TB (powers of
 * 1000); none means bytes; a fraction rounds down to whole bytes. Errors:
 * INVALID_ARGUMENT naming the text (NULL, empty, no number, unknown unit,
 * negative, above 2^64 - 1). */
STRATA_API strata_status strata_parse_size(const char* text, uint64_t* out_bytes);

/* ------------------------------------------------------------ callbacks */

/* Progress of a long call (model load, a long prompt): done of total units.
 * Return 0 to continue, non-zero to stop the call, which then returns
 * STRATA_ABORTED and leaves the object as it was before the call. */
typedef int (*strata_progress_fn)(uint64_t done, uint64_t total, void* user_data);

/* Receives the logits (n_vocab floats, valid only during the call) of one
 * prompt position. Return 0 to continue, non-zero to stop (STRATA_ABORTED). */
typedef int (*strata_logits_fn)(int32_t position, const float* logits, int32_t n_vocab, void* user_data);

/* ---------------------------------------------------------------- model */

typedef struct strata_model strata_model;

typedef enum strata_kv_type {
  STRATA_KV_F16 = 0,
  STRATA_KV_INT8 = 1,
  /* not types: with these two any int32, negative ones too, is a valid value of the type (checked by the library) */
  STRATA_KV_MIN_ENUM = -0x7fffffff - 1,
  STRATA_KV_MAX_ENUM = 0x7fffffff
} strata_kv_type;

/* How a model is placed on devices. Fill with strata_model_params_init(). */
typedef struct strata_model_params {
  size_t struct_size;           /* sizeof(strata_model_params) */
  const char* devices;          /* logical devices: "cpu", "0", "0,1", "0,0", "cpu,cpu";
                                   NULL or "" = GPU 0 when there is one, else "cpu" */
  const char* layer_split;      /* NULL/"" = one stage; "auto"; or counts "24,24" */
  uint64_t vram_budget;         /* bytes per device; 0 = free memory minus a reserve */
  int32_t n_threads;            /* CPU threads; 0 = all hardware threads */
  int32_t peer_device;          /* index into devices of a peer card; -1 = none */
  strata_progress_fn progress;  /* load progress (bytes), may be NULL */
  void* progress_user_data;
  int32_t adapt_swaps;          /* adaptive residency: streamed experts swapped in for resident ones
                                   before each prompt (by decayed usage); 0 disables; default 16 */
  const uint64_t* expert_profile;  /* routed rows per (layer, expert), [layer * n_expert + e] (e.g. from
                                      strata_session_expert_counts of a representative run): the most-used
                                      experts are placed in VRAM first. NULL = uniform order. Copied. */
  size_t expert_profile_len;       /* its length: n_layer * n_expert, else INVALID_ARGUMENT */
} strata_model_params;

/* Fills *params with defaults (devices auto, one stage, budget auto). */
STRATA_API void strata_model_params_init(strata_model_params* params);

/* Loads a GGUF model. params may be NULL for defaults. On success *out_model
 * owns the model: free it with strata_model_free() after every session made
 * from it. Errors: INVALID_ARGUMENT (NULL path/out, bad option), IO, FORMAT
 * (corrupt file), UNSUPPORTED (architecture, tensor type), OUT_OF_MEMORY,
 * DEVICE (device missing or failing), ABORTED (progress callback). */
STRATA_API strata_status strata_model_load(const char* path, const strata_model_params* params,
                                           strata_model** out_model);

/* Frees a model. NULL is accepted. Sessions of the model must be freed first. */
STRATA_API void strata_model_free(strata_model* model);

/* Hyperparameters of a loaded model. */
typedef struct strata_model_info {
  size_t struct_size;        /* set by the caller to sizeof(strata_model_info) */
  const char* architecture;  /* "qwen3moe", "llama"; valid while the model lives */
  const char* name;          /* general.name or ""; valid while the model lives */
  int32_t n_vocab;
  int32_t n_ctx_train;
  int32_t n_embd;
  int32_t n_layer;
  int32_t n_head;
  int32_t n_head_kv;
  int32_t n_expert;
  int32_t n_expert_used;
  int32_t n_ff_expert;
  uint64_t n_params;         /* elements in all tensors */
  uint64_t expert_bytes;     /* bytes of all routed-expert tensors */
  uint64_t dense_bytes;      /* bytes of everything else */
  const char* backend;       /* "cpu" or "cuda"; valid while the model lives */
  uint64_t device_bytes;     /* device memory the weights take (0 on the CPU) */
  /* Expert placement under the VRAM budget (over all stages): */
  int32_t n_experts_resident;    /* (layer, expert) pairs held in device memory */
  int32_t n_experts_streamed;    /* pairs in pinned host memory, streamed through the ring */
  uint64_t streamed_bytes;       /* their bytes: what a prompt chunk that routes to all of them moves */
  double link_gbps;              /* pinned host-to-device rate measured at load, GB/s (1e9 B/s); 0 when
                                    nothing streams. streamed_bytes / link_gbps is a chunk's link floor */
} strata_model_info;

/* Fills *out_info (whose struct_size the caller sets). Errors: INVALID_ARGUMENT. */
STRATA_API strata_status strata_model_get_info(const strata_model* model, strata_model_info* out_info);

/* ------------------------------------------------------------ tokenizer */

typedef enum strata_special_token {
  STRATA_TOKEN_BOS = 0,
  STRATA_TOKEN_EOS = 1,
  STRATA_TOKEN_EOT = 2,  /* end of a chat turn (<|im_end|>), EOS if the vocabulary has none */
  STRATA_TOKEN_PAD = 3,
  /* not token kinds: with these two any int32, negative ones too, is a valid value of the type */
  STRATA_TOKEN_MIN_ENUM = -0x7fffffff - 1,
  STRATA_TOKEN_MAX_ENUM = 0x7fffffff
} strata_special_token;

/* Id of a special token, or -1 when the vocabulary has none (not an error).
 * Errors: INVALID_ARGUMENT. */
STRATA_API strata_status strata_model_special_token(const strata_model* model, strata_special_token which,
                                                    int32_t* out_token);

/* Tokenizes len bytes of UTF-8 text. parse_special != 0 matches control
 * tokens such as "<|im_start|>" in the text. *out_tokens is an array of
 * *out_count ids; free it with strata_free. Errors: INVALID_ARGUMENT. */
STRATA_API strata_status strata_tokenize(const strata_model* model, const char* text, size_t len,
                                         int parse_special, int32_t** out_tokens, size_t* out_count);

/* strata_tokenize with a bound on the work: with max_tokens > 0, a text that
 * needs more than max_tokens tokens gives STRATA_ERR_CONTEXT_FULL (and no
 * ids), found in time bounded by max_tokens, however long the text. Check a
 * prompt against a context this way. max_tokens = 0: no bound.
 * Errors: INVALID_ARGUMENT, CONTEXT_FULL. */
STRATA_API strata_status strata_tokenize_max(const strata_model* model, const char* text, size_t len,
                                             int parse_special, size_t max_tokens, int32_t** out_tokens,
                                             size_t* out_count);

/* Turns ids back into the exact bytes they stand for. *out_text is
 * NUL-terminated, *out_len bytes long (out_len may be NULL); free it with
 * strata_free. Errors: INVALID_ARGUMENT (NULL, id out of range). */
STRATA_API strata_status strata_detokenize(const strata_model* model, const int32_t* tokens, size_t n_tokens,
                                           char** out_text, size_t* out_len);

/* One chat message for strata_chat_format() and strata_chat_tokenize(). */
typedef struct strata_chat_message {
  const char* role;     /* "system", "user", "assistant", ... */
  const char* content;  /* UTF-8 */
} strata_chat_message;

/* Formats messages as ChatML ("<|im_start|>role\ncontent<|im_end|>\n"...),
 * ending with "<|im_start|>assistant\n" when add_generation_prompt != 0.
 * *out_text is NUL-terminated; free it with strata_free. Errors: INVALID_ARGUMENT. */
STRATA_API strata_status strata_chat_format(const strata_chat_message* messages, size_t n_messages,
                                            int add_generation_prompt, char** out_text);

/* The tokens of strata_chat_format()'s text, where only the template's own
 * "<|im_start|>" and "<|im_end|>" become control tokens: a marker spelled in
 * a role or a content stays text, so a message cannot forge another turn.
 * content_special != 0 matches control tokens in roles and contents too
 * (strata_tokenize of the whole text with parse_special, for callers that
 * trust their messages). For messages without markers both give the same
 * ids. max_tokens bounds the work as in strata_tokenize_max (0: no bound).
 * *out_tokens is an array of *out_count ids; free it with strata_free.
 * Errors: INVALID_ARGUMENT, CONTEXT_FULL (more than max_tokens tokens). */
STRATA_API strata_status strata_chat_tokenize(const strata_model* model, const strata_chat_message* messages,
                                              size_t n_messages, int add_generation_prompt, int content_special,
                                              size_t max_tokens, int32_t** out_tokens, size_t* out_count);

/* -------------------------------------------------------------- session */

typedef struct strata_session strata_session;

/* One conversation's state. Fill with strata_session_params_init(). */
typedef struct strata_session_params {
  size_t struct_size;           /* sizeof(strata_session_params) */
  int32_t n_ctx;                /* context length in tokens; 0 = min(model's, 4096) */
  strata_kv_type kv_type;       /* KV cache element type; default STRATA_KV_F16 */
  int32_t chunk_size;           /* prompt tokens per chunk; 0 = the model's: 8192 on one GPU stage whose
                                   experts all fit beside 8192-token buffers, 8192 when experts stream
                                   (where the buffers fit), else 2048; at most n_ctx */
  strata_progress_fn progress;  /* prompt progress (tokens), may be NULL */
  void* progress_user_data;
  int32_t no_pipeline;          /* with several stages: 0 (default) = stage i runs chunk c + 1 while
                                   stage i + 1 runs chunk c; 1 = one chunk at a time through all */
  double decode_cpu_share;      /* GPU decode with streamed experts: share of a step's streamed experts
                                   computed on the CPU while the GPU streams the rest; < 0 (default -1)
                                   = chosen from the link and CPU rates measured at load; > 1 or NaN is an error */
  /* With the model's peer_device (stream-all prompt chunks): */
  double peer_share;            /* the peer's share of the streamed experts, at most 1; < 0 (default -1) = cost
                                   model; NaN is an error */
  int32_t peer_f32;             /* 1 = activations and sums cross as F32; 0 (default) = FP16 */
  int32_t peer_pieces;          /* host-route transfers in pieces: 0 (default) off, 1 = 8, K >= 2 = K
                                   (STRATA_PF_PEER_PIECES overrides) */
  /* Under a layer split, prompts of one chunk (STRATA_PREFILL_HELP, STRATA_PREFILL_HELP_FRAC override): */
  int32_t no_helper;            /* 1 = each stage's idle neighbour does not help it; 0 (default) = helps */
  double helper_share;          /* at most 1; < 0 (default -1) = min(0.45, 0.5 - T / 16384), off below 0.3; NaN
                                   is an error */
  int32_t helper_exact;         /* 1 = helped output equals unhelped bit for bit (rows cross as F32) */
} strata_session_params;

/* Fills *params with defaults. */
STRATA_API void strata_session_params_init(strata_session_params* params);

/* Creates a session of model (which must outlive it); params may be NULL.
 * Free it with strata_session_free(). Errors: INVALID_ARGUMENT (n_ctx
 * negative or beyond the model's training context, chunk_size < 0, unknown
 * kv_type, wrong struct_size), OUT_OF_MEMORY (KV cache), DEVICE. */
STRATA_API strata_status strata_session_new(strata_model* model, const strata_session_params* params,
                                            strata_session** out_session);

/* Frees a session. NULL is accepted. */
STRATA_API void strata_session_free(strata_session* session);

/* Appends tokens to the context and runs them (prefill, in chunks). The
 * logits of the last token become the session's current logits. Errors:
 * INVALID_ARGUMENT (NULL, n_tokens 0, id out of range), CONTEXT_FULL (the
 * tokens do not fit: nothing is appended), ABORTED (cancel or progress
 * callback: the tokens of finished chunks stay in the context, see
 * strata_session_n_past), STATE (session failed earlier: reset it). */
STRATA_API strata_status strata_session_prompt(strata_session* session, const int32_t* tokens, size_t n_tokens);

/* As strata_session_prompt, and calls on_logits for every position of the
 * prompt in order (teacher-forced evaluation). */
STRATA_API strata_status strata_session_prompt_each(strata_session* session, const int32_t* tokens,
                                                    size_t n_tokens, strata_logits_fn on_logits,
                                                    void* user_data);

/* Appends one token and runs it. If out_logits is not NULL it receives the
 * new logits (n_vocab floats, valid until the next call that changes the
 * session). Errors: as strata_session_prompt. */
STRATA_API strata_status strata_session_decode(strata_session* session, int32_t token, const float** out_logits);

/* The current logits (after a prompt or decode): n_vocab floats valid until
 * the next call that changes the session. Errors: STATE when there are none. */
STRATA_API strata_status strata_session_logits(const strata_session* session, const float** out_logits,
                                               int32_t* out_n_vocab);

/* Number of tokens in the context. */
STRATA_API int32_t strata_session_n_past(const strata_session* session);

/* Empties the context (the KV cache is kept allocated) and clears a failed state. */
STRATA_API strata_status strata_session_reset(strata_session* session);

/* Asks a running prompt or decode of this session to stop at the next chunk
 * or layer boundary; it returns STRATA_ABORTED. Safe from any thread. The
 * request is cleared when the next call starts. */
STRATA_API void strata_session_cancel(strata_session* session);

/* Per-phase times of the session's last prompt and its decodes since. */
typedef struct strata_stats {
  size_t struct_size;      /* set by the caller to sizeof(strata_stats) */
  int64_t prompt_tokens;   /* tokens of the last prompt call */
  double prompt_ms;        /* wall time of the last prompt call */
  int64_t decode_tokens;   /* decode calls since the last prompt */
  double decode_ms;        /* their total wall time */
  double attention_ms;     /* the phases of the last prompt, summed over layers */
  double routing_ms;
  double grouping_ms;
  double stream_wait_ms;   /* compute waited for expert blobs to arrive */
  double expert_ms;
  double combine_ms;
  double transfer_ms;      /* stage hand-offs and peer/helper transfers */
  double other_ms;         /* embedding, norms, output head */
  uint64_t bytes_streamed; /* expert bytes moved host->device in the last prompt */
  uint64_t device_bytes;   /* device memory the session holds: KV cache and scratch (0 on the CPU) */
  /* Prompt chunks shared with a peer_device or a stage helper: the largest share, and the cost model's
     times of those chunks alone and shared with a second card of the same kind on its own link. */
  double peer_share;
  double peer_predicted_alone_ms;
  double peer_predicted_ms;
  /* The decode steps since the last prompt, summed over steps. A step replayed as one CUDA graph (all experts
     resident) is not split into phases and adds nothing here. decode_grouping_ms includes the host round trip
     for the router's choices of a layer with streamed experts. */
  double decode_attention_ms;
  double decode_routing_ms;
  double decode_grouping_ms;
  double decode_stream_wait_ms;
  double decode_expert_ms;
  double decode_combine_ms;
  uint64_t decode_bytes_streamed;
} strata_stats;

/* Fills *out_stats (whose struct_size the caller sets). */
STRATA_API strata_status strata_session_get_stats(const strata_session* session, strata_stats* out_stats);

/* How often each (layer, expert) was routed to since the session was made
 * or reset: out_counts[layer * n_expert + expert], capacity entries at most.
 * *out_written (may be NULL) receives n_layer * n_expert. Errors:
 * INVALID_ARGUMENT (capacity too small). */
STRATA_API strata_status strata_session_expert_counts(const strata_session* session, uint64_t* out_counts,
                                                      size_t capacity, size_t* out_written);

/* -------------------------------------------------------------- sampler */

typedef struct strata_sampler strata_sampler;

/* How the next token is chosen. temperature <= 0 is greedy (the others then
 * have no effect). Fill with strata_sampler_params_init(). */
typedef struct strata_sampler_params {
  size_t struct_size;     /* sizeof(strata_sampler_params) */
  float temperature;      /* default 0 (greedy) */
  int32_t top_k;          /* 0 = off */
  float top_p;            /* 1 = off */
  float min_p;            /* 0 = off */
  float repeat_penalty;   /* 1 = off */
  int32_t repeat_last_n;  /* tokens of history the penalty looks at; default 64 */
  uint64_t seed;          /* random seed: the same seed gives the same tokens */
} strata_sampler_params;

/* Fills *params with defaults (greedy). */
STRATA_API void strata_sampler_params_init(strata_sampler_params* params);

/* Creates a sampler; params may be NULL (greedy). Free with
 * strata_sampler_free(). Errors: INVALID_ARGUMENT (negative top_k, top_p
 * outside (0,1], min_p outside [0,1), repeat_penalty <= 0). */
STRATA_API strata_status strata_sampler_new(const strata_sampler_params* params, strata_sampler** out_sampler);

/* Frees a sampler. NULL is accepted. */
STRATA_API void strata_sampler_free(strata_sampler* sampler);

/* Picks a token from n_vocab logits and records it in the sampler's history
 * (for the repetition penalty). Errors: INVALID_ARGUMENT. */
STRATA_API strata_status strata_sampler_sample(strata_sampler* sampler, const float* logits, int32_t n_vocab,
                                               int32_t* out_token);

/* Records a token in the history without sampling (e.g. prompt tokens). */
STRATA_API void strata_sampler_accept(strata_sampler* sampler, int32_t token);

/* Samples from the session's current logits. Errors: STATE (no logits), INVALID_ARGUMENT. */
STRATA_API strata_status strata_session_sample(strata_session* session, strata_sampler* sampler,
                                               int32_t* out_token);

/* ---------------------------------------------------------------- tools */

/* A synthetic model for tests and benchmarks (random weights with the real
 * layout of a shape). Fill with strata_synth_params_init(). */
typedef struct strata_synth_params {
  size_t struct_size;       /* sizeof(strata_synth_params) */
  const char* shape;        /* "tiny", "qwen3-30b-a3b", "qwen3-235b-a22b" */
  int32_t n_layer;          /* 0 = the shape's own */
  const char* quant;        /* weight type of the big matrices: "q4_k" (default), "q2_k", "q3_k", "q5_k", "q6_k",
                               "iq4_xs", "iq4_nl", "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s",
                               "iq1_m", "mxfp4",
                               "nvfp4", "q4_0", "q4_1", "q5_0", "q5_1", "q1_0", "q2_0", "q8_0", "f16", "bf16",
                               "f32" */
  const char* vocab;        /* "small" (default; byte-level, 512 entries) or "qwen3" (the real Qwen3 vocabulary) or a path to a tokenizer.json */
  uint64_t seed;
  float router_skew;        /* Zipf exponent of expert popularity; 0 = uniform. Default 1.0 */
  int32_t n_threads;        /* 0 = all hardware threads */
  strata_progress_fn progress;  /* bytes written, may be NULL */
  void* progress_user_data;
  const char* quant_mix;    /* per-tensor types over quant, as llama-quantize's --tensor-type: "PATTERN=TYPE,..."
                               with PATTERN an ECMAScript regex searched in each weight matrix's name (token_embd,
                               attention, experts, output; norms and routers stay F32); the first match sets the
                               type, and every rule must match. NULL or "" = none */
} strata_synth_params;

/* Fills *params with defaults (tiny, q4_k, small vocabulary, seed 1, skew 1). */
STRATA_API void strata_synth_params_init(strata_synth_params* params);

/* Writes a synthetic GGUF model to path. Errors: INVALID_ARGUMENT (unknown
 * shape or quant, a bad quant_mix rule), IO, UNSUPPORTED (qwen3 vocabulary without zlib). */
STRATA_API strata_status strata_synth_write(const strata_synth_params* params, const char* path);

/* A human-readable report on a GGUF file: architecture, hyperparameters,
 * tensor summary (count and bytes per type, expert bytes per layer),
 * tokenizer. *out_text is NUL-terminated; free it with strata_free. Errors:
 * INVALID_ARGUMENT, IO, FORMAT. */
STRATA_API strata_status strata_inspect_file(const char* path, char** out_text);

/* Writes to out_path a copy of the GGUF file at in_path with every tensor of
 * a type this library dequantizes (F16, BF16 and every quantized type the
 * CPU backend runs) stored as F32, general.file_type 0, and everything else
 * unchanged: the quantized model's weights for a forward pass in float
 * arithmetic, to judge numerics against. n_threads 0 = all hardware threads. Errors: INVALID_ARGUMENT
 * (also out_path naming the input), IO, FORMAT, UNSUPPORTED (a tensor type
 * without a dequantizer, named with the tensor). */
STRATA_API strata_status strata_dequantize_file(const char* in_path, const char* out_path, int32_t n_threads);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_H */
