/* Install test: a C11 program built against the installed libstrata. */
#include <stdio.h>
#include <string.h>

#include <strata/strata.h>

static int failures = 0;

static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "consumer.c: FAILED: %s\n", what);
    ++failures;
  }
}

int main(void) {
  const char* version = strata_version_string();
  int major = -1, minor = -1, patch = -1;
  char numbers[64];

  expect(version != NULL && version[0] != '\0', "strata_version_string() is a non-empty string");
  if (version == NULL) return 1;
  strata_version(&major, &minor, &patch);
  snprintf(numbers, sizeof numbers, "%d.%d.%d", major, minor, patch);
  expect(strcmp(version, numbers) == 0, "strata_version() agrees with strata_version_string()");
#ifdef EXPECTED_VERSION
  expect(strcmp(version, EXPECTED_VERSION) == 0, "the library is the version the package announced");
#endif
  expect(strcmp(strata_status_name(STRATA_OK), "STRATA_OK") == 0, "strata_status_name(STRATA_OK)");
  expect(strcmp(strata_status_name(STRATA_ERR_FORMAT), "STRATA_ERR_FORMAT") == 0,
         "strata_status_name(STRATA_ERR_FORMAT)");
  expect(strata_status_name((strata_status)12345) != NULL, "strata_status_name(unknown) is not NULL");
  expect(strcmp(strata_last_error(), "") == 0, "no error before any failing call");

  printf("C consumer: libstrata %s, %s\n", version, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
