// The internal error type keeps its status code and formatted message.
#include "catch.hpp"
#include "core/base/error.h"

TEST_CASE("fail() throws Error with status and message") {
  try {
    strata::core::fail(STRATA_ERR_FORMAT, "bad {} at offset {}", "magic", 4);
    FAIL("fail() returned");
  } catch (const strata::core::Error& e) {
    CHECK(e.status() == STRATA_ERR_FORMAT);
    CHECK(std::string(e.what()) == "bad magic at offset 4");
  }
}
