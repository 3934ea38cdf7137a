// GgufWriter -> GgufFile round trips: every metadata type, every tensor type, files on disk, v2.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/quant/quant.h"
#include "error_checks.h"
#include "gguf_samples.h"

using strata::core::Error;
using strata::core::GgufFile;
using strata::core::GgufTensorInfo;
using strata::core::GgufValue;
using strata::core::GgufValueType;
using strata::core::GgufWriter;
using strata::test::test_bytes;

namespace {

// A fresh directory under the system temp dir, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("strata_gguf_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The reader's view must equal what was given to the writer.
void check_same(const GgufWriter& w, const GgufFile& f, const std::vector<std::vector<uint8_t>>& data) {
  REQUIRE(f.metadata() == w.metadata());
  REQUIRE(f.tensors().size() == w.tensor_count());
  const GgufWriter::Layout l = w.layout();
  CHECK(f.data_offset() == l.data_offset);
  CHECK(f.data_offset() % f.alignment() == 0);
  CHECK(f.bytes().size() == l.file_size);
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    CHECK(t.offset == l.offsets[i]);
    CHECK(t.offset % f.alignment() == 0);
    CHECK(t.n_bytes == w.tensor_size(i));
    REQUIRE(t.bytes().size() == data[i].size());
    CHECK(std::memcmp(t.data, data[i].data(), data[i].size()) == 0);
    CHECK(f.find_tensor(t.name) == &t);
  }
}

std::vector<std::vector<uint8_t>> expected_data(const std::vector<uint8_t>& file_bytes, const GgufWriter& w) {
  const GgufWriter::Layout l = w.layout();
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < w.tensor_count(); ++i) {
    const auto* p = file_bytes.data() + l.data_offset + l.offsets[i];
    out.emplace_back(p, p + w.tensor_size(i));
  }
  return out;
}

}  // namespace

TEST_CASE("gguf round trip in memory: every metadata and tensor type, v3 and v2") {
  for (const uint32_t version : {3u, 2u}) {
    const GgufWriter w = strata::test::all_types_writer(version);
    const std::vector<uint8_t> bytes = w.to_bytes();
    const GgufFile f = GgufFile::from_memory(bytes);
    CHECK(f.version() == version);
    CHECK(f.alignment() == 32);
    check_same(w, f, expected_data(bytes, w));

    // Spot checks that do not go through operator== of the writer's own values.
    CHECK(f.get_string("string") == "h\xc3\xa9llo \xe2\x9c\x93");
    CHECK(f.get_string("string.empty").empty());
    CHECK(f.get_string("string.nul") == std::string("a\0b", 3));
    CHECK(f.find("u64")->get_if<uint64_t>() != nullptr);
    CHECK(f.get_u64("u64") == UINT64_MAX);
    CHECK(f.get_i64("i64") == INT64_MIN);
    CHECK(f.get_f32("f32") == -1.25e-7f);
    const GgufValue& nested = *f.find("arr.nested");
    REQUIRE(nested.element_type() == GgufValueType::Array);
    const auto* inner = nested.array_if<GgufValue>();
    REQUIRE(inner != nullptr);
    REQUIRE(inner->size() == 3);
    CHECK(*(*inner)[0].array_if<int32_t>() == std::vector<int32_t>{1, -2});
    CHECK(*(*inner)[1].array_if<std::string>() == std::vector<std::string>{"ab", ""});
    CHECK((*inner)[2].element_type() == GgufValueType::F32);
    CHECK((*inner)[2].array_size() == 0);
    CHECK(f.find("arr.empty.nested")->element_type() == GgufValueType::Array);
    CHECK(f.get_string_array("arr.string")[2] == "\xc4\xa0the");
    CHECK(*f.find("arr.bool")->array_if<bool>() == std::vector<bool>{true, false, true});

    // File order is kept.
    CHECK(f.metadata().front().key == "u8");
    CHECK(f.metadata().back().key == "arr.nested2");
    const GgufTensorInfo& t4 = f.tensor("t.4d");
    CHECK(t4.n_dims == 4);
    CHECK(std::vector<int64_t>(t4.dims().begin(), t4.dims().end()) == std::vector<int64_t>{2, 3, 1, 2});
    CHECK(t4.n_elements == 12);
    CHECK(t4.n_rows() == 6);
  }
}

TEST_CASE("gguf tensor sizes follow the type table") {
  const GgufWriter w = strata::test::all_types_writer(3);
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile f = GgufFile::from_memory(bytes);
  CHECK(f.tensor("t.Q4_K").n_bytes == 144);
  CHECK(f.tensor("t.Q5_K").n_bytes == 176);
  CHECK(f.tensor("t.Q6_K").n_bytes == 210);
  CHECK(f.tensor("t.Q8_0").n_bytes == 34);
  CHECK(f.tensor("t.BF16").n_bytes == 2);
  CHECK(f.tensor("t.MXFP4").n_bytes == 17);
  CHECK(f.tensor("t.IQ4_XS").n_bytes == 136);
  CHECK(f.tensor("t.IQ3_S").n_bytes == 110);
  CHECK(f.tensor("t.Q4_K").type == 12);
  CHECK(f.tensor("t.MXFP4").type == 39);
}

TEST_CASE("gguf alignment from general.alignment") {
  for (const uint32_t a : {1u, 8u, 64u, 4096u}) {
    GgufWriter w(3);
    w.set("general.alignment", GgufValue::u32(a));
    std::vector<std::vector<uint8_t>> data = {test_bytes(12, 1), test_bytes(34 * 3, 2), test_bytes(4, 3)};
    w.add_tensor("a", {3}, 0, data[0]);
    w.add_tensor("b", {96}, 8, data[1]);
    w.add_tensor("c", {2}, 1, data[2]);
    const std::vector<uint8_t> bytes = w.to_bytes();
    const GgufFile f = GgufFile::from_memory(bytes);
    CHECK(f.alignment() == a);
    CHECK(bytes.size() % a == 0);
    check_same(w, f, data);
  }
}

TEST_CASE("gguf hand-made v2 file reads") {
  // Built field by field, not by the writer: the reader is checked against the format, not against itself.
  strata::test::RawGguf r;
  r.header(2, 2, 3);
  r.str("general.architecture").u32(8).str("llama");
  r.str("llama.block_count").u32(4).u32(32);
  r.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2).str("<s>").str("");
  r.tensor("output.weight", {32, 2}, 8, 64).tensor("norm", {4}, 0, 0);
  const size_t data_start = (r.bytes.size() + 31) / 32 * 32;
  r.data(32, 64 + 2 * 34);
  const GgufFile f = GgufFile::from_memory(r.bytes);
  CHECK(f.version() == 2);
  CHECK(f.data_offset() == data_start);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_u32("llama.block_count") == 32);
  CHECK(f.get_string_array("tokenizer.ggml.tokens") == std::vector<std::string>{"<s>", ""});
  REQUIRE(f.tensors().size() == 2);
  const GgufTensorInfo& out = f.tensors()[0];
  CHECK(out.name == "output.weight");
  CHECK(out.ne[0] == 32);
  CHECK(out.ne[1] == 2);
  CHECK(out.n_bytes == 68);
  CHECK(out.file_offset == data_start + 64);
  CHECK(out.data == r.bytes.data() + data_start + 64);
  CHECK(f.tensor("norm").n_bytes == 16);
}

TEST_CASE("gguf write to disk with a parallel fill callback") {
  TempDir dir;
  GgufWriter w(3);
  w.set("general.architecture", GgufValue::string("test"));
  w.set("general.alignment", GgufValue::u32(64));
  const std::vector<uint8_t> held = test_bytes(40, 9);
  w.add_tensor("held", {10}, 0, held);
  for (int i = 0; i < 20; ++i) w.add_tensor("blk." + std::to_string(i), {256, i + 1}, 12);
  // The fill writes a pattern that depends on the tensor index, from 4 threads.
  std::atomic<int> calls{0};
  std::mutex seen_mutex;
  std::set<size_t> seen;
  auto fill = [&](size_t index, std::span<uint8_t> dst) {
    CHECK(dst.size() == w.tensor_size(index));
    const std::vector<uint8_t> d = test_bytes(dst.size(), static_cast<uint32_t>(index));
    std::memcpy(dst.data(), d.data(), d.size());
    ++calls;
    const std::lock_guard<std::mutex> lock(seen_mutex);
    CHECK(seen.insert(index).second);
  };
  const std::string path = dir.file("model.gguf");
  w.write(path, fill, 4);
  CHECK(calls == 20);
  CHECK_FALSE(std::filesystem::exists(path + ".partial"));

  const GgufFile f = GgufFile::open(path);
  CHECK(f.path() == path);
  std::vector<std::vector<uint8_t>> data = {held};
  for (size_t i = 1; i <= 20; ++i) data.push_back(test_bytes(w.tensor_size(i), static_cast<uint32_t>(i)));
  check_same(w, f, data);
}

TEST_CASE("gguf write failures") {
  TempDir dir;
  GgufWriter w(3);
  w.add_tensor("x", {32}, 0);

  SECTION("no fill callback for a tensor without bytes") {
    CHECK_FAILS_WITH(w.write(dir.file("a.gguf")), STRATA_ERR_INVALID_ARGUMENT, "'x'");
    CHECK_FAILS_WITH(w.to_bytes(), STRATA_ERR_INVALID_ARGUMENT, "'x'");
  }
  SECTION("the callback throws: the error comes back and no file is left") {
    const std::string path = dir.file("b.gguf");
    CHECK_THROWS_AS(w.write(path, [](size_t, std::span<uint8_t>) { throw std::runtime_error("boom"); }, 2),
                    std::runtime_error);
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK_FALSE(std::filesystem::exists(path + ".partial"));
  }
  SECTION("a directory that does not exist is an IO error naming the path") {
    const std::string path = dir.file("missing/dir/c.gguf");
    CHECK_FAILS_WITH(w.write(path, [](size_t, std::span<uint8_t>) {}), STRATA_ERR_IO, path);
  }
}

TEST_CASE("gguf write reports a file that cannot get its space, naming the path") {
  // A file-size limit makes the space reservation fail (EFBIG) the way a full
  // disk does (ENOSPC), deterministically and without filling a disk.
  TempDir dir;
  GgufWriter w(3);
  w.add_tensor("big", {1 << 20}, 0);  // 4 MiB
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* const old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 1 << 20;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string path = dir.file("limited.gguf");
  strata_status status = STRATA_OK;
  std::string message;
  try {
    w.write(path, [](size_t, std::span<uint8_t>) {});
  } catch (const Error& e) {
    status = e.status();
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  INFO("message: " << message);
  CHECK(status == STRATA_ERR_IO);
  CHECK(message.find(path) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST_CASE("gguf writer rejects bad input") {
  GgufWriter w(3);
  CHECK(status_of([] { GgufWriter bad(1); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.set("", GgufValue::u8(1)); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("", {4}, 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {}, 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {1, 1, 1, 1, 1}, 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {4, 0}, 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {4}, 31); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {100}, 12); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {4}, 0, std::vector<uint8_t>(15)); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { w.add_tensor("a", {INT64_MAX, 2}, 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(w.tensor_count() == 0);
  w.add_tensor("a", {4}, 0, std::vector<uint8_t>(16));
  CHECK(status_of([&] { w.add_tensor("a", {4}, 0); }) == STRATA_ERR_INVALID_ARGUMENT);
  w.set("general.alignment", GgufValue::u32(48));
  CHECK(status_of([&] { w.to_bytes(); }) == STRATA_ERR_INVALID_ARGUMENT);
  w.set("general.alignment", GgufValue::string("32"));
  CHECK(status_of([&] { w.to_bytes(); }) == STRATA_ERR_INVALID_ARGUMENT);
  // Setting a key again keeps its place and takes the new value.
  w.set("general.alignment", GgufValue::u16(16));
  CHECK(w.metadata().size() == 1);
  CHECK(GgufFile::from_memory(w.to_bytes()).alignment() == 16);
}

TEST_CASE("gguf open() errors are IO errors naming the path") {
  TempDir dir;
  for (const std::string& path : {dir.file("nope.gguf"), dir.path.string()}) {
    CHECK_FAILS_WITH(GgufFile::open(path), STRATA_ERR_IO, path);
  }
  // A corrupt file on disk: the format error names the file too.
  const std::string bad = dir.file("bad.gguf");
  std::ofstream(bad, std::ios::binary) << "GGUFxxxx";
  CHECK_FAILS_WITH(GgufFile::open(bad), STRATA_ERR_UNSUPPORTED, bad);
}
