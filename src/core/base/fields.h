// Fields of option lists such as "0,0,cpu", "24,24" or "attn=q8_0,ffn_down_exps=q5_1".
#pragma once

#include <string_view>
#include <vector>

namespace strata::core {

// The fields of text between separators, in order, empty ones included ("a,,b" gives three, "" one). They view
// text's characters.
std::vector<std::string_view> split_fields(std::string_view text, char separator = ',');

// text without the spaces and tabs at its ends.
std::string_view trim_blanks(std::string_view text);

}  // namespace strata::core
