// Diagnostics to stderr, silenced with STRATA_LOG=0.
#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::core {

bool log_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("STRATA_LOG");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return enabled;
}

void log_line(std::string_view level, std::string_view message) {
  std::fprintf(stderr, "strata: %.*s: %.*s\n", static_cast<int>(level.size()), level.data(),
               static_cast<int>(message.size()), message.data());
}

}  // namespace strata::core
