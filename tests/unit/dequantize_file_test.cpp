// write_dequantized: the F32 copy of a quantized file holds exactly the dequantized values and the same metadata.
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/model/dequantize_file.h"
#include "core/quant/quant.h"
#include "engine_fixtures.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata-" + name + "-" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

}  // namespace

TEST_CASE("dequantize: every tensor as F32 with the dequantized values, metadata unchanged but the file type") {
  const strata::test::TempModel model("dequant-src", 2, 5);  // Q4_K matrices, a Q6_K head, Q8_0 and F32 tensors
  const std::string out = temp_file("dequant-out");
  write_dequantized(model.path, out, 2);
  const GgufFile src = GgufFile::open(model.path), dst = GgufFile::open(out);
  std::filesystem::remove(out);
  // Never over the input, which is mapped while the copy is written: not as
  // the output, nor as the partial file the writer starts with.
  const std::string partial = GgufWriter::partial_path(out);
  std::filesystem::copy_file(model.path, partial);
  for (const auto& io : {std::pair{model.path, model.path}, std::pair{partial, out}}) {
    INFO(io.first << " -> " << io.second);
    CHECK(status_of([&] { write_dequantized(io.first, io.second, 1); }) == STRATA_ERR_INVALID_ARGUMENT);
  }
  CHECK(std::filesystem::file_size(partial) == std::filesystem::file_size(model.path));
  std::filesystem::remove(partial);

  REQUIRE(dst.metadata().size() == src.metadata().size());
  for (size_t i = 0; i < src.metadata().size(); ++i) {
    const GgufKv &a = src.metadata()[i], &b = dst.metadata()[i];
    INFO(a.key);
    CHECK(b.key == a.key);
    if (a.key == "general.file_type") {
      CHECK(dst.get_u32("general.file_type") == 0);
      CHECK(src.get_u32("general.file_type") == 15);
    } else {
      CHECK(b.value == a.value);
    }
  }
  CHECK(dst.alignment() == src.alignment());

  REQUIRE(dst.tensors().size() == src.tensors().size());
  std::set<uint32_t> source_types;
  for (size_t i = 0; i < src.tensors().size(); ++i) {
    const GgufTensorInfo &a = src.tensors()[i], &b = dst.tensors()[i];
    INFO(a.name);
    source_types.insert(a.type);
    CHECK(b.name == a.name);
    CHECK(b.n_dims == a.n_dims);
    CHECK(b.ne == a.ne);
    CHECK(b.type == static_cast<uint32_t>(GgmlType::F32));
    std::vector<float> want(static_cast<size_t>(a.n_elements));
    const size_t row_bytes = row_size(static_cast<GgmlType>(a.type), a.ne[0]);
    for (int64_t r = 0; r < a.n_rows(); ++r) {
      dequantize_row(static_cast<GgmlType>(a.type), a.data + static_cast<size_t>(r) * row_bytes,
                     want.data() + r * a.ne[0], a.ne[0]);
    }
    REQUIRE(b.n_bytes == want.size() * sizeof(float));
    CHECK(std::memcmp(b.data, want.data(), b.n_bytes) == 0);
  }
  // The fixture's file has the types the copy must convert (and F32, kept).
  for (GgmlType t : {GgmlType::F32, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    CHECK(source_types.count(static_cast<uint32_t>(t)) == 1);
  }
}

TEST_CASE("dequantize: a tensor type without a dequantizer is refused by name, and no file is left") {
  const std::string in = temp_file("dequant-iq"), out = temp_file("dequant-iq-out");
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3moe"));
  w.add_tensor("norm", {4}, static_cast<uint32_t>(GgmlType::F32), std::vector<uint8_t>(16, 0));
  w.add_tensor("blk.0.ffn_up_exps.weight", {256}, static_cast<uint32_t>(GgmlType::TQ1_0),
               std::vector<uint8_t>(54, 0));
  w.write(in);
  try {
    write_dequantized(in, out, 1);
    FAIL("no refusal");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_UNSUPPORTED);
    const std::string msg = e.what();
    CHECK(msg.find("blk.0.ffn_up_exps.weight") != std::string::npos);
    CHECK(msg.find("tq1_0") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(in);
  CHECK(status_of([&] { write_dequantized(in, out, 1); }) == STRATA_ERR_IO);  // the input is gone
}
