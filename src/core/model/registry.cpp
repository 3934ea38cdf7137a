// The architecture registry: one row per GGUF general.architecture this build runs.
#include "core/model/registry.h"

#include <span>

#include "core/archs/archs.h"
#include "core/base/error.h"
#include "core/gguf/gguf.h"

namespace strata::core {
namespace {

std::span<const Architecture* const> rows() {
  static const Architecture* const all[] = {&archs::qwen3moe(), &archs::llama_moe()};
  return all;
}

int32_t checked(const std::string& key, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' = {} is outside [{}, {}]", key, v, lo, hi);
  return static_cast<int32_t>(v);
}

}  // namespace

int32_t HParams::required(const char* key, int64_t lo, int64_t hi) const {
  const std::string k = full_name(key);
  return checked(k, static_cast<int64_t>(file_.get_u64(k)), lo, hi);
}

int32_t HParams::optional(const char* key, int64_t fallback, int64_t lo, int64_t hi) const {
  const std::string k = full_name(key);
  return checked(k, static_cast<int64_t>(file_.get_u64_or(k, static_cast<uint64_t>(fallback))), lo, hi);
}

bool HParams::has(const char* key) const { return file_.has(full_name(key)); }

float HParams::real(const char* key, float fallback) const { return file_.get_f32_or(full_name(key), fallback); }

float HParams::real_in(const char* key, float fallback, float lo, float hi) const {
  const float v = real(key, fallback);
  if (!(v > lo && v <= hi))
    fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' must be in ({}, {}], got {}", full_name(key), lo, hi, v);
  return v;
}

std::string HParams::string(const char* key, std::string_view fallback) const {
  return file_.get_string_or(full_name(key), fallback);
}

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture* a : rows())
    if (name == a->name) return a;
  return nullptr;
}

std::string architecture_names() {
  std::string names;
  for (const Architecture* a : rows()) names += (names.empty() ? "" : ", ") + std::string(a->name);
  return names;
}

}  // namespace strata::core
