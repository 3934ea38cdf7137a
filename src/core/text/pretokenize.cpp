// The Qwen2 pre-tokenizer regex, one alternative after the other, by hand.
#include "core/text/pretokenize.h"

#include <cstdint>

#include "core/text/unicode.h"

namespace strata::core {

const char* const kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

namespace {

// One character of the text: its code point, byte length and class bits.
struct Ch {
  uint32_t cp;
  uint32_t len;
  uint8_t cls;
  bool end;  // past the end of the text: matches no character class
};

Ch char_at(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return {0, 0, kCpOther, true};
  const Utf8Char c = utf8_decode(text, pos);
  const uint8_t cls = c.cp == kInvalidCodepoint ? uint8_t(kCpOther) : codepoint_class(c.cp);
  return {c.cp, c.len, cls, false};
}

bool is_other(const Ch& c) { return !c.end && c.cls == kCpOther; }
bool is_newline(const Ch& c) { return !c.end && (c.cp == '\r' || c.cp == '\n'); }

// Lower-case ASCII letter that cp matches under (?i): simple case folding
// maps only A-Z and U+017F LATIN SMALL LETTER LONG S (to 's') onto the
// letters the contractions use; 0 for anything else.
char fold_contraction_letter(const Ch& c) {
  if (c.end) return 0;
  if (c.cp >= 'A' && c.cp <= 'Z') return char(c.cp - 'A' + 'a');
  if (c.cp >= 'a' && c.cp <= 'z') return char(c.cp);
  if (c.cp == 0x17F) return 's';
  return 0;
}

// Alternative 1: (?i:'s|'t|'re|'ve|'m|'ll|'d); returns 0 when it fails.
std::size_t match_contraction(std::string_view text, std::size_t pos) {
  const std::size_t p1 = pos + 1;
  const Ch c1 = char_at(text, p1);
  const char f1 = fold_contraction_letter(c1);
  if (f1 == 's' || f1 == 't' || f1 == 'm' || f1 == 'd') return p1 + c1.len;
  if (f1 != 'r' && f1 != 'v' && f1 != 'l') return 0;
  const std::size_t p2 = p1 + c1.len;
  const Ch c2 = char_at(text, p2);
  const char f2 = fold_contraction_letter(c2);
  if ((f1 == 'l' && f2 == 'l') || (f1 != 'l' && f2 == 'e')) return p2 + c2.len;
  return 0;
}

// End of the run of characters starting at pos whose class satisfies pred.
template <typename Pred>
std::size_t run_end(std::string_view text, std::size_t pos, Pred pred) {
  for (;;) {
    const Ch c = char_at(text, pos);
    if (c.end || !pred(c)) return pos;
    pos += c.len;
  }
}

std::size_t letters_end(std::string_view text, std::size_t pos) {
  return run_end(text, pos, [](const Ch& c) { return (c.cls & kCpLetter) != 0; });
}

// ' ?[^\s\p{L}\p{N}]+[\r\n]*' continued from the first non-space "other" character.
std::size_t others_then_newlines_end(std::string_view text, std::size_t pos) {
  pos = run_end(text, pos, [](const Ch& c) { return c.cls == kCpOther; });
  return run_end(text, pos, [](const Ch& c) { return c.cp == '\r' || c.cp == '\n'; });
}

}  // namespace

std::size_t qwen2_match_end(std::string_view text, std::size_t pos) {
  const Ch c0 = char_at(text, pos);
  const std::size_t p1 = pos + c0.len;

  if (c0.cp == '\'') {
    if (const std::size_t end = match_contraction(text, pos)) return end;
  }

  // [^\r\n\p{L}\p{N}]?\p{L}+ : the optional character is tried first (greedy).
  if (c0.cls & kCpLetter) return letters_end(text, p1);
  const Ch c1 = char_at(text, p1);
  if (!(c0.cls & kCpNumber) && !is_newline(c0) && !c1.end && (c1.cls & kCpLetter)) {
    return letters_end(text, p1 + c1.len);
  }

  // \p{N}: one digit at a time.
  if (c0.cls & kCpNumber) return p1;

  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  if (c0.cp == ' ' && is_other(c1)) return others_then_newlines_end(text, p1);
  if (is_other(c0)) return others_then_newlines_end(text, pos);

  // Only White_Space is left. Walk its run once, noting what the last
  // three alternatives need.
  std::size_t end = pos;           // end of the whitespace run
  std::size_t last_start = pos;    // start of its last character
  std::size_t newline_end = 0;     // end of its last \r or \n, 0 if none
  for (;;) {
    const Ch c = char_at(text, end);
    if (c.end || !(c.cls & kCpSpace)) break;
    last_start = end;
    end += c.len;
    if (c.cp == '\r' || c.cp == '\n') newline_end = end;
  }
  // \s*[\r\n]+ : \s* backtracks to the last newline of the run.
  if (newline_end != 0) return newline_end;
  // \s+(?!\S) : all of the run at the end of the text, else all but its
  // last character, which then starts the next piece.
  if (end == text.size()) return end;
  if (last_start > pos) return last_start;
  // \s+
  return end;
}

void pretokenize_qwen2(std::string_view text, std::vector<std::string_view>& out) {
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = qwen2_match_end(text, pos);
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace strata::core
