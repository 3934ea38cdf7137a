// A small strict JSON (RFC 8259) parser producing an immutable value tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata::core {

// One JSON value. Objects keep their members in document order; duplicate
// keys are rejected by the parser. The as_*() accessors throw
// Error(STRATA_ERR_FORMAT) naming the expected and the actual type.
class Json {
 public:
  enum class Type : uint8_t { Null, Bool, Number, String, Array, Object };
  struct Member;
  using Array = std::vector<Json>;
  using Object = std::vector<Member>;

  Json() = default;  // null
  static Json make_bool(bool b);
  static Json make_number(double d);
  static Json make_string(std::string s);
  static Json make_array(Array items);
  static Json make_object(Object members);

  Type type() const { return Type(v_.index()); }
  bool is_null() const { return type() == Type::Null; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_number() const { return type() == Type::Number; }
  bool is_string() const { return type() == Type::String; }
  bool is_array() const { return type() == Type::Array; }
  bool is_object() const { return type() == Type::Object; }

  bool as_bool() const;
  double as_number() const;
  // The number as an integer; throws unless it is integral and within int64.
  int64_t as_int() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Member `key` of an object; nullptr when absent or when this is not an object.
  const Json* find(std::string_view key) const;
  // Member `key` of an object; throws Error(STRATA_ERR_FORMAT) when absent.
  const Json& at(std::string_view key) const;

 private:
  std::variant<std::monostate, bool, double, std::string, Array, Object> v_;
};

struct Json::Member {
  std::string key;
  Json value;
};

const char* json_type_name(Json::Type t);

// Parses a complete document: one value with optional whitespace around it.
// Throws Error(STRATA_ERR_FORMAT, "json: <what> at offset <n>") on bad input
// (including invalid UTF-8, unescaped control characters, lone surrogates
// in \u escapes, leading zeros, trailing data, nesting deeper than 512).
Json parse_json(std::string_view text);

// Appends `s` as a JSON string literal (quotes included, control characters
// and non-ASCII kept as UTF-8 except for the escapes JSON requires).
void json_append_string(std::string& out, std::string_view s);

}  // namespace strata::core
