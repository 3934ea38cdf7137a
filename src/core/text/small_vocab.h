// The built-in 512-entry byte-level BPE vocabulary for tests (`--vocab small`).
#pragma once

#include "core/text/tokenizer.h"

namespace strata::core {

// Ids 0..255: the 256 byte tokens in GPT-2's byte-to-unicode alphabet, in
// GPT-2's order; 256..508: merges learned by byte-level BPE training over a
// fixed English text (pre-tokenized with the Qwen2 regex), in merge order;
// 509 <|endoftext|> (bos, pad), 510 <|im_start|>, 511 <|im_end|> (eos), all
// control tokens. model "gpt2", pre "qwen2", add_bos false, as Qwen3 has.
// Deterministic: every call returns the same vocabulary.
Vocab small_vocab();

// The text the merges were learned from.
extern const char* const kSmallVocabText;

}  // namespace strata::core
