// ChatML prompt formatting.
#include "core/text/chat.h"

namespace strata::core {

namespace {

void add_marker(ChatText& c, std::string_view marker) {
  c.markers.push_back({c.text.size(), c.text.size() + marker.size()});
  c.text += marker;
}

}  // namespace

ChatText format_chatml(std::span<const ChatMessage> messages, bool add_generation_prompt) {
  ChatText c;
  for (const ChatMessage& m : messages) {
    add_marker(c, "<|im_start|>");
    c.text += m.role;
    c.text += '\n';
    c.text += m.content;
    add_marker(c, "<|im_end|>");
    c.text += '\n';
  }
  if (add_generation_prompt) {
    add_marker(c, "<|im_start|>");
    c.text += "assistant\n";
  }
  return c;
}

}  // namespace strata::core
