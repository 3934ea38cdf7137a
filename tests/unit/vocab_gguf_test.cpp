// The small built-in vocabulary, and Vocab <-> tokenizer.ggml.* metadata.
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/text/small_vocab.h"
#include "core/text/tokenizer.h"
#include "core/text/vocab_gguf.h"

using namespace strata::core;

namespace {

// The metadata of `w` parsed back (no tensors).
Vocab through_gguf(const GgufWriter& w, std::vector<uint8_t>& storage) {
  storage = w.to_bytes();
  return vocab_from_gguf(GgufFile::from_memory(storage));
}

void check_format_error(const GgufWriter& w, const std::string& key) {
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile f = GgufFile::from_memory(bytes);
  try {
    vocab_from_gguf(f);
    FAIL("no error for " << key);
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.status() == STRATA_ERR_FORMAT);
    CHECK(std::string(e.what()).find(key) != std::string::npos);
  }
}

GgufWriter minimal_writer() {
  GgufWriter w;
  w.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  w.set("tokenizer.ggml.tokens", GgufValue::array(std::vector<std::string>{"a", "b", "ab"}));
  return w;
}

}  // namespace

TEST_CASE("small vocabulary: 512 entries, byte tokens, merges, control tokens") {
  const Vocab v = small_vocab();
  REQUIRE(v.tokens.size() == 512);
  REQUIRE(v.token_types.size() == 512);
  CHECK(v.model == "gpt2");
  CHECK(v.pre == "qwen2");
  CHECK(v.merges.size() >= 253);
  CHECK(v.tokens[0] == "!");       // GPT-2's order: printable bytes first
  CHECK(v.tokens[188] == "\xC4\x80");  // U+0100 stands for byte 0
  CHECK(v.tokens[509] == "<|endoftext|>");
  CHECK(v.tokens[510] == "<|im_start|>");
  CHECK(v.tokens[511] == "<|im_end|>");
  CHECK(v.bos_id == 509);
  CHECK(v.pad_id == 509);
  CHECK(v.eos_id == 511);
  CHECK_FALSE(v.add_bos);
  for (int i = 0; i < 509; ++i) CHECK(v.token_types[i] == kTokenNormal);
  for (int i = 509; i < 512; ++i) CHECK(v.token_types[i] == kTokenControl);
  CHECK(std::set<std::string>(v.tokens.begin(), v.tokens.end()).size() == 512);

  const Tokenizer tok(v);
  std::set<std::string> bytes;
  for (int i = 0; i < 256; ++i) bytes.insert(tok.token_bytes(i));
  CHECK(bytes.size() == 256);
  CHECK(tok.token_bytes(256).size() == 2);  // the first merge joins two bytes

  // Deterministic.
  const Vocab again = small_vocab();
  CHECK(again.tokens == v.tokens);
  CHECK(again.merges == v.merges);
}

TEST_CASE("small vocabulary tokenizes and round-trips text") {
  const Tokenizer tok(small_vocab());
  const std::vector<std::string> texts = {
      "The experts are streamed over the PCIe link while the card computes.",
      "Numbers 12345 and 4.2 TB/s; it's done, isn't it?\n\n  indented\ttab",
      "Unicode: Grüße, 日本語, emoji \xF0\x9F\x99\x82, and a lone byte \xFF here.",
      "",
  };
  for (const std::string& s : texts) {
    const std::vector<int32_t> ids = tok.encode(s, false);
    CHECK(tok.decode(ids) == s);
    for (int32_t id : ids) CHECK(id < 509);
  }
  // English compresses: the merges are used.
  const std::string english = "The library runs large mixture-of-experts language models on graphics cards.";
  CHECK(tok.encode(english, false).size() * 2 < english.size());
  // Control tokens only with parse_special.
  const std::vector<int32_t> chat = tok.encode("<|im_start|>user\nhi<|im_end|>", true);
  REQUIRE(chat.size() >= 3);
  CHECK(chat.front() == 510);
  CHECK(chat.back() == 511);
  for (int32_t id : tok.encode("<|im_end|>", false)) CHECK(id < 509);
}

TEST_CASE("vocab_to_gguf / vocab_from_gguf round trip") {
  const Vocab v = small_vocab();
  GgufWriter w;
  vocab_to_gguf(v, w);
  std::vector<uint8_t> storage;
  const Vocab r = through_gguf(w, storage);
  CHECK(r.model == v.model);
  CHECK(r.pre == v.pre);
  CHECK(r.tokens == v.tokens);
  CHECK(r.token_types == v.token_types);
  CHECK(r.merges == v.merges);
  CHECK(r.bos_id == v.bos_id);
  CHECK(r.eos_id == v.eos_id);
  CHECK(r.pad_id == v.pad_id);
  CHECK(r.unk_id == -1);
  CHECK(r.add_bos == v.add_bos);

  // Stored with the value types a Qwen3 GGUF uses.
  const GgufFile f = GgufFile::from_memory(storage);
  CHECK(f.find("tokenizer.ggml.model")->type() == GgufValueType::String);
  CHECK(f.find("tokenizer.ggml.tokens")->element_type() == GgufValueType::String);
  CHECK(f.find("tokenizer.ggml.token_type")->element_type() == GgufValueType::I32);
  CHECK(f.find("tokenizer.ggml.merges")->element_type() == GgufValueType::String);
  CHECK(f.find("tokenizer.ggml.bos_token_id")->type() == GgufValueType::U32);
  CHECK(f.find("tokenizer.ggml.eos_token_id")->type() == GgufValueType::U32);
  CHECK(f.find("tokenizer.ggml.padding_token_id")->type() == GgufValueType::U32);
  CHECK(f.find("tokenizer.ggml.add_bos_token")->type() == GgufValueType::Bool);
  CHECK_FALSE(f.has("tokenizer.ggml.unknown_token_id"));
  CHECK(f.get_string_array("tokenizer.ggml.merges")[0].find(' ') != std::string::npos);
}

TEST_CASE("vocab_from_gguf: missing optional keys give defaults") {
  std::vector<uint8_t> storage;
  const Vocab r = through_gguf(minimal_writer(), storage);
  CHECK(r.model == "gpt2");
  CHECK(r.pre == "default");
  CHECK(r.tokens.size() == 3);
  CHECK(r.token_types.empty());
  CHECK(r.merges.empty());
  CHECK(r.bos_id == -1);
  CHECK(r.eos_id == -1);
  CHECK(r.pad_id == -1);
  CHECK(r.unk_id == -1);
  CHECK_FALSE(r.add_bos);
}

TEST_CASE("vocab_from_gguf: wrong types and lengths name the key") {
  {
    GgufWriter w;  // no tokenizer at all
    w.set("general.architecture", GgufValue::string("qwen3moe"));
    check_format_error(w, "tokenizer.ggml.model");
  }
  {
    GgufWriter w;
    w.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
    check_format_error(w, "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.model", GgufValue::u32(2));
    check_format_error(w, "tokenizer.ggml.model");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.tokens", GgufValue::array(std::vector<int32_t>{1, 2, 3}));
    check_format_error(w, "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.tokens", GgufValue::empty_array(GgufValueType::String));
    check_format_error(w, "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.token_type", GgufValue::array(std::vector<int32_t>{1, 1}));
    check_format_error(w, "tokenizer.ggml.token_type");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.token_type", GgufValue::array(std::vector<std::string>{"1", "1", "1"}));
    check_format_error(w, "tokenizer.ggml.token_type");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.merges", GgufValue::array(std::vector<uint32_t>{1}));
    check_format_error(w, "tokenizer.ggml.merges");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.eos_token_id", GgufValue::string("2"));
    check_format_error(w, "tokenizer.ggml.eos_token_id");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(3));  // only 3 tokens
    check_format_error(w, "tokenizer.ggml.bos_token_id");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.padding_token_id", GgufValue::i32(-1));
    check_format_error(w, "tokenizer.ggml.padding_token_id");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.add_bos_token", GgufValue::u8(1));
    check_format_error(w, "tokenizer.ggml.add_bos_token");
  }
  {
    GgufWriter w = minimal_writer();
    w.set("tokenizer.ggml.pre", GgufValue::f32(1.0f));
    check_format_error(w, "tokenizer.ggml.pre");
  }
}

TEST_CASE("vocab_to_gguf rejects an inconsistent Vocab") {
  Vocab v = small_vocab();
  GgufWriter w;
  v.token_types.pop_back();
  CHECK_THROWS_AS(vocab_to_gguf(v, w), Error);
  v = small_vocab();
  v.eos_id = 512;
  try {
    vocab_to_gguf(v, w);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
  }
}
