// Chat prompts in ChatML, the format of Qwen models.
#pragma once

#include <span>
#include <string>

namespace strata::core {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;
};

// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n" when add_generation_prompt. Roles and contents
// are copied verbatim; encode the result with parse_special = true so the
// markers become control tokens.
std::string format_chatml(std::span<const ChatMessage> messages, bool add_generation_prompt);

}  // namespace strata::core
