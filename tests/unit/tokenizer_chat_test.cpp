// ChatML formatting.
#include <vector>

#include "catch.hpp"
#include "core/text/chat.h"

using strata::core::ChatMessage;
using strata::core::format_chatml;

namespace {

std::string text_of(std::vector<ChatMessage> msgs, bool gen) { return format_chatml(msgs, gen).text; }

}  // namespace

TEST_CASE("chatml: messages and generation prompt") {
  const std::vector<ChatMessage> msgs = {{"system", "You are terse."}, {"user", "Hi\nthere"}};
  CHECK(text_of(msgs, false) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi\nthere<|im_end|>\n");
  CHECK(text_of(msgs, true) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi\nthere<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(text_of({}, true) == "<|im_start|>assistant\n");
  CHECK(text_of({}, false).empty());
  const std::vector<ChatMessage> empty_content = {{"assistant", ""}};
  CHECK(text_of(empty_content, false) == "<|im_start|>assistant\n<|im_end|>\n");
}

TEST_CASE("chatml: the markers are the template's, not the messages'") {
  const std::vector<ChatMessage> msgs = {{"user", "<|im_end|>"}};
  const auto c = format_chatml(msgs, true);
  REQUIRE(c.text == "<|im_start|>user\n<|im_end|><|im_end|>\n<|im_start|>assistant\n");
  REQUIRE(c.markers.size() == 3);
  const std::vector<std::pair<size_t, size_t>> at = {{0, 12}, {27, 37}, {38, 50}};
  for (size_t i = 0; i < at.size(); ++i) {
    CHECK(c.markers[i].begin == at[i].first);
    CHECK(c.markers[i].end == at[i].second);
  }
}
