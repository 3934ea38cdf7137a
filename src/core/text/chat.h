// Chat prompts in ChatML, the format of Qwen models.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/text/tokenizer.h"

namespace strata::core {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;
};

// A rendered chat and where its template put control tokens.
struct ChatText {
  std::string text;
  std::vector<TextRange> markers;  // each "<|im_start|>" and "<|im_end|>" of the template
};

// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n" when add_generation_prompt. Roles and contents
// are copied verbatim. Encoding text with markers as the control ranges
// (Tokenizer::encode) makes only the template's markers control tokens;
// a marker spelled inside a role or a content stays text.
ChatText format_chatml(std::span<const ChatMessage> messages, bool add_generation_prompt);

}  // namespace strata::core
