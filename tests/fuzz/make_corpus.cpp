// Writes the GGUF seed corpus (valid and corrupt samples), or a file plus its expected JSON for the npm cross-check.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/quant/quant.h"
#include "gguf_samples.h"

namespace {

using strata::core::GgufKv;
using strata::core::GgufValue;
using strata::core::GgufValueType;
using strata::core::GgufWriter;

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

int make_corpus(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  size_t n = 0;
  for (const auto& s : strata::test::valid_gguf_samples()) write_file(dir / (s.name + ".gguf"), s.bytes), ++n;
  for (const auto& s : strata::test::corrupt_gguf_samples()) write_file(dir / (s.name + ".gguf"), s.bytes), ++n;
  std::printf("gguf_make_corpus: wrote %zu files to %s\n", n, dir.c_str());
  return 0;
}

// ---- The cross-check file and the JSON the independent reader must produce.

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') out += {'\\', ch};
    else if (c < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += ch;
  }
  return out + "\"";
}

// 64-bit integers go as strings: JSON numbers lose precision past 2^53, and
// the npm reader returns them as BigInt.
template <typename T>
std::string json_scalar(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>) return json_string(v);
  else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) return fmt::format("\"{}\"", v);
  else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return fmt::format("{}", double{v});
  else return fmt::format("{}", int64_t{v});
}

std::string json_value(const GgufValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, strata::core::GgufArray>) {
          return std::visit(
              [](const auto& elems) {
                using E = typename std::decay_t<decltype(elems)>::value_type;
                std::string out = "[";
                for (size_t i = 0; i < elems.size(); ++i) {
                  if (i) out += ",";
                  if constexpr (std::is_same_v<E, GgufValue>) out += json_value(elems[i]);
                  else out += json_scalar(E(elems[i]));
                }
                return out + "]";
              },
              v);
        } else {
          return json_scalar(v);
        }
      },
      value.payload());
}

struct CrossTensor {
  uint32_t type;
  std::vector<int64_t> dims;
};
const std::vector<CrossTensor> kCrossTensors = {
    {0, {8, 4}},       {1, {16, 2}},  {8, {64, 3}},  {12, {256, 2}}, {14, {256, 1, 2}},
    {30, {4, 2, 2, 2}}, {39, {32, 5}}, {23, {512}},   {13, {256, 3}}};

std::string cross_tensor_name(size_t i) {
  return fmt::format("blk.{}.{}", i, strata::core::find_type_traits(kCrossTensors[i].type)->name);
}

GgufWriter crosscheck_writer() {
  GgufWriter w(3);
  w.set("general.architecture", GgufValue::string("qwen3moe"));
  w.set("general.name", GgufValue::string("cross-check h\xc3\xa9llo \xe2\x9c\x93"));
  w.set("general.empty", GgufValue::string(""));
  w.set("qwen3moe.block_count", GgufValue::u32(2));
  w.set("qwen3moe.expert_count", GgufValue::u16(128));
  w.set("qwen3moe.rope.freq_base", GgufValue::f32(1000000.0f));
  w.set("qwen3moe.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-6f));
  w.set("test.u8", GgufValue::u8(255));
  w.set("test.i8", GgufValue::i8(-128));
  w.set("test.i16", GgufValue::i16(-300));
  w.set("test.i32", GgufValue::i32(-2000000000));
  w.set("test.u64", GgufValue::u64(18446744073709551615ull));
  w.set("test.i64", GgufValue::i64(-9223372036854775807ll - 1));
  w.set("test.f64", GgufValue::f64(0.1));
  w.set("test.bool", GgufValue::boolean(false));
  w.set("tokenizer.ggml.tokens", GgufValue::array<std::string>({"<|im_start|>", "\xc4\xa0the", "", "\"q\\"}));
  w.set("tokenizer.ggml.token_type", GgufValue::array<int32_t>({3, 1, 1, 1}));
  w.set("tokenizer.ggml.scores", GgufValue::array<float>({0.0f, -1.5f, 2.25f, -0.1f}));
  w.set("test.flags", GgufValue::array<bool>({true, false}));
  w.set("test.u64s", GgufValue::array<uint64_t>({0, 18446744073709551615ull}));
  w.set("test.f64s", GgufValue::array<double>({1e-300, 12345.678}));
  w.set("test.empty", GgufValue::empty_array(GgufValueType::U32));
  w.set("test.nested", GgufValue::array_of_arrays({GgufValue::array<uint32_t>({1, 2}),
                                                   GgufValue::array<std::string>({"a", ""}),
                                                   GgufValue::empty_array(GgufValueType::I8)}));
  w.set("general.alignment", GgufValue::u32(64));
  for (size_t i = 0; i < kCrossTensors.size(); ++i) {
    w.add_tensor(cross_tensor_name(i), kCrossTensors[i].dims, kCrossTensors[i].type);
  }
  return w;
}

int make_crosscheck(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const GgufWriter w = crosscheck_writer();
  const std::string path = (dir / "crosscheck.gguf").string();
  // Through write(), the path make-model takes: created at size, filled in parallel.
  w.write(path, [](size_t i, std::span<uint8_t> dst) {
    const std::vector<uint8_t> d = strata::test::test_bytes(dst.size(), static_cast<uint32_t>(i));
    std::memcpy(dst.data(), d.data(), d.size());
  }, 2);

  const GgufWriter::Layout l = w.layout();
  std::string json = fmt::format("{{\n\"version\": 3,\n\"alignment\": {},\n\"tensor_data_offset\": \"{}\",\n",
                                 w.alignment(), l.data_offset);
  json += "\"metadata\": [\n";
  for (size_t i = 0; i < w.metadata().size(); ++i) {
    const GgufKv& kv = w.metadata()[i];
    json += fmt::format("  {{\"key\": {}, \"type\": {}", json_string(kv.key), static_cast<uint32_t>(kv.value.type()));
    if (kv.value.is_array()) json += fmt::format(", \"subType\": {}", static_cast<uint32_t>(kv.value.element_type()));
    json += fmt::format(", \"value\": {}}}{}\n", json_value(kv.value), i + 1 < w.metadata().size() ? "," : "");
  }
  json += "],\n\"tensors\": [\n";
  for (size_t i = 0; i < kCrossTensors.size(); ++i) {
    const CrossTensor& t = kCrossTensors[i];
    std::string shape;
    for (const int64_t d : t.dims) shape += fmt::format("{}\"{}\"", shape.empty() ? "" : ",", d);
    json += fmt::format("  {{\"name\": {}, \"n_dims\": {}, \"shape\": [{}], \"dtype\": {}, \"offset\": \"{}\"}}{}\n",
                        json_string(cross_tensor_name(i)), t.dims.size(), shape, t.type, l.offsets[i],
                        i + 1 < kCrossTensors.size() ? "," : "");
  }
  json += "]\n}\n";
  const std::string text = json;
  write_file(dir / "crosscheck.expected.json", std::vector<uint8_t>(text.begin(), text.end()));
  std::printf("gguf_make_corpus: wrote %s and crosscheck.expected.json\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2) return make_corpus(argv[1]);
    if (argc == 3 && std::strcmp(argv[1], "--crosscheck") == 0) return make_crosscheck(argv[2]);
    std::fprintf(stderr, "usage: %s DIR | --crosscheck DIR\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_make_corpus: %s\n", e.what());
    return 1;
  }
}
