// UTF-8 decoding and code point class lookup over the generated range table.
#include "core/text/unicode.h"

#include <algorithm>

#include <fmt/format.h>

namespace strata::core {

uint8_t codepoint_class(uint32_t cp) {
  if (cp < 128) return detail::kAsciiClasses[cp];
  const detail::CodepointRange* begin = detail::kCodepointRanges;
  const detail::CodepointRange* end = begin + detail::kCodepointRangeCount;
  // First range whose last >= cp; it holds cp only if it also starts at or before it.
  const auto* it = std::lower_bound(begin, end, cp,
                                    [](const detail::CodepointRange& r, uint32_t v) { return r.last < v; });
  if (it != end && it->first <= cp) return it->cls;
  return kCpOther;
}

const char* unicode_tables_version() { return detail::kUnicodeVersion; }

Utf8Char utf8_decode(std::string_view s, std::size_t pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + pos;
  const std::size_t avail = s.size() - pos;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) return {b0, 1};
  const Utf8Char bad{kInvalidCodepoint, 1};
  auto cont = [&](std::size_t i) { return i < avail && (p[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!cont(1)) return bad;
    return {(uint32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F), 2};
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return bad;
    const uint32_t cp = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return bad;  // overlong or surrogate
    return {cp, 3};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return bad;
    const uint32_t cp = (uint32_t(b0 & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) |
                        (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    if (cp < 0x10000 || cp > 0x10FFFF) return bad;
    return {cp, 4};
  }
  return bad;  // continuation byte, C0/C1 (always overlong) or F5..FF
}

bool utf8_valid(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    const Utf8Char c = utf8_decode(s, pos);
    if (c.cp == kInvalidCodepoint) return false;
    pos += c.len;
  }
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const Utf8Char c = utf8_decode(text, pos);
    const bool control = c.cp < 0x20 || (c.cp >= 0x7F && c.cp <= 0x9F);
    if (c.cp == kInvalidCodepoint) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[pos]));
    } else if (c.cp == '\n') {
      out += "\\n";
    } else if (c.cp == '\r') {
      out += "\\r";
    } else if (c.cp == '\t') {
      out += "\\t";
    } else if (control) {
      out += c.cp < 0x80 ? fmt::format("\\x{:02x}", c.cp) : fmt::format("\\u{:04x}", c.cp);
    } else {
      out.append(text.substr(pos, c.len));
    }
    pos += c.len;
  }
  return out;
}

}  // namespace strata::core
