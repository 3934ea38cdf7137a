// The hand-written Qwen2 split regex, alternative by alternative.
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/text/pretokenize.h"

using strata::core::pretokenize_qwen2;

namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string_view> views;
  pretokenize_qwen2(text, views);
  return {views.begin(), views.end()};
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("qwen2 regex: contractions, any case") {
  CHECK(split("don't") == V{"don", "'t"});
  CHECK(split("DON'T") == V{"DON", "'T"});
  CHECK(split("she'll") == V{"she", "'ll"});
  CHECK(split("SHE'LL") == V{"SHE", "'LL"});
  CHECK(split("She'lL") == V{"She", "'lL"});
  CHECK(split("we're") == V{"we", "'re"});
  CHECK(split("WE'rE") == V{"WE", "'rE"});
  CHECK(split("I've") == V{"I", "'ve"});
  CHECK(split("I'm") == V{"I", "'m"});
  CHECK(split("he'd") == V{"he", "'d"});
  CHECK(split("it's") == V{"it", "'s"});
  // A contraction wins over the letters alternative even inside a word.
  CHECK(split("'rex") == V{"'re", "x"});
  CHECK(split("'still") == V{"'s", "till"});
  CHECK(split("'llama") == V{"'ll", "ama"});
  // Not a contraction: the apostrophe joins the following letters.
  CHECK(split("'r") == V{"'r"});
  CHECK(split("'lx") == V{"'lx"});
  CHECK(split("'x") == V{"'x"});
  CHECK(split("'") == V{"'"});
  // The apostrophe must start the match: a space before it takes the punctuation path.
  CHECK(split(" 's") == V{" '", "s"});
  CHECK(split("''s") == V{"''", "s"});
  // Unicode case folding: U+017F LATIN SMALL LETTER LONG S folds to 's'.
  CHECK(split("'\xC5\xBFt") == V{"'\xC5\xBF", "t"});
  // U+2019 is not an apostrophe for the regex.
  CHECK(split("don\xE2\x80\x99t") == V{"don", "\xE2\x80\x99t"});
}

TEST_CASE("qwen2 regex: letters with one optional leading character") {
  CHECK(split("Hello world") == V{"Hello", " world"});
  CHECK(split("Hello  world") == V{"Hello", " ", " world"});
  CHECK(split("\tfoo") == V{"\tfoo"});
  CHECK(split("\nfoo") == V{"\n", "foo"});
  CHECK(split("\r\nfoo") == V{"\r\n", "foo"});
  CHECK(split("(foo)") == V{"(foo", ")"});
  CHECK(split("a.b") == V{"a", ".b"});
  CHECK(split("...b") == V{"...", "b"});
  CHECK(split("1foo") == V{"1", "foo"});
  CHECK(split("\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C") == V{"\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C"});
  CHECK(split("na\xC3\xAFve caf\xC3\xA9") == V{"na\xC3\xAFve", " caf\xC3\xA9"});
  // U+3000 IDEOGRAPHIC SPACE is neither \r\n nor a letter, so it prefixes a word.
  CHECK(split("\xE3\x80\x80x") == V{"\xE3\x80\x80x"});
  // A combining mark (Mn) is not \p{L}.
  CHECK(split("e\xCC\x81t") == V{"e", "\xCC\x81t"});
}

TEST_CASE("qwen2 regex: one digit per piece") {
  CHECK(split("12345") == V{"1", "2", "3", "4", "5"});
  CHECK(split("x1") == V{"x", "1"});
  CHECK(split(" 1") == V{" ", "1"});
  CHECK(split("3.14") == V{"3", ".", "1", "4"});
  CHECK(split("\xD9\xA1\xD9\xA2") == V{"\xD9\xA1", "\xD9\xA2"});   // Arabic-Indic digits
  CHECK(split("\xC2\xBD\xE2\x85\xAB") == V{"\xC2\xBD", "\xE2\x85\xAB"});  // ½ (No), Ⅻ (Nl)
}

TEST_CASE("qwen2 regex: punctuation runs with their newlines") {
  CHECK(split("!!!") == V{"!!!"});
  CHECK(split(" !!!") == V{" !!!"});
  CHECK(split("  !!") == V{" ", " !!"});
  CHECK(split("!!!\n\nx") == V{"!!!\n\n", "x"});
  CHECK(split("!!\r\nx") == V{"!!\r\n", "x"});
  CHECK(split("!! \nx") == V{"!!", " \n", "x"});
  CHECK(split("\t!") == V{"\t", "!"});
  CHECK(split("\xF0\x9F\x98\x80\xF0\x9F\x98\x80") == V{"\xF0\x9F\x98\x80\xF0\x9F\x98\x80"});
}

TEST_CASE("qwen2 regex: whitespace alternatives") {
  // \s*[\r\n]+ : up to and including the last newline of the run.
  CHECK(split("\n\n\n") == V{"\n\n\n"});
  CHECK(split("a \n b") == V{"a", " \n", " b"});
  CHECK(split("  \n  \n  x") == V{"  \n  \n", " ", " x"});
  CHECK(split("\r") == V{"\r"});
  CHECK(split("a\rb") == V{"a", "\r", "b"});
  CHECK(split("x\r\n\r\n") == V{"x", "\r\n\r\n"});
  // \s+(?!\S) : the whole run at the end, else all but its last character.
  CHECK(split("a   b") == V{"a", "  ", " b"});
  CHECK(split("a   ") == V{"a", "   "});
  CHECK(split("   ") == V{"   "});
  CHECK(split("a \t!") == V{"a", " ", "\t", "!"});
  // \s+ : a single whitespace character before a non-space.
  CHECK(split("\t!") == V{"\t", "!"});
  CHECK(split("a \tb") == V{"a", " ", "\tb"});
  CHECK(split("1 2") == V{"1", " ", "2"});
}

TEST_CASE("qwen2 regex: \\s is Unicode White_Space") {
  // U+0085 NEL is White_Space: the run splits before its last character.
  CHECK(split("a\xC2\x85\xC2\x85" "b") == V{"a", "\xC2\x85", "\xC2\x85" "b"});
  // U+001C and U+FEFF are not: they form a punctuation run.
  CHECK(split("a\x1C\x1C" "b") == V{"a", "\x1C\x1C", "b"});
  CHECK(split("\xEF\xBB\xBF\xEF\xBB\xBFx") == V{"\xEF\xBB\xBF\xEF\xBB\xBF", "x"});
  CHECK(split("a\xE2\x80\xA8\xE2\x80\xA8" "b") == V{"a", "\xE2\x80\xA8", "\xE2\x80\xA8" "b"});
}

TEST_CASE("qwen2 regex: invalid UTF-8 bytes act as punctuation") {
  CHECK(split("\xFF\xFE" "abc") == V{"\xFF\xFE", "abc"});
  CHECK(split("\xFF" "abc") == V{"\xFF" "abc"});
  CHECK(split("a\xC3") == V{"a", "\xC3"});
  CHECK(split(" \x80") == V{" \x80"});
}

TEST_CASE("qwen2 regex: pieces always cover random input exactly") {
  std::mt19937 rng(1234);
  const std::string alphabet[] = {"a", "Z", "'", "s", "1", " ", "\t", "\n", "\r", "!", ".", "\xC3\xA9", "\xE4\xB8\xAD",
                                  "\xC2\x85", "\xE3\x80\x80", "\xF0\x9F\x98\x80", "\xFF", "\xC3", "\x80"};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const int len = int(rng() % 24);
    for (int i = 0; i < len; ++i) s += alphabet[rng() % std::size(alphabet)];
    std::vector<std::string_view> pieces;
    pretokenize_qwen2(s, pieces);
    std::string joined;
    for (auto p : pieces) {
      REQUIRE(!p.empty());
      joined += p;
    }
    REQUIRE(joined == s);
  }
}
