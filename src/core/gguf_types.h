// GGUF tensor type ids with their block geometry, private to the GGUF reader/writer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::core {

// Geometry of one GGUF tensor type: `block_size` elements are stored in
// `type_size` bytes. A row of n elements (n a multiple of block_size) takes
// n / block_size * type_size bytes.
struct GgufTypeInfo {
  uint32_t id;
  const char* name;
  int64_t block_size;
  size_t type_size;
};

// The geometry of a GGUF type id, or nullptr for an id this library does not
// know (retired ids such as 4, 5 and 31..33 included).
// The lead will later route this through core/quant.h's find_type_traits; it
// exists so the GGUF code does not depend on the quant module being written.
const GgufTypeInfo* gguf_type_info(uint32_t id);

// Name of a type id for messages: "Q4_K", or "unknown" for an unknown id.
const char* gguf_type_name(uint32_t id);

}  // namespace strata::core
