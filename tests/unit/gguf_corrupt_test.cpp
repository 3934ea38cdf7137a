// Corrupt and truncated GGUF files: each is rejected with the right status and a message naming the field.
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "error_checks.h"
#include "gguf_samples.h"

using strata::core::Error;
using strata::core::GgufFile;

namespace {

// Parses a copy of the first `n` bytes held in a buffer of exactly that size,
// so AddressSanitizer catches any read past the end.
void parse_prefix(const std::vector<uint8_t>& bytes, size_t n) {
  const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
  (void)GgufFile::from_memory(prefix);
}

}  // namespace

TEST_CASE("gguf corrupt samples: status and message") {
  const auto samples = strata::test::corrupt_gguf_samples();
  REQUIRE(samples.size() >= 40);
  for (const auto& s : samples) {
    INFO("sample: " << s.name);
    try {
      // A heap copy of exactly the sample's size: ASan flags any over-read.
      const std::vector<uint8_t> copy = s.bytes;
      (void)GgufFile::from_memory(copy);
      FAIL_CHECK("accepted");
    } catch (const Error& e) {
      CHECK(e.status() == s.status);
      CHECK_MSG_HAS(e, s.what);
      CHECK_MSG_HAS(e, "gguf: ");
      CHECK_MSG_HAS(e, "offset");
    }
  }
}

TEST_CASE("gguf valid samples all parse") {
  for (const auto& s : strata::test::valid_gguf_samples()) {
    INFO("sample: " << s.name);
    const GgufFile f = GgufFile::from_memory(s.bytes);
    CHECK(f.bytes().size() == s.bytes.size());
  }
}

TEST_CASE("gguf truncated at every header byte and every 1/16 of the file") {
  for (const uint32_t version : {3u, 2u}) {
    const std::vector<uint8_t> bytes = strata::test::small_valid_gguf(version);
    const GgufFile whole = GgufFile::from_memory(bytes);
    const size_t data_offset = static_cast<size_t>(whole.data_offset());
    REQUIRE(data_offset < bytes.size());

    std::vector<size_t> cuts;
    for (size_t n = 0; n <= data_offset; ++n) cuts.push_back(n);
    for (size_t k = 1; k < 16; ++k) cuts.push_back(bytes.size() * k / 16);
    cuts.push_back(bytes.size() - 1);
    for (const size_t n : cuts) {
      INFO("version " << version << ", truncated to " << n << " of " << bytes.size() << " bytes");
      try {
        parse_prefix(bytes, n);
        FAIL_CHECK("accepted");
      } catch (const Error& e) {
        CHECK(e.status() == STRATA_ERR_FORMAT);
        CHECK_MSG_HAS(e, "offset");
      }
    }
  }
}

TEST_CASE("gguf every single-byte change of the header is either rejected or parsed, never a crash") {
  // Not a fuzzer, but deterministic and in every test run: flip each header
  // byte to a few values that hit the edges of counts, lengths and types.
  const std::vector<uint8_t> bytes = strata::test::small_valid_gguf(3);
  const size_t header = static_cast<size_t>(GgufFile::from_memory(bytes).data_offset());
  size_t rejected = 0;
  for (size_t i = 0; i < header; ++i) {
    for (const uint8_t v : {uint8_t{0x00}, uint8_t{0x01}, uint8_t{0x7f}, uint8_t{0xff}}) {
      if (bytes[i] == v) continue;
      std::vector<uint8_t> b = bytes;
      b[i] = v;
      try {
        const GgufFile f = GgufFile::from_memory(b);
        for (const auto& t : f.tensors()) CHECK(t.file_offset + t.n_bytes <= b.size());
      } catch (const Error& e) {
        ++rejected;
        CHECK(e.status() != STRATA_ERR_INTERNAL);
      }
    }
  }
  CHECK(rejected > header);  // most changes to counts, lengths and types are caught
}
