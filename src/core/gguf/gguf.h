// GGUF files: metadata values, tensor infos, and the validating mmap reader.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/gguf/mapped_file.h"

namespace strata::core {

// Metadata value type codes, as stored in the file.
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
inline constexpr uint32_t kGgufValueTypeCount = 13;

// "u8", "i32", "f32", "bool", "string", "array", ...; "unknown" past the end.
const char* gguf_value_type_name(GgufValueType type);

class GgufValue;

// The elements of an array, in one vector of the element's own C++ type, so
// that a 150K-entry vocabulary is one std::vector<std::string> and a score
// table one std::vector<float>. The alternative's index is the GGUF type code
// of the elements (index 9: nested arrays, each element itself an array).
using GgufArray = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                               std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                               std::vector<float>, std::vector<bool>, std::vector<std::string>,
                               std::vector<GgufValue>, std::vector<uint64_t>, std::vector<int64_t>,
                               std::vector<double>>;

// One metadata value: a scalar, a string, or an array. Immutable once made.
class GgufValue {
 public:
  // The alternative's index is the GGUF type code of the value.
  using Payload = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;

  // Named factories rather than overloaded constructors: a literal 7 or "x"
  // must never silently become a u8 or a bool.
  static GgufValue u8(uint8_t v) { return GgufValue(Payload(std::in_place_type<uint8_t>, v)); }
  static GgufValue i8(int8_t v) { return GgufValue(Payload(std::in_place_type<int8_t>, v)); }
  static GgufValue u16(uint16_t v) { return GgufValue(Payload(std::in_place_type<uint16_t>, v)); }
  static GgufValue i16(int16_t v) { return GgufValue(Payload(std::in_place_type<int16_t>, v)); }
  static GgufValue u32(uint32_t v) { return GgufValue(Payload(std::in_place_type<uint32_t>, v)); }
  static GgufValue i32(int32_t v) { return GgufValue(Payload(std::in_place_type<int32_t>, v)); }
  static GgufValue f32(float v) { return GgufValue(Payload(std::in_place_type<float>, v)); }
  static GgufValue boolean(bool v) { return GgufValue(Payload(std::in_place_type<bool>, v)); }
  static GgufValue string(std::string v) { return GgufValue(Payload(std::in_place_type<std::string>, std::move(v))); }
  static GgufValue u64(uint64_t v) { return GgufValue(Payload(std::in_place_type<uint64_t>, v)); }
  static GgufValue i64(int64_t v) { return GgufValue(Payload(std::in_place_type<int64_t>, v)); }
  static GgufValue f64(double v) { return GgufValue(Payload(std::in_place_type<double>, v)); }

  // An array of scalars or strings; T is one of uint8_t, int8_t, uint16_t,
  // int16_t, uint32_t, int32_t, float, bool, std::string, uint64_t, int64_t, double.
  template <typename T>
  static GgufValue array(std::vector<T> elements) {
    static_assert(!std::is_same_v<T, GgufValue>, "nested arrays go through array_of_arrays()");
    return GgufValue(Payload(std::in_place_type<GgufArray>, std::in_place_type<std::vector<T>>, std::move(elements)));
  }
  // An array whose elements are arrays (of any element types). Throws
  // Error(STRATA_ERR_INVALID_ARGUMENT) if an element is not an array.
  static GgufValue array_of_arrays(std::vector<GgufValue> elements);
  // An empty array of the given element type.
  static GgufValue empty_array(GgufValueType element_type);
  // Wraps a payload read from a file or built elsewhere.
  static GgufValue from_payload(Payload payload) { return GgufValue(std::move(payload)); }

  GgufValueType type() const { return static_cast<GgufValueType>(payload_.index()); }
  const Payload& payload() const { return payload_; }
  bool is_array() const { return type() == GgufValueType::Array; }
  // u8..i64 (bool is not an integer here).
  bool is_integer() const;

  // The scalar or string when the type is exactly T, else nullptr.
  template <typename T>
  const T* get_if() const {
    return std::get_if<T>(&payload_);
  }
  // The integer value converted to T when the value is of any integer type
  // and fits in T; std::nullopt otherwise (a float, a negative into unsigned, ...).
  template <typename T>
  std::optional<T> to_int() const;
  // Any integer or float scalar as a double; std::nullopt for others.
  std::optional<double> to_double() const;

  // Arrays (each returns nothing useful for a non-array: nullptr / 0).
  const GgufArray* array_if() const { return std::get_if<GgufArray>(&payload_); }
  // The element type; Error(STRATA_ERR_INVALID_ARGUMENT) for a non-array.
  GgufValueType element_type() const;
  size_t array_size() const;
  // The elements when the element type is exactly T, else nullptr.
  template <typename T>
  const std::vector<T>* array_if() const {
    const GgufArray* a = array_if();
    return a ? std::get_if<std::vector<T>>(a) : nullptr;
  }

  // A short rendering for messages and `strata inspect`: scalars in full,
  // strings quoted, arrays as `[u32 x 3: 1, 2, 3]` with at most
  // `max_elements` elements shown.
  std::string to_string(size_t max_elements = 8) const;

  bool operator==(const GgufValue& other) const = default;

 private:
  explicit GgufValue(Payload payload) : payload_(std::move(payload)) {}
  Payload payload_;
};

template <typename T>
std::optional<T> GgufValue::to_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<T> {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) {
          if (std::in_range<T>(v)) return static_cast<T>(v);
        }
        return std::nullopt;
      },
      payload_);
}

// One metadata entry.
struct GgufKv {
  std::string key;
  GgufValue value;
  bool operator==(const GgufKv& other) const = default;
};

// Where one tensor lives in the file. All sizes were checked at open.
struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  // ne[0] is the row length (the fastest-varying dimension); dims past
  // n_dims are 1, so a 2-D tensor has n_elements == ne[0] * ne[1].
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  uint32_t type = 0;           // GGUF tensor type id (the GgmlType value)
  uint64_t offset = 0;         // from the start of the data section
  uint64_t file_offset = 0;    // from the start of the file
  uint64_t n_bytes = 0;
  int64_t n_elements = 0;
  uint64_t info_offset = 0;    // where this tensor's info record starts in the file
  const uint8_t* data = nullptr;  // into the file's bytes; valid while the GgufFile lives

  std::span<const int64_t> dims() const { return {ne.data(), n_dims}; }
  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(n_bytes)}; }
  int64_t n_rows() const { return n_elements / ne[0]; }
};

// A validated GGUF file (v2 or v3, little-endian). Every count, length,
// dimension, type, offset and tensor range was checked before use, so tensor
// data pointers are safe to read in full. Immutable after opening; may be
// shared by threads. Move-only.
class GgufFile {
 public:
  // Maps `path` read-only. Errors: STRATA_ERR_IO (cannot open or map),
  // STRATA_ERR_FORMAT (corrupt or truncated; the message names the field and
  // its byte offset), STRATA_ERR_UNSUPPORTED (version, unknown tensor type).
  static GgufFile open(const std::string& path);
  // Parses bytes in memory without copying them: the caller keeps `bytes`
  // alive and unchanged as long as the GgufFile lives. Same errors as open().
  static GgufFile from_memory(std::span<const uint8_t> bytes);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  const std::string& path() const { return path_; }  // "<memory>" for from_memory
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata, in file order.
  const std::vector<GgufKv>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters. Each throws Error(STRATA_ERR_FORMAT) naming the key when
  // it is missing (the _or forms return the default instead) or when its value
  // cannot be read as the asked type. Integer getters accept any integer type
  // whose value fits (files differ in which width they store); float getters
  // accept f32, f64 and integers.
  uint32_t get_u32(std::string_view key) const;
  uint32_t get_u32_or(std::string_view key, uint32_t fallback) const;
  int32_t get_i32(std::string_view key) const;
  int32_t get_i32_or(std::string_view key, int32_t fallback) const;
  uint64_t get_u64(std::string_view key) const;
  uint64_t get_u64_or(std::string_view key, uint64_t fallback) const;
  int64_t get_i64(std::string_view key) const;
  int64_t get_i64_or(std::string_view key, int64_t fallback) const;
  float get_f32(std::string_view key) const;
  float get_f32_or(std::string_view key, float fallback) const;
  bool get_bool(std::string_view key) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  const std::string& get_string(std::string_view key) const;
  std::string get_string_or(std::string_view key, std::string_view fallback) const;
  // Arrays. The string array is returned by reference (no copy of a vocabulary).
  const std::vector<std::string>& get_string_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;
  std::vector<uint32_t> get_u32_array(std::string_view key) const;
  std::vector<int64_t> get_i64_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;

  // Tensors, in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // Throws Error(STRATA_ERR_FORMAT) naming the tensor and the file when absent.
  const GgufTensorInfo& tensor(std::string_view name) const;

 private:
  // Heterogeneous lookup, so find(string_view) allocates nothing.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using NameIndex = std::unordered_map<std::string, size_t, NameHash, std::equal_to<>>;

  GgufFile() = default;
  void parse();
  const GgufValue& require(std::string_view key) const;

  MappedFile file_;  // empty for from_memory
  std::string path_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  NameIndex key_index_;
  NameIndex tensor_index_;
};

}  // namespace strata::core
