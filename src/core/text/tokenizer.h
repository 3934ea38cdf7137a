// The vocabulary (GGUF tokenizer.ggml.* in memory), its Hugging Face importer,
// and the byte-level BPE tokenizer with the Qwen2 pre-tokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::core {

// GGUF token types (tokenizer.ggml.token_type).
enum TokenType : int32_t {
  kTokenNormal = 1,
  kTokenUnknown = 2,
  kTokenControl = 3,
  kTokenUserDefined = 4,
  kTokenUnused = 5,
  kTokenByte = 6,
};

// A byte range [begin, end) of a text.
struct TextRange {
  std::size_t begin = 0, end = 0;
};

// Everything a tokenizer needs, laid out as GGUF stores it.
struct Vocab {
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre: "qwen2"
  // Token text as GGUF stores it: byte-level BPE tokens in the GPT-2
  // byte-to-unicode alphabet ("Ġthe"), added tokens as their raw text.
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // TokenType per token; empty = all normal
  std::vector<std::string> merges;   // "left right", rank = index
  int32_t bos_id = -1, eos_id = -1, pad_id = -1, unk_id = -1;
  bool add_bos = false;
};

// Reads a Hugging Face tokenizer.json, or tokenizer.json.gz (needs zlib), and
// when present the tokenizer_config.json next to it for eos/pad/bos and
// add_bos_token. Added tokens become control (special) or user-defined
// tokens; ids missing from the vocabulary become unused "[PAD<id>]" tokens.
// Only byte-level BPE with the Qwen2 split regex is accepted; anything else
// throws Error(STRATA_ERR_UNSUPPORTED); unreadable or malformed files throw
// Error(STRATA_ERR_IO / STRATA_ERR_FORMAT).
Vocab load_hf_tokenizer(const std::string& path);

// Byte-level BPE over a Vocab. Immutable after construction; encode/decode
// are const and safe to call from many threads at once.
//
// Normalization: none. The Hugging Face tokenizer applies NFC first; this
// one does not, so decode(encode(s)) == s for every byte string s. On text
// that is already NFC (nearly all text) both give the same ids.
class Tokenizer {
 public:
  // Throws Error(STRATA_ERR_UNSUPPORTED) unless model == "gpt2" and
  // pre == "qwen2"; Error(STRATA_ERR_FORMAT) for an inconsistent vocabulary
  // (sizes, ids out of range, merges naming unknown tokens, a missing byte token).
  explicit Tokenizer(Vocab vocab);
  ~Tokenizer();
  // A moved-from tokenizer may only be destroyed or assigned to.
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Token ids for UTF-8 text (invalid UTF-8 is tokenized byte by byte and
  // still round-trips). User-defined tokens are always recognized in the
  // text, control tokens only when parse_special; the longest one wins at
  // each position. Adds no BOS (the caller does, see add_bos()).
  // With max_tokens, stops once the text needs more than max_tokens tokens
  // and returns max_tokens + 1 ids of no meaning (check the size only): the
  // work is bounded by max_tokens (times the longest token), not by the text.
  std::vector<int32_t> encode(std::string_view utf8, bool parse_special, std::size_t max_tokens = SIZE_MAX) const;
  // Like encode(utf8, true), except that a control token is matched only where
  // it lies wholly inside one of `control` (ranges of utf8, in order, not
  // overlapping); elsewhere its text is plain text. Plain text runs across
  // range boundaries, so text whose control tokens all lie inside the ranges
  // gives the same ids as encode(utf8, true). Throws
  // Error(STRATA_ERR_INVALID_ARGUMENT) for ranges out of order or past the end.
  std::vector<int32_t> encode(std::string_view utf8, std::span<const TextRange> control,
                              std::size_t max_tokens = SIZE_MAX) const;

  // Concatenated token_bytes() of the ids; throws
  // Error(STRATA_ERR_INVALID_ARGUMENT) for an id outside [0, n_vocab()).
  std::string decode(std::span<const int32_t> ids) const;

  // Token text as stored in the vocabulary (GGUF form, "Ġthe").
  std::string_view piece(int32_t id) const;
  // The exact bytes this token stands for in text (" the"); control,
  // user-defined and unused tokens stand for their own text. May be a
  // partial UTF-8 sequence.
  std::string token_bytes(int32_t id) const;

  int32_t n_vocab() const;
  int32_t token_type(int32_t id) const;
  bool is_control(int32_t id) const;
  int32_t bos() const;  // -1 when the vocabulary has none
  int32_t eos() const;
  int32_t pad() const;
  bool add_bos() const;
  // Id of the token whose stored text is exactly `piece` (the lowest id if
  // several share it).
  std::optional<int32_t> find(std::string_view piece) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::core
