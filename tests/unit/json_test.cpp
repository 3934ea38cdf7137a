// The strict JSON parser: values, escapes, numbers, and every kind of bad input.
#include <cmath>
#include <string>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/base/json.h"

using strata::core::Error;
using strata::core::Json;
using strata::core::parse_json;

namespace {

// The message of the Error that parsing `text` throws ("" when it parses).
std::string parse_error(std::string_view text) {
  try {
    parse_json(text);
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_FORMAT);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("json: scalars") {
  CHECK(parse_json("null").is_null());
  CHECK(parse_json(" true ").as_bool() == true);
  CHECK(parse_json("\tfalse\n").as_bool() == false);
  CHECK(parse_json("0").as_number() == 0.0);
  CHECK(parse_json("-0").as_number() == 0.0);
  CHECK(std::signbit(parse_json("-0").as_number()));
  CHECK(parse_json("42").as_int() == 42);
  CHECK(parse_json("-17").as_int() == -17);
  CHECK(parse_json("3.25").as_number() == 3.25);
  CHECK(parse_json("1e3").as_number() == 1000.0);
  CHECK(parse_json("1E+2").as_number() == 100.0);
  CHECK(parse_json("25e-2").as_number() == 0.25);
  CHECK(parse_json("-1.5e-1").as_number() == -0.15);
  CHECK(parse_json("9007199254740993").as_number() == 9007199254740992.0);  // nearest double
  CHECK(parse_json("1e-400").as_number() == 0.0);                          // underflow rounds to zero
  CHECK(parse_json("\"abc\"").as_string() == "abc");
  CHECK(parse_json("\"\"").as_string().empty());
}

TEST_CASE("json: string escapes") {
  CHECK(parse_json(R"("a\"b\\c\/d")").as_string() == "a\"b\\c/d");
  CHECK(parse_json(R"("\b\f\n\r\t")").as_string() == "\b\f\n\r\t");
  CHECK(parse_json(R"("\u0041\u00e9\u4E2D")").as_string() == "A\xC3\xA9\xE4\xB8\xAD");
  CHECK(parse_json(R"("\u0000")").as_string() == std::string(1, '\0'));
  // U+1F600 as a surrogate pair, upper- and lower-case hex.
  CHECK(parse_json(R"("\ud83d\ude00")").as_string() == "\xF0\x9F\x98\x80");
  CHECK(parse_json(R"("\uD83D\uDE00x")").as_string() == "\xF0\x9F\x98\x80x");
  // Raw UTF-8 passes through unchanged.
  CHECK(parse_json("\"\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80\"").as_string() ==
        "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80");
}

TEST_CASE("json: arrays and objects keep order") {
  const Json j = parse_json(R"({"b": [1, "two", [], {}], "a": {"x": null}, "c": true})");
  const auto& obj = j.as_object();
  REQUIRE(obj.size() == 3);
  CHECK(obj[0].key == "b");
  CHECK(obj[1].key == "a");
  CHECK(obj[2].key == "c");
  const auto& arr = j.at("b").as_array();
  REQUIRE(arr.size() == 4);
  CHECK(arr[0].as_int() == 1);
  CHECK(arr[1].as_string() == "two");
  CHECK(arr[2].as_array().empty());
  CHECK(arr[3].as_object().empty());
  CHECK(j.at("a").at("x").is_null());
  CHECK(j.find("zzz") == nullptr);
  CHECK(arr[0].find("x") == nullptr);  // not an object
  CHECK(parse_json("[ ]").as_array().empty());
  CHECK(parse_json("{ }").as_object().empty());
}

TEST_CASE("json: accessors name the types") {
  const Json j = parse_json(R"({"n": 1.5, "s": "x"})");
  CHECK_THROWS_WITH(j.at("s").as_number(), "json: expected number, found string");
  CHECK_THROWS_WITH(j.at("n").as_int(), "json: expected an integer, found 1.5");
  CHECK_THROWS_WITH(j.at("missing"), "json: missing key \"missing\"");
  CHECK_THROWS_WITH(j.as_array(), "json: expected array, found object");
  CHECK_THROWS_WITH(parse_json("1e300").as_int(), "json: expected an integer, found 1e+300");
}

TEST_CASE("json: bad input reports what and where") {
  CHECK(parse_error("") == "json: unexpected end of input at offset 0");
  CHECK(parse_error("  ") == "json: unexpected end of input at offset 2");
  CHECK(parse_error("[1, 2") == "json: unterminated array at offset 5");
  CHECK(parse_error("[1 2]") == "json: expected ',' or ']' at offset 3");
  CHECK(parse_error("[1,]") == "json: unexpected character at offset 3");
  CHECK(parse_error("{\"a\" 1}") == "json: expected ':' at offset 5");
  CHECK(parse_error("{\"a\":1,}") == "json: expected a string key at offset 7");
  CHECK(parse_error("{a:1}") == "json: expected a string key at offset 1");
  CHECK(parse_error("{\"a\":1 \"b\":2}") == "json: expected ',' or '}' at offset 7");
  CHECK(parse_error("{\"a\":1,\"a\":2}") == "json: duplicate key \"a\" in the object at offset 0");
  CHECK(parse_error("tru") == "json: invalid literal at offset 0");
  CHECK(parse_error("nul") == "json: invalid literal at offset 0");
  CHECK(parse_error("True") == "json: unexpected character at offset 0");
  CHECK(parse_error("1 2") == "json: trailing data after the value at offset 2");
  CHECK(parse_error("01") == "json: leading zero in number at offset 1");
  CHECK(parse_error("-") == "json: expected a digit at offset 1");
  CHECK(parse_error("1.") == "json: expected a digit after '.' at offset 2");
  CHECK(parse_error(".5") == "json: unexpected character at offset 0");
  CHECK(parse_error("1e") == "json: expected a digit in the exponent at offset 2");
  CHECK(parse_error("+1") == "json: unexpected character at offset 0");
  CHECK(parse_error("1e400") == "json: number out of range at offset 0");
  CHECK(parse_error("-1e400") == "json: number out of range at offset 0");
  CHECK(parse_error("\"abc") == "json: unterminated string at offset 4");
  CHECK(parse_error("\"a\nb\"") == "json: unescaped control character in string at offset 2");
  CHECK(parse_error("\"\\x\"") == "json: invalid escape in string at offset 1");
  CHECK(parse_error("\"\\u12x4\"") == "json: invalid hex digit in \\u escape at offset 5");
  CHECK(parse_error("\"\\u12") == "json: truncated \\u escape at offset 3");
  CHECK(parse_error("\"\\ud83d\"") == "json: high surrogate without a low surrogate at offset 1");
  CHECK(parse_error("\"\\ud83d\\u0041\"") == "json: high surrogate without a low surrogate at offset 1");
  CHECK(parse_error("\"\\ude00\"") == "json: lone low surrogate in \\u escape at offset 1");
  CHECK(parse_error("\"\xFF\"") == "json: invalid UTF-8 in string at offset 1");
  CHECK(parse_error("\"\xC3\"") == "json: invalid UTF-8 in string at offset 1");
  CHECK(parse_error("\"\xED\xA0\x80\"") == "json: invalid UTF-8 in string at offset 1");  // encoded surrogate
  CHECK(parse_error("\"\xC0\xAF\"") == "json: invalid UTF-8 in string at offset 1");      // overlong
}

TEST_CASE("json: duplicate keys are found in large objects too") {
  std::string text = "{";
  for (int i = 0; i < 100; ++i) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  std::string ok = text;
  ok.back() = '}';
  CHECK(parse_json(ok).as_object().size() == 100);
  text += "\"k57\":0}";
  CHECK(parse_error(text) == "json: duplicate key \"k57\" in the object at offset 0");
}

TEST_CASE("json: nesting depth is bounded") {
  CHECK(parse_json(std::string(512, '[') + std::string(512, ']')).is_array());
  const std::string deep = std::string(513, '[') + std::string(513, ']');
  CHECK(parse_error(deep) == "json: nesting too deep at offset 512");
  // Deep input fails cleanly instead of overflowing the stack.
  CHECK(!parse_error(std::string(100000, '[')).empty());
}

TEST_CASE("json: writing strings round-trips through the parser") {
  const std::string samples[] = {"", "plain", "quote\" backslash\\ slash/", std::string("nul\0x", 5),
                                 "\x01\x1f\b\f\n\r\t", "\xE4\xBD\xA0 \xF0\x9F\x98\x80"};
  for (const std::string& s : samples) {
    std::string out;
    strata::core::json_append_string(out, s);
    CHECK(parse_json(out).as_string() == s);
  }
  std::string out;
  strata::core::json_append_string(out, "a\"\n\x01");
  CHECK(out == "\"a\\\"\\n\\u0001\"");
}
