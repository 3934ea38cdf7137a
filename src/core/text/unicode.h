// UTF-8 decoding and the Unicode code point classes the tokenizer's regex needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::core {

// Class bits of a code point: \p{L}, \p{N} and \s (the White_Space property).
enum CodepointClass : uint8_t {
  kCpOther = 0,
  kCpLetter = 1,
  kCpNumber = 2,
  kCpSpace = 4,
};

// Class bits of `cp` (kCpOther for unassigned, out-of-range and invalid values).
uint8_t codepoint_class(uint32_t cp);
inline bool is_letter(uint32_t cp) { return (codepoint_class(cp) & kCpLetter) != 0; }
inline bool is_number(uint32_t cp) { return (codepoint_class(cp) & kCpNumber) != 0; }
inline bool is_white_space(uint32_t cp) { return (codepoint_class(cp) & kCpSpace) != 0; }

// Unicode version of the generated tables ("15.1.0").
const char* unicode_tables_version();

// Marks a byte that does not start a valid UTF-8 sequence; no code point has it.
inline constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFFu;

struct Utf8Char {
  uint32_t cp;  // kInvalidCodepoint when the bytes at pos are not valid UTF-8
  uint32_t len; // bytes consumed: 1..4; exactly 1 for invalid input
};

// Decodes the character at s[pos] (pos < s.size()). Strict: overlong forms,
// surrogates, values above U+10FFFF and truncated sequences are invalid and
// consume one byte, so every byte string splits deterministically.
Utf8Char utf8_decode(std::string_view s, std::size_t pos);

// True when the whole string is valid UTF-8.
bool utf8_valid(std::string_view s);

// Appends the UTF-8 encoding of cp (<= 0x10FFFF, not a surrogate).
void utf8_append(std::string& out, uint32_t cp);

// The text as printable characters on one line, for logs, error messages and terminals: valid UTF-8 passes
// unchanged but for the control characters (U+0000-U+001F, U+007F-U+009F), written \n, \r, \t, \xHH or
// \u0080-\u009f, and every byte that is not valid UTF-8, written \xHH. What an input holds can then neither
// start a log line nor send a terminal escape.
std::string printable(std::string_view text);

namespace detail {
struct CodepointRange {
  uint32_t first, last;
  uint8_t cls;
};
extern const CodepointRange kCodepointRanges[];
extern const std::size_t kCodepointRangeCount;
extern const uint8_t kAsciiClasses[128];
extern const char* const kUnicodeVersion;
}  // namespace detail

}  // namespace strata::core
