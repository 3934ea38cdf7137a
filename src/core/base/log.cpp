// Diagnostics to stderr, silenced with STRATA_LOG=0 (core/base/env.h).
#include "core/base/log.h"

#include <cstdio>

#include "core/base/env.h"

namespace strata::core {

bool log_enabled() {
  return env_flag(EnvVar::Log);
}

void log_line(std::string_view level, std::string_view message) {
  std::fprintf(stderr, "strata: %.*s: %.*s\n", static_cast<int>(level.size()), level.data(),
               static_cast<int>(message.size()), message.data());
}

}  // namespace strata::core
