// GGUF type traits, row sizes, type-name parsing and the activation kind of each weight type.
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/quant/quant.h"

using namespace strata::core;

namespace {

struct Expected {
  uint32_t id;
  const char* name;
  int64_t block;
  size_t bytes;
  bool computable;
};

// Sizes from ggml-common.h's block structs (written out here, not derived).
const Expected kAll[] = {
    {0, "f32", 1, 4, true},         {1, "f16", 1, 2, true},         {2, "q4_0", 32, 18, true},
    {3, "q4_1", 32, 20, true},     {6, "q5_0", 32, 22, true},     {7, "q5_1", 32, 24, true},
    {8, "q8_0", 32, 34, true},      {9, "q8_1", 32, 36, false},     {10, "q2_K", 256, 84, true},
    {11, "q3_K", 256, 110, true},   {12, "q4_K", 256, 144, true},   {13, "q5_K", 256, 176, true},
    {14, "q6_K", 256, 210, true},   {15, "q8_K", 256, 292, false},  {16, "iq2_xxs", 256, 66, true},
    {17, "iq2_xs", 256, 74, true}, {18, "iq3_xxs", 256, 98, true}, {19, "iq1_s", 256, 50, true},
    {20, "iq4_nl", 32, 18, true},  {21, "iq3_s", 256, 110, true}, {22, "iq2_s", 256, 82, true},
    {23, "iq4_xs", 256, 136, true}, {24, "i8", 1, 1, false},       {25, "i16", 1, 2, false},
    {26, "i32", 1, 4, false},       {27, "i64", 1, 8, false},       {28, "f64", 1, 8, false},
    {29, "iq1_m", 256, 56, true},  {30, "bf16", 1, 2, true},       {34, "tq1_0", 256, 54, false},
    {35, "tq2_0", 256, 66, false},  {39, "mxfp4", 32, 17, true},    {40, "nvfp4", 64, 36, true},
    {41, "q1_0", 128, 18, true},    {42, "q2_0", 64, 18, true},
};

}  // namespace

TEST_CASE("type traits: every GGUF id has its real block size and bytes") {
  std::set<uint32_t> known;
  for (const auto& e : kAll) {
    INFO("id " << e.id << " " << e.name);
    known.insert(e.id);
    const TypeTraits* t = find_type_traits(e.id);
    REQUIRE(t != nullptr);
    CHECK(std::string(t->name) == e.name);
    CHECK(t->block_size == e.block);
    CHECK(t->type_size == e.bytes);
    CHECK(t->computable == e.computable);
    CHECK(&type_traits(static_cast<GgmlType>(e.id)) == t);
    CHECK(row_size(static_cast<GgmlType>(e.id), e.block * 3) == 3 * e.bytes);
    CHECK(row_size(static_cast<GgmlType>(e.id), 0) == 0);
  }
  for (uint32_t id = 0; id < 100; ++id) {
    if (known.count(id) == 0) {
      INFO("id " << id);
      CHECK(find_type_traits(id) == nullptr);
    }
  }
  CHECK(find_type_traits(0xffffffffu) == nullptr);
  CHECK_THROWS_AS(type_traits(static_cast<GgmlType>(4)), Error);
}

TEST_CASE("row_size rejects partial blocks and negative counts") {
  CHECK(row_size(GgmlType::Q4_K, 4096) == 16 * 144);
  CHECK(row_size(GgmlType::F16, 7) == 14);
  for (int64_t n : {int64_t{1}, int64_t{255}, int64_t{257}, int64_t{-256}}) {
    try {
      row_size(GgmlType::Q4_K, n);
      FAIL("no throw for n=" << n);
    } catch (const Error& e) {
      CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
    }
  }
  CHECK_THROWS_AS(row_size(GgmlType::Q8_0, 33), Error);
  CHECK_THROWS_AS(row_size(GgmlType::F32, INT64_MAX), Error);  // overflows size_t
}

TEST_CASE("parse_type_name accepts any known name, any case") {
  CHECK(parse_type_name("q4_k") == GgmlType::Q4_K);
  CHECK(parse_type_name("Q4_K") == GgmlType::Q4_K);
  CHECK(parse_type_name("q4_K") == GgmlType::Q4_K);
  CHECK(parse_type_name("f16") == GgmlType::F16);
  CHECK(parse_type_name("BF16") == GgmlType::BF16);
  CHECK(parse_type_name("Q8_0") == GgmlType::Q8_0);
  CHECK(parse_type_name("iq4_xs") == GgmlType::IQ4_XS);
  CHECK(parse_type_name("MXFP4") == GgmlType::MXFP4);
  for (const auto& e : kAll) CHECK(parse_type_name(e.name) == static_cast<GgmlType>(e.id));

  for (const char* bad : {"", "q4", "q4_k_m", "q4_k ", "f8", "fp16"}) {
    INFO("name '" << bad << "'");
    try {
      parse_type_name(bad);
      FAIL("no throw");
    } catch (const Error& e) {
      CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
      const std::string msg = e.what();
      CHECK(msg.find("q4_K") != std::string::npos);  // lists the valid names
      CHECK(msg.find("bf16") != std::string::npos);
      CHECK(msg.find("mxfp4") != std::string::npos);
    }
  }
}

TEST_CASE("activation kind per weight type") {
  CHECK(activation_kind(GgmlType::F32) == ActivationKind::F32);
  CHECK(activation_kind(GgmlType::F16) == ActivationKind::F32);
  CHECK(activation_kind(GgmlType::BF16) == ActivationKind::F32);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K,
                     GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                     GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::MXFP4,
                     GgmlType::NVFP4, GgmlType::Q1_0, GgmlType::Q2_0}) {
    CHECK(activation_kind(t) == ActivationKind::Q8A);
  }
  // A type without CPU kernels has no activation format: never a guessed one.
  for (GgmlType t : {GgmlType::I32, GgmlType::F64, GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::Q8_1}) {
    CHECK_THROWS_AS(activation_kind(t), Error);
  }
  CHECK(activation_row_size(ActivationKind::F32, 10) == 40);
  CHECK(activation_row_size(ActivationKind::Q8A, 64) == 80);
  CHECK_THROWS_AS(activation_row_size(ActivationKind::Q8A, 48), Error);
}

TEST_CASE("kernels refuse types they do not implement and partial blocks") {
  float f[256] = {};
  unsigned char buf[512] = {};
  try {
    dequantize_row(GgmlType::TQ1_0, buf, f, 256);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_UNSUPPORTED);
  }
  CHECK_THROWS_AS(quantize_row(GgmlType::TQ2_0, f, buf, 256), Error);
  CHECK_THROWS_AS(vec_dot(GgmlType::TQ1_0, buf, buf, 256), Error);
  try {
    quantize_row(GgmlType::Q6_K, f, buf, 128);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == STRATA_ERR_INVALID_ARGUMENT);
  }
  CHECK_THROWS_AS(quantize_activations(f, nullptr, 31), Error);
  CHECK_THROWS_AS(matvec(GgmlType::Q8_0, buf, -1, 32, buf, f), Error);
}

// Every (GGUF type, CPU kernel) pair: a computable type runs each kernel (a
// zero row dequantizes to zeros and dots to 0); any other type is refused
// with UNSUPPORTED naming the type and the kernel.
TEST_CASE("every GGUF type and CPU kernel: implemented or refused with both names") {
  for (const auto& e : kAll) {
    const auto type = static_cast<GgmlType>(e.id);
    INFO(e.name);
    const int64_t n = 256;  // a whole number of blocks of every type, and of Q8A blocks
    std::vector<unsigned char> row(e.bytes * static_cast<size_t>(n / e.block), 0);
    std::vector<float> f(static_cast<size_t>(n), 0.0f);
    std::vector<BlockQ8A> act(static_cast<size_t>(n / 32));
    quantize_activations(f.data(), act.data(), n);
    const void* rows[4] = {row.data(), row.data(), row.data(), row.data()};
    float out[4] = {1, 1, 1, 1};
    const bool float_act = e.computable && activation_kind(type) == ActivationKind::F32;
    const void* a = float_act ? static_cast<const void*>(f.data()) : act.data();
    // Each returns what must be 0 on the zero row.
    const std::pair<const char*, std::function<float()>> kernels[] = {
        {"dequantize_row", [&] { return dequantize_row(type, row.data(), f.data(), n), f[0] + f[n - 1]; }},
        {"quantize_row", [&] {  // zeros round-trip
           quantize_row(type, f.data(), row.data(), n);
           return dequantize_row(type, row.data(), f.data(), n), f[0] + f[n - 1];
         }},
        {"activation_kind", [&] { return (void)activation_kind(type), 0.0f; }},
        {"vec_dot", [&] { return vec_dot(type, row.data(), a, n); }},
        {"vec_dot4", [&] { return vec_dot4(type, rows, a, n, out), out[0] + out[1] + out[2] + out[3]; }},
    };
    for (const auto& [what, call] : kernels) {
      INFO(what);
      if (e.computable) {
        CHECK(call() == 0.0f);
        continue;
      }
      try {
        (void)call();
        FAIL("no refusal");
      } catch (const Error& err) {
        CHECK(err.status() == STRATA_ERR_UNSUPPORTED);
        const std::string msg = err.what();
        CHECK(msg.find(e.name) != std::string::npos);
        CHECK(msg.find(what) != std::string::npos);
      }
    }
  }
}
