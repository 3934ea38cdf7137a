// Byte-level BPE on small hand-made vocabularies: merge order, added tokens,
// decoding, validation errors, and the Hugging Face importer.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/base/json.h"
#include "core/text/tokenizer.h"

using namespace strata::core;

namespace {

// GPT-2's byte -> code point mapping, written out independently of the library.
std::string byte_char(int b) {
  int cp = b;
  if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
    int n = 0;
    for (int i = 0; i < b; ++i)
      if (!((i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(char(cp));
  } else {
    s.push_back(char(0xC0 | (cp >> 6)));
    s.push_back(char(0x80 | (cp & 0x3F)));
  }
  return s;
}

// 256 byte tokens (ids 0..255 in byte order) plus `extra`.
Vocab small_vocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  Vocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_char(b));
  for (const auto& t : extra) v.tokens.push_back(t);
  v.token_types.assign(v.tokens.size(), kTokenNormal);
  v.merges = merges;
  return v;
}

int32_t id_of(const Tokenizer& t, const std::string& piece) {
  const auto id = t.find(piece);
  REQUIRE(id.has_value());
  return *id;
}

strata_status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return STRATA_OK;
}

}  // namespace

TEST_CASE("bpe: the byte alphabet of the test matches GPT-2's known points") {
  CHECK(byte_char(' ') == "\xC4\xA0");   // Ġ U+0120
  CHECK(byte_char('\n') == "\xC4\x8A");  // Ċ U+010A
  CHECK(byte_char(0) == "\xC4\x80");     // Ā U+0100
  CHECK(byte_char(0x7F) == "\xC4\xA1");  // ġ U+0121
  CHECK(byte_char(0xAD) == "\xC5\x83");  // Ń U+0143
  CHECK(byte_char(0xE9) == "\xC3\xA9");  // é itself
}

TEST_CASE("bpe: lowest rank merges first, wherever it is") {
  const Tokenizer t(small_vocab({"bc", "ab", "abc"}, {"b c", "a b", "a bc"}));
  // (b,c) outranks (a,b), so "abc" is a+bc -> abc, never ab+c.
  CHECK(t.encode("abc", false) == std::vector<int32_t>{id_of(t, "abc")});
  CHECK(t.encode("ab", false) == std::vector<int32_t>{id_of(t, "ab")});
  CHECK(t.encode("abab", false) == std::vector<int32_t>{id_of(t, "ab"), id_of(t, "ab")});
  CHECK(t.encode("cab", false) == std::vector<int32_t>{'c', id_of(t, "ab")});
}

TEST_CASE("bpe: equal ranks merge left to right") {
  const Tokenizer t(small_vocab({"aa", "aaaa"}, {"a a", "aa aa"}));
  const int32_t aa = id_of(t, "aa"), aaaa = id_of(t, "aaaa");
  CHECK(t.encode("aaa", false) == std::vector<int32_t>{aa, 'a'});
  CHECK(t.encode("aaaa", false) == std::vector<int32_t>{aaaa});
  CHECK(t.encode("aaaaa", false) == std::vector<int32_t>{aaaa, 'a'});
  CHECK(t.encode("aaaaaa", false) == std::vector<int32_t>{aaaa, aa});
  // A long word runs the heap path far and still follows the same rule.
  std::vector<int32_t> expect(250, aaaa);
  expect.push_back(aa);
  CHECK(t.encode(std::string(1002, 'a'), false) == expect);
}

TEST_CASE("bpe: a merge made later can outrank one queued earlier") {
  // "c d" (0) then "x cd" (1) beats "x c" (2) although (x,c) was queued first.
  const Tokenizer t(small_vocab({"cd", "xcd", "xc"}, {"c d", "x cd", "x c"}));
  CHECK(t.encode("xcd", false) == std::vector<int32_t>{id_of(t, "xcd")});
  CHECK(t.encode("xc", false) == std::vector<int32_t>{id_of(t, "xc")});
}

TEST_CASE("bpe: pre-tokens are merged separately and spaces are Ġ") {
  const std::string G = "\xC4\xA0";
  const Tokenizer t(small_vocab({G + "a", "ab", G + "ab"}, {G + " a", "a b", G + "a b"}));
  CHECK(t.encode("ab ab", false) == std::vector<int32_t>{id_of(t, "ab"), id_of(t, G + "ab")});
  // "b a" are two words ("b", " a"), so no "b Ġ" merge is ever considered.
  CHECK(t.encode("b a", false) == std::vector<int32_t>{'b', id_of(t, G + "a")});
  CHECK(t.token_bytes(id_of(t, G + "ab")) == " ab");
  CHECK(t.decode(t.encode("ab ab", false)) == "ab ab");
}

TEST_CASE("bpe: added tokens, longest first, and control only with parse_special") {
  Vocab v = small_vocab({"<c>", "<c>x", "<u>"}, {});
  v.token_types[256] = kTokenControl;
  v.token_types[257] = kTokenControl;
  v.token_types[258] = kTokenUserDefined;
  v.eos_id = 256;
  const Tokenizer t(std::move(v));
  using I = std::vector<int32_t>;
  CHECK(t.encode("a<c>b", true) == I{'a', 256, 'b'});
  CHECK(t.encode("a<c>b", false) == I{'a', '<', 'c', '>', 'b'});
  CHECK(t.encode("<c>x", true) == I{257});
  CHECK(t.encode("<c><c>", true) == I{256, 256});
  CHECK(t.encode("<u>", false) == I{258});
  CHECK(t.encode("<u>", true) == I{258});
  CHECK(t.encode("<<u>>", false) == I{'<', 258, '>'});
  CHECK(t.encode("<c", true) == I{'<', 'c'});
  CHECK(t.decode(I{'a', 256, 'b', 257, 258}) == "a<c>b<c>x<u>");
  CHECK(t.is_control(256));
  CHECK_FALSE(t.is_control(258));
  CHECK(t.token_type(258) == kTokenUserDefined);
  CHECK(t.eos() == 256);
  CHECK(t.bos() == -1);
  CHECK(t.piece(257) == "<c>x");
}

TEST_CASE("bpe: control tokens only inside the given ranges") {
  Vocab v = small_vocab({"<c>", "<u>"}, {});
  v.token_types[256] = kTokenControl;
  v.token_types[257] = kTokenUserDefined;
  const Tokenizer t(std::move(v));
  using I = std::vector<int32_t>;
  using R = std::vector<TextRange>;
  // "<c>a<c><u>": the first "<c>" is in a range, the second is not, "<u>" is
  // user-defined and matched anywhere.
  CHECK(t.encode("<c>a<c><u>", R{{0, 3}}) == I{256, 'a', '<', 'c', '>', 257});
  CHECK(t.encode("<c>a<c><u>", R{{0, 3}, {4, 7}}) == t.encode("<c>a<c><u>", true));
  CHECK(t.encode("<c>a<c><u>", R{}) == t.encode("<c>a<c><u>", false));
  // A range must hold the whole token.
  CHECK(t.encode("<c>", R{{0, 2}}) == I{'<', 'c', '>'});
  CHECK(t.encode("<c>", R{{1, 3}}) == I{'<', 'c', '>'});
  CHECK(t.encode("x<c>", R{{0, 4}}) == I{'x', 256});
  CHECK_THROWS_WITH(t.encode("<c>", R{{0, 4}}), Catch::Contains("past the text"));
  CHECK_THROWS_WITH(t.encode("<c><c>", R{{3, 6}, {0, 3}}), Catch::Contains("out of order"));
  CHECK_THROWS_WITH(t.encode("<c>", R{{2, 1}}), Catch::Contains("out of order"));
}

TEST_CASE("bpe: token text, bytes and lookups") {
  const Tokenizer t(small_vocab({"\xC4\xA0\xC4\x8A"}, {"\xC4\xA0 \xC4\x8A"}));
  CHECK(t.n_vocab() == 257);
  CHECK(t.piece(' ') == "\xC4\xA0");
  CHECK(t.token_bytes(' ') == " ");
  CHECK(t.token_bytes(0xE9) == "\xE9");  // one byte of a UTF-8 sequence
  CHECK(t.token_bytes(256) == " \n");
  CHECK(t.find("\xC4\xA0\xC4\x8A") == 256);
  CHECK_FALSE(t.find("nope").has_value());
  CHECK(t.encode("", true).empty());
  CHECK(t.decode({}).empty());
}

TEST_CASE("bpe: invalid ids are rejected") {
  const Tokenizer t(small_vocab({}, {}));
  const std::vector<int32_t> bad1{1, 256}, bad2{-1};
  CHECK(status_of([&] { t.decode(bad1); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { t.decode(bad2); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { t.piece(256); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { t.token_bytes(-5); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { t.is_control(1 << 30); }) == STRATA_ERR_INVALID_ARGUMENT);
}

TEST_CASE("bpe: unsupported or inconsistent vocabularies") {
  auto build = [](Vocab v) { return status_of([&] { Tokenizer t(std::move(v)); }); };
  Vocab v = small_vocab({"ab"}, {"a b"});
  CHECK(build(v) == STRATA_OK);

  Vocab bad = v;
  bad.model = "llama";
  CHECK(build(bad) == STRATA_ERR_UNSUPPORTED);
  bad = v;
  bad.pre = "llama-bpe";
  CHECK(build(bad) == STRATA_ERR_UNSUPPORTED);
  bad = v;
  bad.pre = "default";
  CHECK(build(bad) == STRATA_ERR_UNSUPPORTED);
  bad = v;
  bad.token_types.pop_back();
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.token_types[3] = 9;
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.eos_id = 257;
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.merges = {"a c"};  // result "ac" is not a token
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.merges = {"ab"};
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.merges = {"a b c"};
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.tokens[' '] = "space";  // no token for byte 0x20 any more
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  bad = v;
  bad.tokens.clear();
  bad.token_types.clear();
  CHECK(build(bad) == STRATA_ERR_FORMAT);
  // No token types at all means every token is normal.
  bad = v;
  bad.token_types.clear();
  CHECK(build(bad) == STRATA_OK);
}

// --- Hugging Face importer on small synthetic files -------------------------

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("strata_tok_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";

// A tokenizer.json with the 256 byte tokens, "ab" (id 256, merged from "a b"),
// a gap at 257 and added tokens at 258 (special) and 259 (not special).
std::string hf_json(const std::string& merges, const std::string& regex = kQwen2Regex) {
  std::string vocab;
  for (int b = 0; b < 256; ++b) {
    json_append_string(vocab, byte_char(b));
    vocab += ":" + std::to_string(b) + ",";
  }
  vocab += "\"ab\":256";
  return R"({"version":"1.0","added_tokens":[
      {"id":258,"content":"<|end|>","special":true},{"id":259,"content":"<tool>","special":false}],
    "normalizer":{"type":"NFC"},
    "pre_tokenizer":{"type":"Sequence","pretokenizers":[
      {"type":"Split","pattern":{"Regex":")" + regex + R"("},"behavior":"Isolated","invert":false},
      {"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},
    "decoder":{"type":"ByteLevel"},
    "model":{"type":"BPE","unk_token":null,"byte_fallback":false,"vocab":{)" +
         vocab + R"(},"merges":)" + merges + "}}";
}

}  // namespace

TEST_CASE("hf import: vocabulary, added tokens, gaps and merges") {
  TempDir dir;
  for (const std::string merges : {R"([["a","b"]])", R"(["a b"])"}) {
    const Vocab v = load_hf_tokenizer(dir.write("tokenizer.json", hf_json(merges)));
    CHECK(v.model == "gpt2");
    CHECK(v.pre == "qwen2");
    REQUIRE(v.tokens.size() == 260);
    CHECK(v.tokens[97] == "a");
    CHECK(v.tokens[32] == "\xC4\xA0");
    CHECK(v.tokens[256] == "ab");
    CHECK(v.tokens[257] == "[PAD257]");
    CHECK(v.token_types[257] == kTokenUnused);
    CHECK(v.tokens[258] == "<|end|>");
    CHECK(v.token_types[258] == kTokenControl);
    CHECK(v.tokens[259] == "<tool>");
    CHECK(v.token_types[259] == kTokenUserDefined);
    CHECK(v.token_types[97] == kTokenNormal);
    CHECK(v.merges == std::vector<std::string>{"a b"});
    CHECK(v.eos_id == -1);  // no tokenizer_config.json
    const Tokenizer t(v);
    CHECK(t.encode("ab<|end|><tool>", true) == std::vector<int32_t>{256, 258, 259});
  }
}

TEST_CASE("hf import: special ids from tokenizer_config.json") {
  TempDir dir;
  const std::string path = dir.write("tokenizer.json", hf_json(R"([["a","b"]])"));
  dir.write("tokenizer_config.json",
            R"({"add_bos_token": true, "bos_token": {"content": "<tool>", "special": false},
                "eos_token": "<|end|>", "pad_token": "ab"})");
  const Vocab v = load_hf_tokenizer(path);
  CHECK(v.eos_id == 258);
  CHECK(v.bos_id == 259);
  CHECK(v.pad_id == 256);
  CHECK(v.add_bos);
  dir.write("tokenizer_config.json", R"({"eos_token": "<|missing|>"})");
  CHECK(status_of([&] { load_hf_tokenizer(path); }) == STRATA_ERR_FORMAT);
  dir.write("tokenizer_config.json", R"({"eos_token": )");
  CHECK(status_of([&] { load_hf_tokenizer(path); }) == STRATA_ERR_FORMAT);
}

TEST_CASE("hf import: unsupported and broken files") {
  TempDir dir;
  auto load = [&](const std::string& text) {
    return status_of([&] { load_hf_tokenizer(dir.write("tokenizer.json", text)); });
  };
  CHECK(load(hf_json(R"([["a","b"]])")) == STRATA_OK);
  CHECK(load(hf_json(R"([["a","b"]])", R"(\\s+)")) == STRATA_ERR_UNSUPPORTED);
  std::string wordpiece = hf_json(R"([["a","b"]])");
  wordpiece.replace(wordpiece.find(R"("model":{"type":"BPE")"), 21, R"("model":{"type":"WPC")");
  CHECK(load(wordpiece) == STRATA_ERR_UNSUPPORTED);
  std::string fallback = hf_json(R"([["a","b"]])");
  fallback.replace(fallback.find(R"("byte_fallback":false)"), 21, R"("byte_fallback":true )");
  CHECK(load(fallback) == STRATA_ERR_UNSUPPORTED);
  std::string nfkc = hf_json(R"([["a","b"]])");
  nfkc.replace(nfkc.find(R"({"type":"NFC"})"), 14, R"({"type":"NFKC"})");
  CHECK(load(nfkc) == STRATA_ERR_UNSUPPORTED);
  std::string lstrip = hf_json(R"([["a","b"]])");
  lstrip.replace(lstrip.find(R"("special":true)"), 14, R"("special":true,"lstrip":true)");
  CHECK(load(lstrip) == STRATA_ERR_UNSUPPORTED);
  CHECK(load(hf_json(R"([["a","b","c"]])")) == STRATA_ERR_FORMAT);
  CHECK(load(hf_json(R"([["a b","c"]])")) == STRATA_ERR_FORMAT);
  CHECK(load("{\"model\": ") == STRATA_ERR_FORMAT);
  CHECK(load("[]") == STRATA_ERR_FORMAT);
  CHECK(status_of([&] { load_hf_tokenizer((dir.path / "absent.json").string()); }) == STRATA_ERR_IO);
#if defined(STRATA_HAVE_ZLIB)
  CHECK(status_of([&] { load_hf_tokenizer((dir.path / "absent.json.gz").string()); }) == STRATA_ERR_IO);
#else
  CHECK(status_of([&] { load_hf_tokenizer((dir.path / "absent.json.gz").string()); }) == STRATA_ERR_UNSUPPORTED);
#endif
}
