// gguf_fuzz_one: parse, touch everything, check invariants, and re-encode small files.
#include "gguf_fuzz_target.h"

#include <span>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"

namespace strata::test {
namespace {

using core::Error;
using core::GgufFile;

// A failed invariant: abort so that the fuzzer (or the replay) reports it.
void require(bool ok) {
  if (!ok) __builtin_trap();
}

// Runs one getter; a wrong-type error is an expected outcome, anything else escapes.
template <typename F>
size_t try_get(F&& get) {
  try {
    return static_cast<size_t>(get());
  } catch (const Error& e) {
    require(e.status() == STRATA_ERR_FORMAT);
    return 1;
  }
}

size_t touch_metadata(const GgufFile& f) {
  size_t sink = 0;
  for (const core::GgufKv& kv : f.metadata()) {
    const std::string& k = kv.key;
    require(f.find(k) == &kv.value);
    sink += kv.value.to_string(4).size() + kv.value.array_size();
    sink += try_get([&] { return f.get_u64(k); });
    sink += try_get([&] { return f.get_i32(k); });
    sink += try_get([&] { return f.get_f32(k) != 0.0f; });
    sink += try_get([&] { return f.get_bool(k); });
    sink += try_get([&] { return f.get_string(k).size(); });
    sink += try_get([&] { return f.get_string_array(k).size(); });
    sink += try_get([&] { return f.get_i32_array(k).size(); });
    sink += try_get([&] { return f.get_u32_array(k).size(); });
    sink += try_get([&] { return f.get_f32_array(k).size(); });
  }
  return sink;
}

size_t touch_tensors(const GgufFile& f, size_t size) {
  size_t sink = 0;
  require(f.alignment() != 0 && (f.alignment() & (f.alignment() - 1)) == 0);
  for (const core::GgufTensorInfo& t : f.tensors()) {
    require(f.find_tensor(t.name) == &t);
    require(t.n_dims >= 1 && t.n_dims <= 4 && t.n_elements > 0 && t.n_bytes > 0);
    require(t.offset % f.alignment() == 0);
    require(t.file_offset == f.data_offset() + t.offset && t.file_offset + t.n_bytes <= size);
    // Every byte, so AddressSanitizer sees any tensor range outside the input.
    for (const uint8_t b : t.bytes()) sink += b;
  }
  return sink;
}

// Writes an accepted file back through the writer: the writer must accept
// everything the reader accepted, and writing what was read twice must give
// the same bytes (byte equality also holds for NaN floats).
void check_reencode(const GgufFile& f) {
  // Keep each run fast: the rewrite pads the header and every tensor to the
  // alignment, which a valid file may set as high as 2^31.
  uint64_t total = f.alignment() * (f.tensors().size() + 1);
  for (const core::GgufTensorInfo& t : f.tensors()) total += t.n_bytes;
  if (total > (1u << 20)) return;
  auto rewrite = [](const GgufFile& in) {
    core::GgufWriter w(in.version());
    for (const core::GgufKv& kv : in.metadata()) w.set(kv.key, kv.value);
    for (const core::GgufTensorInfo& t : in.tensors()) {
      w.add_tensor(t.name, {t.dims().begin(), t.dims().end()}, t.type, {t.bytes().begin(), t.bytes().end()});
    }
    return w.to_bytes();
  };
  const std::vector<uint8_t> once = rewrite(f);
  const GgufFile again = GgufFile::from_memory(once);
  require(again.metadata().size() == f.metadata().size() && again.tensors().size() == f.tensors().size());
  require(rewrite(again) == once);
}

}  // namespace

int gguf_fuzz_one(const uint8_t* data, size_t size) {
  try {
    const GgufFile f = GgufFile::from_memory(std::span<const uint8_t>(data, size));
    volatile size_t sink = touch_metadata(f) + touch_tensors(f, size);
    (void)sink;
    check_reencode(f);
    return 0;
  } catch (const Error& e) {
    require(e.status() == STRATA_ERR_FORMAT || e.status() == STRATA_ERR_UNSUPPORTED);
    return 1;
  }
}

}  // namespace strata::test
