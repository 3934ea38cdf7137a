// Library version, from the CMake project version.
#include "core/base/version.h"

namespace strata::core {
const char* version_string() { return STRATA_VERSION_STRING; }
}  // namespace strata::core
