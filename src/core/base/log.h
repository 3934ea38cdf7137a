// Diagnostics to stderr, silenced with STRATA_LOG=0.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace strata::core {

bool log_enabled();
void log_line(std::string_view level, std::string_view message);

template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled()) log_line("info", fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace strata::core
