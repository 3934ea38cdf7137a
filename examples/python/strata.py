"""libstrata from Python through ctypes: the C ABI of strata.h, no compiled extension.

    import strata
    with strata.Model("model.gguf") as model, model.session(n_ctx=2048) as session:
        session.prompt(model.chat_tokenize([{"role": "user", "content": "Hi"}]))
        with strata.Sampler(temperature=0.7, seed=42) as sampler:
            print(model.detokenize(session.generate(sampler, max_tokens=64)))

Every failing call raises strata.Error (strata.Aborted for a cancelled call)
carrying the status and strata_last_error()'s message. Objects are released
when their `with` block ends or close() is called; closing a model closes its
sessions first. As in C, a model may be shared by threads and a session is used
by one thread at a time; Session.cancel() may be called from any thread.

The library is found through $STRATA_LIBRARY (a path), else the system's
search for "strata" (ldconfig, LD_LIBRARY_PATH).
"""

import array
import ctypes
import ctypes.util
import os
import weakref

__all__ = ["Error", "Aborted", "Model", "ModelInfo", "Session", "Sampler", "chat_format", "make_model", "version",
           "library"]

# strata_status values (strata.h).
OK = 0
ABORTED = 1
ERR_INVALID_ARGUMENT = -1
ERR_IO = -2
ERR_FORMAT = -3
ERR_UNSUPPORTED = -4
ERR_OUT_OF_MEMORY = -5
ERR_DEVICE = -6
ERR_CONTEXT_FULL = -7
ERR_STATE = -8
ERR_BUSY = -9
ERR_INTERNAL = -99

KV_F16 = 0
KV_INT8 = 1
TOKEN_BOS, TOKEN_EOS, TOKEN_EOT, TOKEN_PAD = 0, 1, 2, 3

_c_int32_p = ctypes.POINTER(ctypes.c_int32)
_PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p)


# The C structs, field for field as in strata.h (each begins with struct_size,
# which the library checks).
class _ModelParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("devices", ctypes.c_char_p), ("layer_split", ctypes.c_char_p),
                ("vram_budget", ctypes.c_uint64), ("n_threads", ctypes.c_int32), ("peer_device", ctypes.c_int32),
                ("progress", _PROGRESS), ("progress_user_data", ctypes.c_void_p), ("adapt_swaps", ctypes.c_int32),
                ("expert_profile", ctypes.POINTER(ctypes.c_uint64)), ("expert_profile_len", ctypes.c_size_t)]


class _ModelInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("architecture", ctypes.c_char_p), ("name", ctypes.c_char_p)] + \
               [(f, ctypes.c_int32) for f in ("n_vocab", "n_ctx_train", "n_embd", "n_layer", "n_head", "n_head_kv",
                                              "n_expert", "n_expert_used", "n_ff_expert")] + \
               [("n_params", ctypes.c_uint64), ("expert_bytes", ctypes.c_uint64), ("dense_bytes", ctypes.c_uint64),
                ("backend", ctypes.c_char_p), ("device_bytes", ctypes.c_uint64),
                ("n_experts_resident", ctypes.c_int32), ("n_experts_streamed", ctypes.c_int32),
                ("streamed_bytes", ctypes.c_uint64), ("link_gbps", ctypes.c_double)]


class _SessionParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("n_ctx", ctypes.c_int32), ("kv_type", ctypes.c_int),
                ("chunk_size", ctypes.c_int32), ("progress", _PROGRESS), ("progress_user_data", ctypes.c_void_p),
                ("no_pipeline", ctypes.c_int32), ("decode_cpu_share", ctypes.c_double),
                ("peer_share", ctypes.c_double), ("peer_f32", ctypes.c_int32), ("peer_pieces", ctypes.c_int32),
                ("no_helper", ctypes.c_int32), ("helper_share", ctypes.c_double), ("helper_exact", ctypes.c_int32)]


class _SamplerParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("min_p", ctypes.c_float), ("repeat_penalty", ctypes.c_float),
                ("repeat_last_n", ctypes.c_int32), ("seed", ctypes.c_uint64)]


class _ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


class _SynthParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("shape", ctypes.c_char_p), ("n_layer", ctypes.c_int32),
                ("quant", ctypes.c_char_p), ("vocab", ctypes.c_char_p), ("seed", ctypes.c_uint64),
                ("router_skew", ctypes.c_float), ("n_threads", ctypes.c_int32), ("progress", _PROGRESS),
                ("progress_user_data", ctypes.c_void_p), ("quant_mix", ctypes.c_char_p)]


class _Stats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("prompt_tokens", ctypes.c_int64), ("prompt_ms", ctypes.c_double),
                ("decode_tokens", ctypes.c_int64)] + \
               [(f, ctypes.c_double) for f in ("decode_ms", "attention_ms", "routing_ms", "grouping_ms",
                                               "stream_wait_ms", "expert_ms", "combine_ms", "transfer_ms", "other_ms")] + \
               [("bytes_streamed", ctypes.c_uint64), ("device_bytes", ctypes.c_uint64)] + \
               [(f, ctypes.c_double) for f in ("peer_share", "peer_predicted_alone_ms", "peer_predicted_ms")] + \
               [(f, ctypes.c_double) for f in ("decode_attention_ms", "decode_routing_ms", "decode_grouping_ms",
                                               "decode_stream_wait_ms", "decode_expert_ms", "decode_combine_ms")] + \
               [("decode_bytes_streamed", ctypes.c_uint64)]


# name: (restype, argtypes). Handles are opaque void pointers.
_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_S = ctypes.c_int  # strata_status
_SIGNATURES = {
    "strata_version_string": (ctypes.c_char_p, []),
    "strata_last_error": (ctypes.c_char_p, []),
    "strata_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "strata_free": (None, [_P]),
    "strata_model_params_init": (None, [ctypes.POINTER(_ModelParams)]),
    "strata_model_load": (_S, [ctypes.c_char_p, ctypes.POINTER(_ModelParams), _PP]),
    "strata_model_free": (None, [_P]),
    "strata_model_get_info": (_S, [_P, ctypes.POINTER(_ModelInfo)]),
    "strata_model_special_token": (_S, [_P, ctypes.c_int, _c_int32_p]),
    "strata_tokenize": (_S, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(_c_int32_p),
                             ctypes.POINTER(ctypes.c_size_t)]),
    "strata_detokenize": (_S, [_P, _c_int32_p, ctypes.c_size_t, _PP, ctypes.POINTER(ctypes.c_size_t)]),
    "strata_chat_format": (_S, [ctypes.POINTER(_ChatMessage), ctypes.c_size_t, ctypes.c_int, _PP]),
    "strata_chat_tokenize": (_S, [_P, ctypes.POINTER(_ChatMessage), ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_size_t, ctypes.POINTER(_c_int32_p), ctypes.POINTER(ctypes.c_size_t)]),
    "strata_session_params_init": (None, [ctypes.POINTER(_SessionParams)]),
    "strata_session_new": (_S, [_P, ctypes.POINTER(_SessionParams), _PP]),
    "strata_session_free": (None, [_P]),
    "strata_session_prompt": (_S, [_P, _c_int32_p, ctypes.c_size_t]),
    "strata_session_decode": (_S, [_P, ctypes.c_int32, ctypes.POINTER(ctypes.POINTER(ctypes.c_float))]),
    "strata_session_logits": (_S, [_P, ctypes.POINTER(ctypes.POINTER(ctypes.c_float)), _c_int32_p]),
    "strata_session_n_past": (ctypes.c_int32, [_P]),
    "strata_session_reset": (_S, [_P]),
    "strata_session_cancel": (None, [_P]),
    "strata_session_get_stats": (_S, [_P, ctypes.POINTER(_Stats)]),
    "strata_session_sample": (_S, [_P, _P, _c_int32_p]),
    "strata_sampler_params_init": (None, [ctypes.POINTER(_SamplerParams)]),
    "strata_sampler_new": (_S, [ctypes.POINTER(_SamplerParams), _PP]),
    "strata_sampler_free": (None, [_P]),
    "strata_sampler_sample": (_S, [_P, ctypes.POINTER(ctypes.c_float), ctypes.c_int32, _c_int32_p]),
    "strata_sampler_accept": (None, [_P, ctypes.c_int32]),
    "strata_synth_params_init": (None, [ctypes.POINTER(_SynthParams)]),
    "strata_synth_write": (_S, [ctypes.POINTER(_SynthParams), ctypes.c_char_p]),
}

_lib = None


def library():
    """The loaded libstrata (ctypes.CDLL), loaded on first use."""
    global _lib
    if _lib is None:
        path = os.environ.get("STRATA_LIBRARY") or ctypes.util.find_library("strata") or "libstrata.so"
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise OSError(f"cannot load libstrata ({path}): set STRATA_LIBRARY to the library's path ({e})") from e
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = lib
    return _lib


class Error(Exception):
    """A failed strata_* call: status (an int, strata.ERR_*), name ("STRATA_ERR_IO") and message."""

    def __init__(self, status, message):
        self.status = status
        self.name = library().strata_status_name(status).decode()
        self.message = message
        super().__init__(f"{message} ({self.name})")


class Aborted(Error):
    """A call stopped by Session.cancel() (STRATA_ABORTED); the object stays usable."""


def _check(status):
    if status < 0 or status == ABORTED:
        message = library().strata_last_error().decode("utf-8", "replace")
        raise (Aborted if status == ABORTED else Error)(status, message)


def _taken_bytes(ptr, n):
    """Bytes of a buffer the library allocated, which is then freed with strata_free."""
    try:
        return ctypes.string_at(ptr, n)
    finally:
        library().strata_free(ptr)


def _token_array(tokens):
    tokens = list(tokens)
    return (ctypes.c_int32 * len(tokens))(*tokens), len(tokens)


def _encode(text):
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return library().strata_version_string().decode()


def _chat_messages(messages):
    """The C array of messages ({"role", "content"} dicts or (role, content) pairs) and its length."""
    pairs = [(m["role"], m["content"]) if isinstance(m, dict) else tuple(m) for m in messages]
    encoded = [(_encode(r), _encode(c)) for r, c in pairs]
    return (_ChatMessage * len(encoded))(*[_ChatMessage(r, c) for r, c in encoded]), len(encoded)


def chat_format(messages, add_generation_prompt=True):
    """ChatML text of messages ({"role", "content"} dicts or (role, content) pairs); Model.chat_tokenize gives its
    tokens."""
    c_messages, n = _chat_messages(messages)
    out = ctypes.c_void_p()
    _check(library().strata_chat_format(c_messages, n, int(add_generation_prompt), ctypes.byref(out)))
    try:
        return ctypes.string_at(out).decode("utf-8")
    finally:
        library().strata_free(out)


def make_model(path, shape="tiny", layers=0, quant="q4_k", vocab="small", seed=1, router_skew=1.0, n_threads=0,
               quant_mix=""):
    """Writes a synthetic GGUF model (random weights, a real layout) to path, as `strata make-model` does;
    quant_mix: per-tensor types, "PATTERN=TYPE,..." (make-model's --quant-mix)."""
    p = _SynthParams()
    library().strata_synth_params_init(ctypes.byref(p))
    shape_b, quant_b, vocab_b, mix_b = _encode(shape), _encode(quant), _encode(vocab), _encode(quant_mix)
    p.shape, p.n_layer, p.quant, p.vocab, p.quant_mix = shape_b, layers, quant_b, vocab_b, mix_b
    p.seed, p.router_skew, p.n_threads = seed, router_skew, n_threads
    _check(library().strata_synth_write(ctypes.byref(p), _encode(os.fspath(path))))


class _Handle:
    """An owned C object: released once, by close(), the end of a `with` block, or (last resort) collection."""

    _free = None  # name of the strata_*_free function

    def __init__(self, handle):
        self._handle = handle

    @property
    def closed(self):
        return self._handle is None

    def _h(self):
        if self._handle is None:
            raise Error(ERR_STATE, f"this {type(self).__name__.lower()} is closed")
        return self._handle

    def close(self):
        if self._handle is not None:
            handle, self._handle = self._handle, None
            getattr(library(), self._free)(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


class ModelInfo:
    """Hyperparameters of a loaded model (the fields of strata_model_info)."""

    def __init__(self, c):
        for name, _ in _ModelInfo._fields_[1:]:
            value = getattr(c, name)
            setattr(self, name, value.decode() if isinstance(value, bytes) else value)

    def __repr__(self):
        return f"ModelInfo({self.architecture}, {self.n_layer} layers, {self.n_expert} experts, vocab {self.n_vocab})"


class Model(_Handle):
    """A loaded GGUF model. devices: "cpu", "0", "0,1" (None: GPU 0 where there is one, else cpu)."""

    _free = "strata_model_free"

    def __init__(self, path, devices=None, layer_split=None, vram_budget=0, n_threads=0, peer_device=-1):
        super().__init__(None)
        self._sessions = weakref.WeakSet()
        p = _ModelParams()
        library().strata_model_params_init(ctypes.byref(p))
        keep = [_encode(s) if s else None for s in (devices, layer_split)]  # alive during the call
        p.devices, p.layer_split = keep
        p.vram_budget, p.n_threads, p.peer_device = vram_budget, n_threads, peer_device
        handle = ctypes.c_void_p()
        _check(library().strata_model_load(_encode(os.fspath(path)), ctypes.byref(p), ctypes.byref(handle)))
        self._handle = handle.value
        info = _ModelInfo()
        info.struct_size = ctypes.sizeof(_ModelInfo)
        _check(library().strata_model_get_info(self._handle, ctypes.byref(info)))
        self.info = ModelInfo(info)

    def close(self):
        """Frees the model, after closing every session still open on it."""
        for session in list(self._sessions):
            session.close()
        super().close()

    def session(self, n_ctx=0, kv_type=KV_F16, chunk_size=0):
        """A new Session (one conversation's KV cache). n_ctx 0: min(the model's, 4096)."""
        s = Session(self, n_ctx, kv_type, chunk_size)
        self._sessions.add(s)
        return s

    def tokenize(self, text, special=False):
        """Token ids of text (str or UTF-8 bytes); special=True matches control tokens such as <|im_start|>."""
        data = _encode(text)
        ids, n = _c_int32_p(), ctypes.c_size_t()
        _check(library().strata_tokenize(self._h(), data, len(data), int(special), ctypes.byref(ids), ctypes.byref(n)))
        try:
            return list(ids[:n.value])
        finally:
            library().strata_free(ids)

    def chat_tokenize(self, messages, add_generation_prompt=True, content_special=False):
        """Token ids of a ChatML chat (messages as for chat_format). Only the template's markers become control
        tokens; a marker written in a message stays text unless content_special=True."""
        c_messages, n_messages = _chat_messages(messages)
        ids, n = _c_int32_p(), ctypes.c_size_t()
        _check(library().strata_chat_tokenize(self._h(), c_messages, n_messages, int(add_generation_prompt),
                                              int(content_special), 0, ctypes.byref(ids), ctypes.byref(n)))
        try:
            return list(ids[:n.value])
        finally:
            library().strata_free(ids)

    def detokenize_bytes(self, tokens):
        """The exact bytes the tokens stand for (one token may hold part of a UTF-8 character)."""
        arr, n = _token_array(tokens)
        out, out_len = ctypes.c_void_p(), ctypes.c_size_t()
        _check(library().strata_detokenize(self._h(), arr, n, ctypes.byref(out), ctypes.byref(out_len)))
        return _taken_bytes(out, out_len.value)

    def detokenize(self, tokens, errors="replace"):
        """The text of the tokens; bytes that are no valid UTF-8 are handled as `errors` says."""
        return self.detokenize_bytes(tokens).decode("utf-8", errors)

    def special_token(self, which):
        """Id of a special token (strata.TOKEN_EOS, TOKEN_EOT, ...), or -1 when the vocabulary has none."""
        tok = ctypes.c_int32()
        _check(library().strata_model_special_token(self._h(), which, ctypes.byref(tok)))
        return tok.value

    @property
    def eos(self):
        return self.special_token(TOKEN_EOS)

    @property
    def eot(self):
        return self.special_token(TOKEN_EOT)


class Sampler(_Handle):
    """How the next token is chosen; temperature 0 is greedy. The same seed gives the same tokens."""

    _free = "strata_sampler_free"

    def __init__(self, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, repeat_last_n=64, seed=0):
        super().__init__(None)
        p = _SamplerParams()
        library().strata_sampler_params_init(ctypes.byref(p))
        p.temperature, p.top_k, p.top_p, p.min_p = temperature, top_k, top_p, min_p
        p.repeat_penalty, p.repeat_last_n, p.seed = repeat_penalty, repeat_last_n, seed
        handle = ctypes.c_void_p()
        _check(library().strata_sampler_new(ctypes.byref(p), ctypes.byref(handle)))
        self._handle = handle.value

    def sample(self, logits):
        """Picks a token from a sequence of floats (e.g. Session.logits()) and records it."""
        arr = logits if isinstance(logits, array.array) and logits.typecode == "f" else array.array("f", logits)
        buf = (ctypes.c_float * len(arr)).from_buffer(arr)
        tok = ctypes.c_int32()
        _check(library().strata_sampler_sample(self._h(), buf, len(arr), ctypes.byref(tok)))
        return tok.value

    def accept(self, token):
        """Records a token in the history (for the repetition penalty) without sampling."""
        library().strata_sampler_accept(self._h(), token)


class Session(_Handle):
    """One conversation: its KV cache and current logits. Made by Model.session()."""

    _free = "strata_session_free"

    def __init__(self, model, n_ctx=0, kv_type=KV_F16, chunk_size=0):
        super().__init__(None)
        self.model = model  # the model outlives its sessions
        p = _SessionParams()
        library().strata_session_params_init(ctypes.byref(p))
        p.n_ctx, p.kv_type, p.chunk_size = n_ctx, kv_type, chunk_size
        handle = ctypes.c_void_p()
        _check(library().strata_session_new(model._h(), ctypes.byref(p), ctypes.byref(handle)))
        self._handle = handle.value

    def prompt(self, tokens):
        """Appends tokens and runs them (prefill, in chunks); their last logits become current."""
        arr, n = _token_array(tokens)
        _check(library().strata_session_prompt(self._h(), arr, n))

    def decode(self, token):
        """Appends one token and runs it; its logits become current."""
        _check(library().strata_session_decode(self._h(), token, None))

    def logits(self):
        """A copy of the current logits, an array('f') of n_vocab floats."""
        ptr, n = ctypes.POINTER(ctypes.c_float)(), ctypes.c_int32()
        _check(library().strata_session_logits(self._h(), ctypes.byref(ptr), ctypes.byref(n)))
        out = array.array("f")
        out.frombytes(ctypes.string_at(ptr, n.value * ctypes.sizeof(ctypes.c_float)))
        return out

    def sample(self, sampler):
        """A token sampled from the current logits."""
        tok = ctypes.c_int32()
        _check(library().strata_session_sample(self._h(), sampler._h(), ctypes.byref(tok)))
        return tok.value

    def generate(self, sampler, max_tokens):
        """Yields up to max_tokens sampled tokens, each decoded before the next is sampled, until the end-of-turn
        token. Call after prompt(); a context that fills up raises Error (ERR_CONTEXT_FULL)."""
        ends = {t for t in (self.model.eos, self.model.eot) if t >= 0}
        for i in range(max_tokens):
            tok = self.sample(sampler)
            if tok in ends:
                return
            yield tok
            if i + 1 == max_tokens:
                return
            self.decode(tok)

    @property
    def n_past(self):
        """Tokens in the context."""
        return library().strata_session_n_past(self._h())

    def reset(self):
        """Empties the context (and clears a failed state)."""
        _check(library().strata_session_reset(self._h()))

    def cancel(self):
        """Stops a running prompt() or decode() of this session (from any thread): it raises Aborted."""
        handle = self._handle
        if handle is not None:
            library().strata_session_cancel(handle)

    def stats(self):
        """Times of the last prompt and the decodes since, as a dict (the fields of strata_stats)."""
        s = _Stats()
        s.struct_size = ctypes.sizeof(_Stats)
        _check(library().strata_session_get_stats(self._h(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in _Stats._fields_[1:]}
