// ChatML formatting.
#include <vector>

#include "catch.hpp"
#include "core/text/chat.h"

using strata::core::ChatMessage;
using strata::core::format_chatml;

TEST_CASE("chatml: messages and generation prompt") {
  const std::vector<ChatMessage> msgs = {{"system", "You are terse."}, {"user", "Hi\nthere"}};
  CHECK(format_chatml(msgs, false) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi\nthere<|im_end|>\n");
  CHECK(format_chatml(msgs, true) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi\nthere<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(format_chatml({}, true) == "<|im_start|>assistant\n");
  CHECK(format_chatml({}, false).empty());
  const std::vector<ChatMessage> empty_content = {{"assistant", ""}};
  CHECK(format_chatml(empty_content, false) == "<|im_start|>assistant\n<|im_end|>\n");
}
