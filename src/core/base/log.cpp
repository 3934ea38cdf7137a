// Diagnostics to stderr, silenced with STRATA_LOG=0 (core/base/env.h).
#include "core/base/log.h"

#include <cstdio>
#include <string>

#include "core/base/env.h"
#include "core/text/unicode.h"

namespace strata::core {

bool log_enabled() {
  return env_flag(EnvVar::Log);
}

void log_line(std::string_view level, std::string_view message) {
  const std::string line = printable(message);  // file names, metadata: nothing in them starts a line or an escape
  std::fprintf(stderr, "strata: %.*s: %s\n", static_cast<int>(level.size()), level.data(), line.c_str());
}

}  // namespace strata::core
