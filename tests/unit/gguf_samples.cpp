// The GGUF test files: writer-made valid samples and the hand-made corrupt set.
#include <cctype>
#include "gguf_samples.h"

#include <cstring>
#include <limits>

#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/quant/quant.h"

namespace strata::test {

using core::GgufValue;
using core::GgufValueType;
using core::GgufWriter;

RawGguf& RawGguf::put(const void* p, size_t n) {
  const size_t at = bytes.size();
  bytes.resize(at + n);
  if (n > 0) std::memcpy(bytes.data() + at, p, n);
  return *this;
}

RawGguf& RawGguf::tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
  str(name).u32(static_cast<uint32_t>(dims.size()));
  for (const uint64_t d : dims) u64(d);
  return u32(type).u64(offset);
}

RawGguf& RawGguf::data(uint64_t alignment, size_t n) {
  while (bytes.size() % alignment != 0) u8(0);
  const std::vector<uint8_t> d = test_bytes(n, 7);
  return put(d.data(), d.size());
}

std::vector<uint8_t> test_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  uint32_t x = seed * 2654435761u + 1;
  for (uint8_t& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

namespace {

constexpr uint32_t kF32 = 0, kQ8_0 = 8, kQ4_K = 12;

GgufWriter small_writer(uint32_t version) {
  GgufWriter w(version);
  w.set("general.architecture", GgufValue::string("test"));
  w.set("general.name", GgufValue::string("small"));
  w.set("test.count", GgufValue::u32(7));
  w.set("test.scale", GgufValue::f32(0.5f));
  w.set("test.flag", GgufValue::boolean(true));
  w.set("test.tokens", GgufValue::array<std::string>({"a", "bc", ""}));
  w.set("test.scores", GgufValue::array<float>({1.0f, -2.5f, 0.0f}));
  w.set("test.nested", GgufValue::array_of_arrays({GgufValue::array<uint32_t>({1, 2}),
                                                   GgufValue::array<std::string>({"x"})}));
  w.add_tensor("a.f32", {8, 2}, kF32, test_bytes(8 * 2 * 4, 1));
  w.add_tensor("b.q8_0", {64, 2}, kQ8_0, test_bytes(2 * 2 * 34, 2));
  w.add_tensor("c.q4_k", {256, 2}, kQ4_K, test_bytes(2 * 144, 3));
  return w;
}

// Every tensor type the table knows, one block each, plus a 4-D tensor.
void add_every_tensor_type(GgufWriter& w) {
  for (uint32_t id = 0; id < 64; ++id) {
    const core::TypeTraits* info = core::find_type_traits(id);
    if (info == nullptr) continue;
    std::string upper = info->name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    w.add_tensor("t." + upper, {info->block_size}, id, test_bytes(info->type_size, id));
  }
  w.add_tensor("t.4d", {2, 3, 1, 2}, kF32, test_bytes(2 * 3 * 2 * 4, 99));
}

// A file of header and tensor infos whose data section holds `data_bytes`.
struct RawTensor {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type;
  uint64_t offset;
};

std::vector<uint8_t> raw_file(const std::vector<RawTensor>& tensors, size_t data_bytes) {
  RawGguf r;
  r.header(3, tensors.size(), 1).str("general.architecture").u32(8).str("test");
  for (const RawTensor& t : tensors) r.tensor(t.name, t.dims, t.type, t.offset);
  r.data(32, data_bytes);
  return r.bytes;
}

// A file with one metadata entry of value type `type` whose value is `value`
// (already encoded) and no tensors.
std::vector<uint8_t> one_kv(std::string_view key, uint32_t type, const RawGguf& value) {
  RawGguf r;
  r.header(3, 0, 1).str(key).u32(type);
  r.put(value.bytes.data(), value.bytes.size());
  return r.bytes;
}

std::vector<uint8_t> with_alignment(const RawGguf& value, uint32_t type) {
  RawGguf r;
  r.header(3, 1, 1).str("general.alignment").u32(type);
  r.put(value.bytes.data(), value.bytes.size());
  r.tensor("w", {8}, kF32, 0).data(64, 32);
  return r.bytes;
}

}  // namespace

std::vector<uint8_t> small_valid_gguf(uint32_t version) { return small_writer(version).to_bytes(); }

core::GgufWriter all_types_writer(uint32_t version) {
  GgufWriter w(version);
  w.set("u8", GgufValue::u8(255));
  w.set("i8", GgufValue::i8(-128));
  w.set("u16", GgufValue::u16(65535));
  w.set("i16", GgufValue::i16(-32768));
  w.set("u32", GgufValue::u32(4000000000u));
  w.set("i32", GgufValue::i32(-2000000000));
  w.set("f32", GgufValue::f32(-1.25e-7f));
  w.set("f32.inf", GgufValue::f32(std::numeric_limits<float>::infinity()));
  w.set("bool.true", GgufValue::boolean(true));
  w.set("bool.false", GgufValue::boolean(false));
  w.set("string", GgufValue::string("h\xc3\xa9llo \xe2\x9c\x93"));
  w.set("string.empty", GgufValue::string(""));
  w.set("string.nul", GgufValue::string(std::string("a\0b", 3)));
  w.set("u64", GgufValue::u64(std::numeric_limits<uint64_t>::max()));
  w.set("i64", GgufValue::i64(std::numeric_limits<int64_t>::min()));
  w.set("f64", GgufValue::f64(3.141592653589793));
  w.set("arr.u8", GgufValue::array<uint8_t>({0, 1, 255}));
  w.set("arr.i8", GgufValue::array<int8_t>({-1, 0, 127}));
  w.set("arr.u16", GgufValue::array<uint16_t>({1, 65535}));
  w.set("arr.i16", GgufValue::array<int16_t>({-32768, 5}));
  w.set("arr.u32", GgufValue::array<uint32_t>({1, 2, 3}));
  w.set("arr.i32", GgufValue::array<int32_t>({-1, 151643, 0}));
  w.set("arr.f32", GgufValue::array<float>({0.25f, -1e30f}));
  w.set("arr.bool", GgufValue::array<bool>({true, false, true}));
  w.set("arr.string", GgufValue::array<std::string>({"", "<|im_start|>", "\xc4\xa0the", ""}));
  w.set("arr.u64", GgufValue::array<uint64_t>({0, std::numeric_limits<uint64_t>::max()}));
  w.set("arr.i64", GgufValue::array<int64_t>({std::numeric_limits<int64_t>::min(), 1}));
  w.set("arr.f64", GgufValue::array<double>({1e-300, -0.5}));
  w.set("arr.empty.u32", GgufValue::empty_array(GgufValueType::U32));
  w.set("arr.empty.string", GgufValue::empty_array(GgufValueType::String));
  w.set("arr.empty.nested", GgufValue::empty_array(GgufValueType::Array));
  w.set("arr.nested", GgufValue::array_of_arrays({GgufValue::array<int32_t>({1, -2}),
                                                  GgufValue::array<std::string>({"ab", ""}),
                                                  GgufValue::empty_array(GgufValueType::F32)}));
  w.set("arr.nested2", GgufValue::array_of_arrays({GgufValue::array_of_arrays({GgufValue::array<uint8_t>({9})}),
                                                   GgufValue::empty_array(GgufValueType::Array)}));
  add_every_tensor_type(w);
  return w;
}

std::vector<GgufSample> valid_gguf_samples() {
  std::vector<GgufSample> out;
  out.push_back({"valid_small_v3", small_valid_gguf(3)});
  out.push_back({"valid_small_v2", small_valid_gguf(2)});
  out.push_back({"valid_all_types_v3", all_types_writer(3).to_bytes()});
  out.push_back({"valid_all_types_v2", all_types_writer(2).to_bytes()});
  for (const uint32_t a : {1u, 8u, 64u, 4096u}) {
    GgufWriter w = small_writer(3);
    w.set("general.alignment", GgufValue::u32(a));
    out.push_back({"valid_align" + std::to_string(a), w.to_bytes()});
  }
  {
    GgufWriter w = small_writer(3);  // alignment stored as u64: read with widening
    w.set("general.alignment", GgufValue::u64(128));
    out.push_back({"valid_align_u64", w.to_bytes()});
  }
  {
    GgufWriter w(3);
    w.set("general.architecture", GgufValue::string("none"));
    out.push_back({"valid_no_tensors", w.to_bytes()});
  }
  out.push_back({"valid_empty", GgufWriter(3).to_bytes()});
  {
    // The largest alignment a u32 can hold, with no tensor to place: valid,
    // and far beyond the end of the file (found by the fuzzer).
    RawGguf r;
    r.header(3, 0, 1).str("general.alignment").u32(4).u32(1u << 31);
    out.push_back({"valid_align_2g_no_tensors", r.bytes});
  }
  {
    GgufWriter w(3);
    std::vector<std::string> vocab;
    std::vector<int32_t> types;
    for (int i = 0; i < 2000; ++i) {
      vocab.push_back("tok" + std::to_string(i));
      types.push_back(i % 3);
    }
    w.set("tokenizer.ggml.tokens", GgufValue::array(std::move(vocab)));
    w.set("tokenizer.ggml.token_type", GgufValue::array(std::move(types)));
    w.add_tensor("token_embd.weight", {32, 16}, kQ8_0, test_bytes(16 * 34, 5));
    out.push_back({"valid_vocab", w.to_bytes()});
  }
  {
    RawGguf r;  // hand-made v2 file, tensors in reverse offset order with a gap
    r.header(2, 2, 1).str("general.architecture").u32(8).str("v2");
    r.tensor("second", {4}, kF32, 64).tensor("first", {4}, kF32, 0).data(32, 64 + 16);
    out.push_back({"valid_hand_v2", r.bytes});
  }
  return out;
}

std::vector<CorruptSample> corrupt_gguf_samples() {
  constexpr strata_status F = STRATA_ERR_FORMAT, U = STRATA_ERR_UNSUPPORTED;
  constexpr uint64_t kHuge = uint64_t{1} << 62;
  std::vector<CorruptSample> out;
  const std::vector<uint8_t> small = small_valid_gguf();

  // Header.
  out.push_back({"corrupt_empty", {}, F, "magic"});
  out.push_back({"corrupt_short_magic", {'G', 'G'}, F, "magic"});
  {
    std::vector<uint8_t> b = small;
    b[3] = 'G';
    out.push_back({"corrupt_bad_magic", b, F, "bad magic"});
  }
  for (const uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
    std::vector<uint8_t> b = small;
    std::memcpy(b.data() + 4, &v, 4);
    out.push_back({"corrupt_version_" + std::to_string(v), b, U, v == 0x03000000u ? "big-endian" : "version"});
  }
  out.push_back({"corrupt_short_header", RawGguf().u32(0x46554747).u32(3).u64(0).bytes, F, "metadata count"});
  out.push_back({"corrupt_huge_tensor_count", RawGguf().header(3, kHuge, 0).bytes, F, "tensor count"});
  out.push_back({"corrupt_huge_kv_count", RawGguf().header(3, 0, kHuge).bytes, F, "metadata count"});
  out.push_back({"corrupt_counts_past_end", RawGguf().header(3, 1, 2).bytes, F, "cannot fit"});

  // Metadata.
  out.push_back({"corrupt_huge_key_length", RawGguf().header(3, 0, 1).u64(kHuge).u32(4).u32(0).bytes, F,
                 "key length"});
  out.push_back({"corrupt_empty_key", one_kv("", 4, RawGguf().u32(1)), F, "empty key"});
  out.push_back({"corrupt_unknown_value_type", one_kv("k", 13, RawGguf().u32(1)), F, "unknown value type 13"});
  out.push_back({"corrupt_truncated_value", one_kv("k", 10, RawGguf().u32(1)), F, "u64 value"});
  out.push_back({"corrupt_huge_string_length", one_kv("k", 8, RawGguf().u64(kHuge).u64(0)), F,
                 "string value length"});
  out.push_back({"corrupt_bool_value", one_kv("k", 7, RawGguf().u8(2)), F, "bool value 2"});
  out.push_back({"corrupt_huge_array_count", one_kv("k", 9, RawGguf().u32(4).u64(kHuge).u32(0)), F,
                 "array count"});
  out.push_back({"corrupt_huge_string_array", one_kv("k", 9, RawGguf().u32(8).u64(uint64_t{1} << 40).u64(0)), F,
                 "array count"});
  out.push_back({"corrupt_array_element_type", one_kv("k", 9, RawGguf().u32(77).u64(1).u32(0)), F,
                 "unknown array element type 77"});
  {
    RawGguf deep;  // 20 nested arrays, each holding one array
    for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
    deep.u32(4).u64(0);
    out.push_back({"corrupt_deep_nesting", one_kv("k", 9, deep), F, "nested deeper"});
  }
  {
    RawGguf r;
    r.header(3, 0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2);
    out.push_back({"corrupt_duplicate_key", r.bytes, F, "duplicate key"});
  }
  out.push_back({"corrupt_alignment_zero", with_alignment(RawGguf().u32(0), 4), F, "power of two"});
  out.push_back({"corrupt_alignment_48", with_alignment(RawGguf().u32(48), 4), F, "power of two"});
  out.push_back({"corrupt_alignment_string", with_alignment(RawGguf().str("32"), 8), F, "general.alignment"});
  out.push_back({"corrupt_alignment_negative", with_alignment(RawGguf().u32(0xffffffe0u), 5), F,
                 "general.alignment"});

  // Tensor infos.
  out.push_back({"corrupt_n_dims_0", raw_file({{"w", {}, kF32, 0}}, 32), F, "n_dims 0"});
  out.push_back({"corrupt_n_dims_5", raw_file({{"w", {1, 1, 1, 1, 1}, kF32, 0}}, 32), F, "n_dims 5"});
  out.push_back({"corrupt_zero_dim", raw_file({{"w", {4, 0}, kF32, 0}}, 32), F, "ne[1] is 0"});
  out.push_back({"corrupt_dim_too_large", raw_file({{"w", {uint64_t{1} << 63}, kF32, 0}}, 32), F,
                 "ne[0] = 9223372036854775808 is too large"});
  out.push_back({"corrupt_dims_overflow", raw_file({{"w", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0}}, 32), F,
                 "element count overflows"});
  out.push_back({"corrupt_bytes_overflow", raw_file({{"w", {uint64_t{1} << 62}, kF32, 0}}, 32), F,
                 "byte size"});
  out.push_back({"corrupt_unknown_type", raw_file({{"w", {32}, 31, 0}}, 64), U, "unknown tensor type id 31"});
  out.push_back({"corrupt_type_past_table", raw_file({{"w", {32}, 0xffffffffu, 0}}, 64), U, "unknown tensor type"});
  out.push_back({"corrupt_partial_block", raw_file({{"w", {100}, kQ4_K, 0}}, 144), F, "block size 256"});
  out.push_back({"corrupt_empty_tensor_name", raw_file({{"", {4}, kF32, 0}}, 32), F, "empty tensor name"});
  out.push_back({"corrupt_duplicate_tensor", raw_file({{"w", {4}, kF32, 0}, {"w", {4}, kF32, 32}}, 64), F,
                 "duplicate tensor name"});
  out.push_back({"corrupt_truncated_tensor_info",
                 RawGguf().header(3, 1, 0).str("weight.truncated").u32(2).u64(4).bytes, F,
                 "tensor 'weight.truncated': dimension needs 8 bytes"});

  // Tensor data.
  out.push_back({"corrupt_misaligned_offset", raw_file({{"w", {4}, kF32, 4}}, 64), F, "alignment 32"});
  out.push_back({"corrupt_tensor_past_eof", raw_file({{"w", {64}, kF32, 0}}, 100), F, "past the end of the file"});
  out.push_back({"corrupt_offset_past_eof", raw_file({{"w", {4}, kF32, 4096}}, 64), F, "past the end of the file"});
  out.push_back({"corrupt_offset_overflow", raw_file({{"w", {4}, kF32, ~uint64_t{31}}}, 64), F,
                 "past the end of the file (size 192) and overflows"});
  out.push_back({"corrupt_overlap", raw_file({{"a", {16}, kF32, 0}, {"b", {16}, kF32, 32}}, 128), F,
                 "overlaps tensor 'a'"});
  out.push_back({"corrupt_overlap_same_offset", raw_file({{"a", {4}, kF32, 0}, {"b", {4}, kF32, 0}}, 32), F,
                 "overlaps tensor"});
  {
    std::vector<uint8_t> b = small;
    b.resize(b.size() - 1);
    out.push_back({"corrupt_truncated_data", b, F, "tensor 'c.q4_k'"});
  }
  return out;
}

}  // namespace strata::test
