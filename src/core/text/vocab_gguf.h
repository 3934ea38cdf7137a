// The vocabulary to and from GGUF metadata (tokenizer.ggml.*).
#pragma once

#include "core/gguf/gguf_writer.h"
#include "core/text/tokenizer.h"

namespace strata::core {

// Reads tokenizer.ggml.{model, pre, tokens, token_type, merges,
// bos_token_id, eos_token_id, padding_token_id, unknown_token_id,
// add_bos_token}. model and tokens are required; a missing optional key
// gives the Vocab default (pre "default", token types all normal, no merges,
// ids -1, add_bos false). A key of the wrong type, an array whose length does
// not match tokens, or an id outside the vocabulary throws
// Error(STRATA_ERR_FORMAT) naming the key.
Vocab vocab_from_gguf(const GgufFile& file);

// Writes the same keys the way a Qwen3 GGUF stores them: strings, token_type
// as an i32 array (all normal when v.token_types is empty), merges as "a b"
// strings, ids as u32 (ids < 0 are left out), add_bos_token as bool.
void vocab_to_gguf(const Vocab& v, GgufWriter& writer);

}  // namespace strata::core
