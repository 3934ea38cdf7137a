// Strict recursive-descent JSON parser, value accessors and string escaping.
#include "core/base/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/base/error.h"
#include "core/text/unicode.h"

namespace strata::core {

const char* json_type_name(Json::Type t) {
  switch (t) {
    case Json::Type::Null: return "null";
    case Json::Type::Bool: return "bool";
    case Json::Type::Number: return "number";
    case Json::Type::String: return "string";
    case Json::Type::Array: return "array";
    case Json::Type::Object: return "object";
  }
  return "?";
}

Json Json::make_bool(bool b) { Json j; j.v_ = b; return j; }
Json Json::make_number(double d) { Json j; j.v_ = d; return j; }
Json Json::make_string(std::string s) { Json j; j.v_ = std::move(s); return j; }
Json Json::make_array(Array items) { Json j; j.v_ = std::move(items); return j; }
Json Json::make_object(Object members) { Json j; j.v_ = std::move(members); return j; }

namespace {
[[noreturn]] void wrong_type(Json::Type want, Json::Type got) {
  fail(STRATA_ERR_FORMAT, "json: expected {}, found {}", json_type_name(want), json_type_name(got));
}
}  // namespace

bool Json::as_bool() const {
  if (!is_bool()) wrong_type(Type::Bool, type());
  return std::get<bool>(v_);
}

double Json::as_number() const {
  if (!is_number()) wrong_type(Type::Number, type());
  return std::get<double>(v_);
}

int64_t Json::as_int() const {
  const double d = as_number();
  // 2^63 is exactly representable; anything at or above it does not fit.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || std::trunc(d) != d) {
    fail(STRATA_ERR_FORMAT, "json: expected an integer, found {}", d);
  }
  return int64_t(d);
}

const std::string& Json::as_string() const {
  if (!is_string()) wrong_type(Type::String, type());
  return std::get<std::string>(v_);
}

const Json::Array& Json::as_array() const {
  if (!is_array()) wrong_type(Type::Array, type());
  return std::get<Array>(v_);
}

const Json::Object& Json::as_object() const {
  if (!is_object()) wrong_type(Type::Object, type());
  return std::get<Object>(v_);
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const Member& m : std::get<Object>(v_)) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

const Json& Json::at(std::string_view key) const {
  if (!is_object()) wrong_type(Type::Object, type());
  if (const Json* j = find(key)) return *j;
  fail(STRATA_ERR_FORMAT, "json: missing key \"{}\"", key);
}

namespace {

constexpr int kMaxDepth = 512;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Json document() {
    skip_ws();
    Json v = value(0);
    skip_ws();
    if (pos_ != s_.size()) error("trailing data after the value");
    return v;
  }

 private:
  [[noreturn]] void error(std::string_view what) const {
    fail(STRATA_ERR_FORMAT, "json: {} at offset {}", what, pos_);
  }

  void skip_ws() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  void expect_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) error("invalid literal");
    pos_ += w.size();
  }

  Json value(int depth) {
    if (pos_ >= s_.size()) error("unexpected end of input");
    switch (s_[pos_]) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': return Json::make_string(string());
      case 't': expect_word("true"); return Json::make_bool(true);
      case 'f': expect_word("false"); return Json::make_bool(false);
      case 'n': expect_word("null"); return Json();
      default: return number();
    }
  }

  Json array(int depth) {
    if (depth > kMaxDepth) error("nesting too deep");
    ++pos_;  // '['
    Json::Array items;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return Json::make_array(std::move(items));
    }
    for (;;) {
      skip_ws();
      items.push_back(value(depth));
      skip_ws();
      if (pos_ >= s_.size()) error("unterminated array");
      const char c = s_[pos_++];
      if (c == ']') break;
      if (c != ',') { --pos_; error("expected ',' or ']'"); }
    }
    return Json::make_array(std::move(items));
  }

  Json object(int depth) {
    if (depth > kMaxDepth) error("nesting too deep");
    const std::size_t start = pos_;
    ++pos_;  // '{'
    Json::Object members;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return Json::make_object(std::move(members));
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a string key");
      std::string key = string();
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') error("expected ':'");
      ++pos_;
      skip_ws();
      members.push_back({std::move(key), value(depth)});
      skip_ws();
      if (pos_ >= s_.size()) error("unterminated object");
      const char c = s_[pos_++];
      if (c == '}') break;
      if (c != ',') { --pos_; error("expected ',' or '}'"); }
    }
    check_unique_keys(members, start);
    return Json::make_object(std::move(members));
  }

  // Duplicate keys make lookups ambiguous, so they are an error; large
  // objects (a 150K-entry vocabulary) are checked by sorting.
  void check_unique_keys(const Json::Object& members, std::size_t start) const {
    auto dup = [&](std::string_view key) {
      fail(STRATA_ERR_FORMAT, "json: duplicate key \"{}\" in the object at offset {}", key, start);
    };
    if (members.size() <= 16) {
      for (std::size_t i = 0; i < members.size(); ++i)
        for (std::size_t j = i + 1; j < members.size(); ++j)
          if (members[i].key == members[j].key) dup(members[i].key);
      return;
    }
    std::vector<std::string_view> keys;
    keys.reserve(members.size());
    for (const auto& m : members) keys.push_back(m.key);
    std::sort(keys.begin(), keys.end());
    const auto it = std::adjacent_find(keys.begin(), keys.end());
    if (it != keys.end()) dup(*it);
  }

  unsigned hex4() {
    if (s_.size() - pos_ < 4) error("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else { --pos_; error("invalid hex digit in \\u escape"); }
    }
    return v;
  }

  // Called with pos_ just after "\u".
  uint32_t unicode_escape() {
    const std::size_t at = pos_ - 2;
    const unsigned hi = hex4();
    if (hi >= 0xDC00 && hi <= 0xDFFF) { pos_ = at; error("lone low surrogate in \\u escape"); }
    if (hi < 0xD800 || hi > 0xDBFF) return hi;
    if (s_.substr(pos_, 2) != "\\u") { pos_ = at; error("high surrogate without a low surrogate"); }
    pos_ += 2;
    const unsigned lo = hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) { pos_ = at; error("high surrogate without a low surrogate"); }
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      // Copy the plain run up to the next quote, escape, control or non-ASCII byte.
      const std::size_t run = pos_;
      while (pos_ < s_.size()) {
        const auto c = static_cast<unsigned char>(s_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++pos_;
      }
      out.append(s_.data() + run, pos_ - run);
      if (pos_ >= s_.size()) error("unterminated string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') { ++pos_; return out; }
      if (c < 0x20) error("unescaped control character in string");
      if (c >= 0x80) {
        const Utf8Char u = utf8_decode(s_, pos_);
        if (u.cp == kInvalidCodepoint) error("invalid UTF-8 in string");
        out.append(s_.data() + pos_, u.len);
        pos_ += u.len;
        continue;
      }
      // Backslash escape.
      if (pos_ + 1 >= s_.size()) error("unterminated string");
      const char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': utf8_append(out, unicode_escape()); break;
        default: pos_ -= 2; error("invalid escape in string");
      }
    }
  }

  Json number() {
    const std::size_t start = pos_;
    auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (!digit()) error(pos_ == start ? "unexpected character" : "expected a digit");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) error("leading zero in number");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digit()) error("expected a digit after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) error("expected a digit in the exponent");
      while (digit()) ++pos_;
    }
    double d = 0;
    const auto r = std::from_chars(s_.data() + start, s_.data() + pos_, d);
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars leaves d alone then: tell overflow (an error) from
      // underflow (the nearest double is a zero of the right sign).
      if (decimal_magnitude(s_.substr(start, pos_ - start)) > 0) { pos_ = start; error("number out of range"); }
      d = s_[start] == '-' ? -0.0 : 0.0;
    } else if (r.ec != std::errc() || r.ptr != s_.data() + pos_) {
      pos_ = start;
      error("invalid number");
    }
    return Json::make_number(d);
  }

  // Decimal exponent of the leading nonzero digit of a valid JSON number
  // plus one ("123" -> 3, "0.01" -> -1, "5e4" -> 5), clamped to +-1e6.
  static long decimal_magnitude(std::string_view num) {
    long lead = 0;  // digits before the point, counted from the first nonzero one
    long zeros_after_point = 0;
    bool seen_nonzero = false, in_fraction = false;
    long exp = 0;
    int exp_sign = 1;
    std::size_t i = num[0] == '-' ? 1 : 0;
    for (; i < num.size(); ++i) {
      const char c = num[i];
      if (c == '.') { in_fraction = true; continue; }
      if (c == 'e' || c == 'E') break;
      if (c != '0') seen_nonzero = true;
      if (!in_fraction && seen_nonzero) ++lead;
      if (in_fraction && !seen_nonzero) ++zeros_after_point;
    }
    if (i < num.size()) {
      ++i;
      if (num[i] == '+' || num[i] == '-') exp_sign = num[i++] == '-' ? -1 : 1;
      for (; i < num.size(); ++i) exp = std::min(exp * 10 + (num[i] - '0'), 1000000L);
    }
    if (!seen_nonzero) return -1000000;
    return (lead > 0 ? lead : -zeros_after_point) + exp_sign * exp;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

Json parse_json(std::string_view text) { return Parser(text).document(); }

void json_append_string(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

}  // namespace strata::core
