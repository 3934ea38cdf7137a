// Errors inside the engine: one exception type that carries a strata_status code.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "strata/strata.h"

namespace strata::core {

// Thrown for every failure inside the library; the C ABI turns it into a
// strata_status and a thread-local message.
class Error : public std::runtime_error {
 public:
  Error(strata_status status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  strata_status status() const noexcept { return status_; }

 private:
  strata_status status_;
};

template <typename... Args>
[[noreturn]] void fail(strata_status status, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace strata::core
