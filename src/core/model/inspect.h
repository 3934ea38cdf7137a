// `strata inspect`: a readable report of what a GGUF file holds.
#pragma once

#include <string>

namespace strata::core {

// Architecture, hyperparameters, tensor summary and tokenizer of the file at
// path. Throws Error for an unreadable or corrupt file; an unsupported
// architecture is reported in the text, not thrown.
std::string inspect_file(const std::string& path);

}  // namespace strata::core
