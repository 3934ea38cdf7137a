// Byte counts: "12GiB"/"800MB" size strings, GiB text for messages, and alignment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::core {

// Parses a size such as "12GiB", "800MB", "1.5G", "4096" or "64 KiB".
// Units (case-insensitive): B, K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024),
// KB, MB, GB, TB (powers of 1000); no unit means bytes. A fraction is allowed
// ("1.5GiB") and rounds down to whole bytes. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) naming the text for an empty string, a
// missing number, an unknown unit, a negative value or one above 2^64 - 1.
uint64_t parse_byte_size(std::string_view text);

// "12.50 GiB", or "31.25 MiB" below 1 GiB: two decimals, for error messages and logs.
std::string format_bytes(uint64_t bytes);

// Smallest multiple of align that is >= n. align must be a power of two.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) when it is not, or when the
// result would not fit 64 bits.
uint64_t align_up(uint64_t n, uint64_t align);

// Sum that throws Error(STRATA_ERR_INVALID_ARGUMENT) on 64-bit overflow
// instead of wrapping: plans add sizes taken from files and options.
uint64_t add_bytes(uint64_t a, uint64_t b);
// Product with the same overflow check.
uint64_t mul_bytes(uint64_t a, uint64_t b);

}  // namespace strata::core
