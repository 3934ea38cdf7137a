// libFuzzer entry point for the GGUF reader.
#include <cstddef>
#include <cstdint>

#include "gguf_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::test::gguf_fuzz_one(data, size);
  return 0;
}
