// GGUF test files: valid ones made by the writer, corrupt ones made by hand; shared by the unit tests and the fuzz corpus.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "strata/strata.h"

namespace strata::test {

// Builds GGUF bytes field by field, independently of GgufWriter, so tests can
// write what the writer never would (bad counts, misaligned offsets, ...).
class RawGguf {
 public:
  RawGguf& u8(uint8_t v) { return put(&v, 1); }
  RawGguf& u32(uint32_t v) { return put(&v, 4); }
  RawGguf& u64(uint64_t v) { return put(&v, 8); }
  RawGguf& str(std::string_view s) { return u64(s.size()).put(s.data(), s.size()); }
  RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  // A tensor info record.
  RawGguf& tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset);
  // Zero bytes up to the next multiple of `alignment`, then `n` bytes of data.
  RawGguf& data(uint64_t alignment, size_t n);
  RawGguf& put(const void* p, size_t n);

  std::vector<uint8_t> bytes;
};

// A file that must parse: name (used as the corpus file name) and bytes.
struct GgufSample {
  std::string name;
  std::vector<uint8_t> bytes;
};

// A file that must be rejected with `status` and a message containing `what`.
struct CorruptSample {
  std::string name;
  std::vector<uint8_t> bytes;
  strata_status status;
  std::string what;
};

// A small valid file from the writer: metadata of several types and three
// tensors (F32, Q8_0, Q4_K), version 3 unless asked.
std::vector<uint8_t> small_valid_gguf(uint32_t version = 3);

// A writer holding every metadata type (scalars, strings with odd bytes,
// arrays of each type, empty and nested arrays) and one tensor of every
// tensor type, all with their bytes.
core::GgufWriter all_types_writer(uint32_t version);

// Valid files made by the writer: each version, alignments, every tensor
// type, every metadata type, nested arrays, no tensors, no metadata.
std::vector<GgufSample> valid_gguf_samples();

// Hand-made corrupt files, one per validation rule of the reader.
std::vector<CorruptSample> corrupt_gguf_samples();

// Deterministic pseudo-random bytes (a fixed LCG), for tensor data.
std::vector<uint8_t> test_bytes(size_t n, uint32_t seed);

}  // namespace strata::test
