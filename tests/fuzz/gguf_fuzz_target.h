// The one function the GGUF fuzzer and the corpus replay both run on an input.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::test {

// Parses `data` as a GGUF file and touches every metadata value and every
// tensor byte. Returns 0 when the file was accepted, 1 when it was rejected
// with strata::core::Error. Any other exception escapes (a bug), and a broken
// invariant of an accepted file traps: both are findings for the fuzzer.
int gguf_fuzz_one(const uint8_t* data, size_t size);

}  // namespace strata::test
