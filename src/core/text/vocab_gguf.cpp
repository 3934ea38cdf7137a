// tokenizer.ggml.* metadata <-> Vocab.
#include "core/text/vocab_gguf.h"

#include <string_view>

#include "core/base/error.h"

namespace strata::core {

namespace {

constexpr std::string_view kModel = "tokenizer.ggml.model";
constexpr std::string_view kPre = "tokenizer.ggml.pre";
constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kMerges = "tokenizer.ggml.merges";
constexpr std::string_view kBos = "tokenizer.ggml.bos_token_id";
constexpr std::string_view kEos = "tokenizer.ggml.eos_token_id";
constexpr std::string_view kPad = "tokenizer.ggml.padding_token_id";
constexpr std::string_view kUnk = "tokenizer.ggml.unknown_token_id";
constexpr std::string_view kAddBos = "tokenizer.ggml.add_bos_token";

int32_t read_id(const GgufFile& f, std::string_view key, size_t n_tokens) {
  if (!f.has(key)) return -1;
  const int64_t id = f.get_i64(key);
  if (id < 0 || uint64_t(id) >= n_tokens)
    fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' = {} is outside the vocabulary of {} tokens in {}", key, id,
         n_tokens, f.path());
  return int32_t(id);
}

}  // namespace

Vocab vocab_from_gguf(const GgufFile& f) {
  Vocab v;
  v.model = f.get_string(kModel);
  v.pre = f.get_string_or(kPre, "default");
  v.tokens = f.get_string_array(kTokens);
  const size_t n = v.tokens.size();
  if (n == 0) fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' is empty in {}", kTokens, f.path());
  if (f.has(kTokenType)) {
    v.token_types = f.get_i32_array(kTokenType);
    if (v.token_types.size() != n)
      fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' has {} entries but '{}' has {} in {}", kTokenType,
           v.token_types.size(), kTokens, n, f.path());
  }
  if (f.has(kMerges)) v.merges = f.get_string_array(kMerges);
  v.bos_id = read_id(f, kBos, n);
  v.eos_id = read_id(f, kEos, n);
  v.pad_id = read_id(f, kPad, n);
  v.unk_id = read_id(f, kUnk, n);
  v.add_bos = f.get_bool_or(kAddBos, false);
  return v;
}

void vocab_to_gguf(const Vocab& v, GgufWriter& w) {
  const size_t n = v.tokens.size();
  if (!v.token_types.empty() && v.token_types.size() != n)
    fail(STRATA_ERR_INVALID_ARGUMENT, "vocabulary: {} token types for {} tokens", v.token_types.size(), n);
  w.set(std::string(kModel), GgufValue::string(v.model));
  w.set(std::string(kPre), GgufValue::string(v.pre));
  w.set(std::string(kTokens), GgufValue::array(v.tokens));
  w.set(std::string(kTokenType),
        GgufValue::array(v.token_types.empty() ? std::vector<int32_t>(n, kTokenNormal) : v.token_types));
  w.set(std::string(kMerges), GgufValue::array(v.merges));
  auto id = [&](std::string_view key, int32_t value) {
    if (value < 0) return;
    if (size_t(value) >= n)
      fail(STRATA_ERR_INVALID_ARGUMENT, "vocabulary: {} = {} is outside {} tokens", key, value, n);
    w.set(std::string(key), GgufValue::u32(uint32_t(value)));
  };
  // Qwen3 files order them eos, pad, bos.
  id(kEos, v.eos_id);
  id(kPad, v.pad_id);
  id(kBos, v.bos_id);
  id(kUnk, v.unk_id);
  w.set(std::string(kAddBos), GgufValue::boolean(v.add_bos));
}

}  // namespace strata::core
