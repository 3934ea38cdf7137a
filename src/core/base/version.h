// Library version, from the CMake project version.
#pragma once

namespace strata::core {
const char* version_string();
}
