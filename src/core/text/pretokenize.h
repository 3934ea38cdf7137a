// The Qwen2 pre-tokenizer: the split regex of Qwen2/Qwen3, matched by hand.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace strata::core {

// The pattern this file implements, as it appears in tokenizer.json:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Alternatives are tried in order at each position (leftmost-first, as in
// Oniguruma and Rust's regex), \s is Unicode White_Space, \p{L}/\p{N} the
// general categories L*/N*, and (?i) folds with Unicode simple case folding
// (so 'ſ matches 's). Bytes that are not valid UTF-8 count as one character
// each that is none of \s, \p{L}, \p{N}.
extern const char* const kQwen2Pattern;

// End (byte offset) of the match that starts at `pos` < text.size(). Every
// position starts a match of at least one character, so the pieces cover
// the text without gaps.
std::size_t qwen2_match_end(std::string_view text, std::size_t pos);

// Splits text into pre-tokens (views into text) appended to out.
void pretokenize_qwen2(std::string_view text, std::vector<std::string_view>& out);

}  // namespace strata::core
