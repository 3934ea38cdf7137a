// Byte-size parsing, GiB formatting and checked size arithmetic.
#include "core/base/bytes.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>

#include "core/base/error.h"

namespace strata::core {

namespace {

struct Unit {
  std::string_view name;  // lower case
  uint64_t factor;
};

// Binary units take the short spelling too ("G"), because that is what people
// type for GPU memory; only the explicit "GB" family means powers of 1000.
constexpr std::array<Unit, 14> kUnits{{
    {"", 1},
    {"b", 1},
    {"k", 1ull << 10},
    {"kib", 1ull << 10},
    {"m", 1ull << 20},
    {"mib", 1ull << 20},
    {"g", 1ull << 30},
    {"gib", 1ull << 30},
    {"t", 1ull << 40},
    {"tib", 1ull << 40},
    {"kb", 1000ull},
    {"mb", 1000ull * 1000},
    {"gb", 1000ull * 1000 * 1000},
    {"tb", 1000ull * 1000 * 1000 * 1000},
}};

bool find_unit(std::string_view unit, uint64_t* factor) {
  for (const Unit& u : kUnits) {
    if (u.name == unit) {
      *factor = u.factor;
      return true;
    }
  }
  return false;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

uint64_t parse_byte_size(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  if (s.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "size: empty string (try 12GiB or 800MB)");
  if (s.front() == '-') fail(STRATA_ERR_INVALID_ARGUMENT, "size '{}': negative", text);

  // Whole part exactly in 64 bits, fraction apart, read digit by digit so no
  // locale or stod quirk ("1e3", "inf", "0x10") slips through.
  size_t i = 0;
  uint64_t whole = 0;
  size_t digits = 0;
  bool too_big = false;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (whole > (UINT64_MAX - d) / 10)
      too_big = true;
    else
      whole = whole * 10 + d;
    ++i, ++digits;
  }
  double frac = 0, scale = 1;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      scale /= 10;
      frac += (s[i] - '0') * scale;
      ++i, ++digits;
    }
  }
  if (digits == 0) fail(STRATA_ERR_INVALID_ARGUMENT, "size '{}': no number (try 12GiB or 800MB)", text);
  while (i < s.size() && is_space(s[i])) ++i;

  std::string unit;
  for (; i < s.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  uint64_t factor = 0;
  if (!find_unit(unit, &factor)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "size '{}': unknown unit '{}' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", text,
         unit);
  }
  // The fraction of one unit is below factor <= 2^40, so the double is exact
  // enough and its floor fits.
  const uint64_t part = static_cast<uint64_t>(std::floor(frac * static_cast<double>(factor)));
  if (too_big || (whole != 0 && factor > UINT64_MAX / whole) || whole * factor > UINT64_MAX - part) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "size '{}': above 2^64 - 1 bytes", text);
  }
  return whole * factor + part;
}

std::string format_bytes(uint64_t bytes) {
  // Below 1 GiB, MiB: two decimals of a GiB would hide a small model's sizes and shortfalls.
  if (bytes > 0 && bytes < (uint64_t(1) << 30)) return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / 1048576.0);
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0);
}

uint64_t align_up(uint64_t n, uint64_t align) {
  if (align == 0 || (align & (align - 1)) != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "alignment {} is not a power of two", align);
  }
  const uint64_t r = n & (align - 1);
  return r == 0 ? n : add_bytes(n, align - r);
}

uint64_t add_bytes(uint64_t a, uint64_t b) {
  if (a > UINT64_MAX - b) fail(STRATA_ERR_INVALID_ARGUMENT, "size overflow: {} + {} bytes", a, b);
  return a + b;
}

uint64_t mul_bytes(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) fail(STRATA_ERR_INVALID_ARGUMENT, "size overflow: {} x {} bytes", a, b);
  return a * b;
}

}  // namespace strata::core
