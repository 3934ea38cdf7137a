// GgufFile typed getters (widening, range checks, errors naming the key), GgufValue helpers, the type table.
#include <cmath>
#include <limits>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "error_checks.h"

using strata::core::Error;
using strata::core::GgufFile;
using strata::core::GgufValue;
using strata::core::GgufValueType;
using strata::core::GgufWriter;

namespace {

std::vector<uint8_t> getters_file() {
  GgufWriter w(3);
  w.set("u8", GgufValue::u8(200));
  w.set("i8.neg", GgufValue::i8(-3));
  w.set("u16", GgufValue::u16(40000));
  w.set("i64.small", GgufValue::i64(151936));
  w.set("u64.big", GgufValue::u64(uint64_t{1} << 40));
  w.set("f64", GgufValue::f64(1e6));
  w.set("f32", GgufValue::f32(0.125f));
  w.set("bool", GgufValue::boolean(true));
  w.set("name", GgufValue::string("qwen3moe"));
  w.set("tokens", GgufValue::array<std::string>({"a", "b"}));
  w.set("types.u8", GgufValue::array<uint8_t>({1, 2, 255}));
  w.set("types.i64", GgufValue::array<int64_t>({-1, 5}));
  w.set("types.big", GgufValue::array<uint64_t>({1, uint64_t{1} << 33}));
  w.set("scores.f64", GgufValue::array<double>({0.5, -2.0}));
  w.set("scores.f32", GgufValue::array<float>({1.5f}));
  return w.to_bytes();
}

}  // namespace

TEST_CASE("gguf integer getters widen any integer type that fits") {
  const std::vector<uint8_t> bytes = getters_file();
  const GgufFile f = GgufFile::from_memory(bytes);
  CHECK(f.get_u32("u8") == 200);
  CHECK(f.get_u64("u8") == 200);
  CHECK(f.get_i32("u16") == 40000);
  CHECK(f.get_i64("i8.neg") == -3);
  CHECK(f.get_u32("i64.small") == 151936);
  CHECK(f.get_u64("u64.big") == uint64_t{1} << 40);
  CHECK(f.get_u32_or("missing", 9) == 9);
  CHECK(f.get_i64_or("missing", -9) == -9);
  CHECK(f.get_u32_or("u16", 9) == 40000);
}

TEST_CASE("gguf getters reject wrong types and out-of-range values, naming the key") {
  const std::vector<uint8_t> bytes = getters_file();
  const GgufFile f = GgufFile::from_memory(bytes);
  const auto check_error = [&](const std::function<void()>& fn, const std::string& key) {
    CHECK_FAILS_WITH(fn(), STRATA_ERR_FORMAT, "'" + key + "'");
  };
  check_error([&] { (void)f.get_u32("i8.neg"); }, "i8.neg");        // negative into unsigned
  check_error([&] { (void)f.get_u32("u64.big"); }, "u64.big");      // too large
  check_error([&] { (void)f.get_i32("f32"); }, "f32");              // float is not an integer
  check_error([&] { (void)f.get_u32("name"); }, "name");
  check_error([&] { (void)f.get_string("u8"); }, "u8");
  check_error([&] { (void)f.get_bool("u8"); }, "u8");
  check_error([&] { (void)f.get_u32("missing.key"); }, "missing.key");
  check_error([&] { (void)f.get_u32_or("name", 1); }, "name");     // present but wrong: not the default
  check_error([&] { (void)f.get_string_array("types.u8"); }, "types.u8");
  check_error([&] { (void)f.get_i32_array("tokens"); }, "tokens");
  check_error([&] { (void)f.get_i32_array("types.big"); }, "types.big");
  check_error([&] { (void)f.get_u32_array("types.i64"); }, "types.i64");
  check_error([&] { (void)f.get_f32_array("tokens"); }, "tokens");
  check_error([&] { (void)f.get_i32_array("u8"); }, "u8");
  check_error([&] { (void)f.tensor("no.such.tensor"); }, "no.such.tensor");
}

TEST_CASE("gguf float, bool, string and array getters") {
  const std::vector<uint8_t> bytes = getters_file();
  const GgufFile f = GgufFile::from_memory(bytes);
  CHECK(f.get_f32("f32") == 0.125f);
  CHECK(f.get_f32("f64") == 1e6f);
  CHECK(f.get_f32("u16") == 40000.0f);
  CHECK(f.get_f32_or("missing", 2.5f) == 2.5f);
  CHECK(f.get_bool("bool"));
  CHECK_FALSE(f.get_bool_or("missing", false));
  CHECK(f.get_string("name") == "qwen3moe");
  CHECK(f.get_string_or("missing", "x") == "x");
  const std::vector<std::string>& tokens = f.get_string_array("tokens");
  CHECK(&tokens == f.find("tokens")->array_if<std::string>());  // by reference, no copy
  CHECK(f.get_i32_array("types.u8") == std::vector<int32_t>{1, 2, 255});
  CHECK(f.get_u32_array("types.u8") == std::vector<uint32_t>{1, 2, 255});
  CHECK(f.get_i64_array("types.big") == std::vector<int64_t>{1, int64_t{1} << 33});
  CHECK(f.get_i32_array("types.i64") == std::vector<int32_t>{-1, 5});
  CHECK(f.get_f32_array("scores.f64") == std::vector<float>{0.5f, -2.0f});
  CHECK(f.get_f32_array("scores.f32") == std::vector<float>{1.5f});
  CHECK(f.get_f32_array("types.u8") == std::vector<float>{1.0f, 2.0f, 255.0f});
  CHECK(f.find("missing") == nullptr);
  CHECK(f.has("u8"));
}

TEST_CASE("GgufValue conversions and rendering") {
  CHECK(GgufValue::i8(-1).to_int<uint32_t>() == std::nullopt);
  CHECK(GgufValue::u64(300).to_int<uint8_t>() == std::nullopt);
  CHECK(GgufValue::u64(255).to_int<uint8_t>() == 255);
  CHECK(GgufValue::boolean(true).to_int<int>() == std::nullopt);
  CHECK(GgufValue::f32(1.0f).to_int<int>() == std::nullopt);
  CHECK(GgufValue::i16(-7).to_double() == -7.0);
  CHECK(GgufValue::string("1").to_double() == std::nullopt);
  CHECK(GgufValue::u32(5).is_integer());
  CHECK_FALSE(GgufValue::boolean(false).is_integer());

  CHECK(GgufValue::u8(7).to_string() == "7");
  CHECK(GgufValue::i8(-7).to_string() == "-7");
  CHECK(GgufValue::boolean(true).to_string() == "true");
  CHECK(GgufValue::string("a\"b").to_string() == "\"a\\\"b\"");
  CHECK(GgufValue::f32(0.5f).to_string() == "0.5");
  CHECK(GgufValue::array<uint32_t>({1, 2, 3}).to_string() == "[u32 x 3: 1, 2, 3]");
  CHECK(GgufValue::array<uint32_t>({1, 2, 3}).to_string(2) == "[u32 x 3: 1, 2, ...]");
  CHECK(GgufValue::empty_array(GgufValueType::String).to_string() == "[string x 0]");
  CHECK(GgufValue::array<bool>({true}).to_string() == "[bool x 1: true]");
  CHECK(GgufValue::array_of_arrays({GgufValue::array<std::string>({"x"})}).to_string() ==
        "[array x 1: [string x 1: \"x\"]]");
  CHECK(GgufValue::string(std::string(500, 'a')).to_string().size() < 200);

  CHECK(status_of([] { (void)GgufValue::array_of_arrays({GgufValue::u8(1)}); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([] { (void)GgufValue::u8(1).element_type(); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(GgufValue::u8(1).array_size() == 0);
  CHECK(GgufValue::empty_array(GgufValueType::Bool).element_type() == GgufValueType::Bool);
  CHECK(strata::core::gguf_value_type_name(GgufValueType::F64) == std::string("f64"));
  CHECK(strata::core::gguf_value_type_name(static_cast<GgufValueType>(13)) == std::string("unknown"));
}

