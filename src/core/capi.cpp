// The C ABI: every entry point turns exceptions into a strata_status.
#include "strata/strata.h"

#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/version.h"

namespace {

thread_local std::string g_last_error;

}  // namespace

extern "C" {

STRATA_API const char* strata_version_string(void) { return strata::core::version_string(); }

STRATA_API void strata_version(int* out_major, int* out_minor, int* out_patch) {
  int v[3] = {0, 0, 0};
  std::sscanf(strata::core::version_string(), "%d.%d.%d", &v[0], &v[1], &v[2]);
  if (out_major) *out_major = v[0];
  if (out_minor) *out_minor = v[1];
  if (out_patch) *out_patch = v[2];
}

STRATA_API const char* strata_last_error(void) { return g_last_error.c_str(); }

STRATA_API const char* strata_status_name(strata_status status) {
  switch (status) {
    case STRATA_OK: return "STRATA_OK";
    case STRATA_ABORTED: return "STRATA_ABORTED";
    case STRATA_ERR_INVALID_ARGUMENT: return "STRATA_ERR_INVALID_ARGUMENT";
    case STRATA_ERR_IO: return "STRATA_ERR_IO";
    case STRATA_ERR_FORMAT: return "STRATA_ERR_FORMAT";
    case STRATA_ERR_UNSUPPORTED: return "STRATA_ERR_UNSUPPORTED";
    case STRATA_ERR_OUT_OF_MEMORY: return "STRATA_ERR_OUT_OF_MEMORY";
    case STRATA_ERR_DEVICE: return "STRATA_ERR_DEVICE";
    case STRATA_ERR_CONTEXT_FULL: return "STRATA_ERR_CONTEXT_FULL";
    case STRATA_ERR_STATE: return "STRATA_ERR_STATE";
    case STRATA_ERR_INTERNAL: return "STRATA_ERR_INTERNAL";
  }
  return "STRATA_ERR_UNKNOWN";
}

}  // extern "C"
