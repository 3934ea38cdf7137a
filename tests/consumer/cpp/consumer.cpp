// Install test: a C++ program built against the installed libstrata.
#include <strata/strata.h>

#include <cstdio>
#include <string_view>

int main() {
  const std::string_view version = strata_version_string();
  const bool ok = version == EXPECTED_VERSION &&
                  std::string_view(strata_status_name(STRATA_ERR_IO)) == "STRATA_ERR_IO" &&
                  std::string_view(strata_status_name(STRATA_ABORTED)) == "STRATA_ABORTED" &&
                  std::string_view(strata_last_error()).empty();
  std::printf("C++ consumer: libstrata %.*s, %s\n", static_cast<int>(version.size()), version.data(),
              ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
