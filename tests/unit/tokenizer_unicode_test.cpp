// UTF-8 decoding and the generated Unicode class tables.
#include <string>

#include "catch.hpp"
#include "core/text/unicode.h"

using namespace strata::core;

TEST_CASE("unicode: classes of sample code points") {
  CHECK(codepoint_class('a') == kCpLetter);
  CHECK(codepoint_class('Z') == kCpLetter);
  CHECK(codepoint_class('5') == kCpNumber);
  CHECK(codepoint_class('_') == kCpOther);
  CHECK(codepoint_class('\'') == kCpOther);
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u,
                      0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    INFO(cp);
    CHECK(codepoint_class(cp) == kCpSpace);
  }
  // Not White_Space although Python's isspace() or JavaScript's \s say so.
  for (uint32_t cp : {0x1Cu, 0x1Fu, 0xFEFFu, 0x180Eu, 0x200Bu}) {
    INFO(cp);
    CHECK(codepoint_class(cp) == kCpOther);
  }
  CHECK(is_letter(0xAA));     // ª, Lo
  CHECK(is_letter(0xE9));     // é
  CHECK(is_letter(0x1C5));    // ǅ, Lt
  CHECK(is_letter(0x2B0));    // ʰ, Lm
  CHECK(is_letter(0x4E2D));   // 中
  CHECK(is_letter(0xAC00));   // 가
  CHECK(is_letter(0x3042));   // あ
  CHECK(is_letter(0x0627));   // ا
  CHECK(is_letter(0x20000));  // CJK extension B
  CHECK(is_number(0xB2));     // ², No
  CHECK(is_number(0x0660));   // ٠, Nd
  CHECK(is_number(0x2164));   // Ⅴ, Nl
  CHECK(is_number(0x1D7D9));  // 𝟙
  CHECK(codepoint_class(0x0301) == kCpOther);   // combining acute, Mn
  CHECK(codepoint_class(0x1F600) == kCpOther);  // emoji
  CHECK(codepoint_class(0x200D) == kCpOther);   // ZWJ
  CHECK(codepoint_class(0xE000) == kCpOther);   // private use
  CHECK(codepoint_class(0x10FFFF) == kCpOther);
  CHECK(codepoint_class(0x110000) == kCpOther);
  CHECK(codepoint_class(kInvalidCodepoint) == kCpOther);
  CHECK(std::string(unicode_tables_version()) == "15.1.0");
}

TEST_CASE("unicode: the range table is sorted and disjoint") {
  for (std::size_t i = 0; i < detail::kCodepointRangeCount; ++i) {
    const auto& r = detail::kCodepointRanges[i];
    CHECK(r.first <= r.last);
    CHECK(r.last <= 0x10FFFF);
    if (i > 0) CHECK(detail::kCodepointRanges[i - 1].last < r.first);
  }
  // The ASCII fast path agrees with the ranges.
  for (uint32_t cp = 0; cp < 128; ++cp) {
    uint8_t slow = 0;
    for (std::size_t i = 0; i < detail::kCodepointRangeCount; ++i) {
      const auto& r = detail::kCodepointRanges[i];
      if (r.first <= cp && cp <= r.last) slow = r.cls;
    }
    CHECK(codepoint_class(cp) == slow);
  }
}

TEST_CASE("utf8: decoding valid sequences") {
  const std::string s = "A\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  CHECK(utf8_decode(s, 0).cp == 'A');
  CHECK(utf8_decode(s, 0).len == 1);
  CHECK(utf8_decode(s, 1).cp == 0xE9);
  CHECK(utf8_decode(s, 1).len == 2);
  CHECK(utf8_decode(s, 3).cp == 0x4E2D);
  CHECK(utf8_decode(s, 3).len == 3);
  CHECK(utf8_decode(s, 6).cp == 0x1F600);
  CHECK(utf8_decode(s, 6).len == 4);
  CHECK(utf8_valid(s));
  CHECK(utf8_valid(""));
  CHECK(utf8_decode("\xF4\x8F\xBF\xBF", 0).cp == 0x10FFFF);
  CHECK(utf8_decode("\xEE\x80\x80", 0).cp == 0xE000);
}

TEST_CASE("utf8: invalid sequences consume one byte") {
  const char* bad[] = {
      "\x80",              // lone continuation
      "\xBF",              //
      "\xC0\x80",          // overlong NUL
      "\xC1\xBF",          // overlong
      "\xE0\x80\xAF",      // overlong 3-byte
      "\xF0\x8F\xBF\xBF",  // overlong 4-byte
      "\xED\xA0\x80",      // surrogate U+D800
      "\xED\xBF\xBF",      // surrogate U+DFFF
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  //
      "\xFF",              //
      "\xE4\xBD",          // truncated
      "\xE4\xBD\x41",      // continuation missing
      "\xC3",              // truncated at end
  };
  for (const char* b : bad) {
    INFO(b);
    const Utf8Char c = utf8_decode(b, 0);
    CHECK(c.cp == kInvalidCodepoint);
    CHECK(c.len == 1);
    CHECK_FALSE(utf8_valid(b));
  }
}

TEST_CASE("utf8: encode then decode every scalar value") {
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x3000 ? 1 : 97)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    utf8_append(s, cp);
    const Utf8Char c = utf8_decode(s, 0);
    INFO(cp);
    REQUIRE(c.cp == cp);
    REQUIRE(c.len == s.size());
  }
  std::string s;
  utf8_append(s, 0x10FFFF);
  CHECK(s == "\xF4\x8F\xBF\xBF");
}

TEST_CASE("printable: control characters and invalid bytes escaped, other UTF-8 unchanged") {
  CHECK(printable("plain text, 中文, é") == "plain text, 中文, é");
  CHECK(printable("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(printable("\x1b[31mred\x07") == "\\x1b[31mred\\x07");
  CHECK(printable(std::string_view("nul\0end", 7)) == "nul\\x00end");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("csi\xc2\x9b" "1m nel\xc2\x85") == "csi\\u009b1m nel\\u0085");  // C1 controls in UTF-8
  CHECK(printable("raw\x9b" "bad\xff\xc3") == "raw\\x9bbad\\xff\\xc3");          // not UTF-8: byte by byte
  CHECK(printable("\xe2\x80\xa8") == "\xe2\x80\xa8");  // U+2028 is not a terminal control: kept
  CHECK(printable("") == "");
}
