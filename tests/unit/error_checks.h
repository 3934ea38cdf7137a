// Test helpers for strata::core::Error: message substrings, status of a call, both at once (Catch2 v2 and v3 alike).
#pragma once

#include <functional>
#include <string>

#include "catch.hpp"
#include "core/base/error.h"

// Checks that an exception's message contains a substring, printing the whole
// message when it does not. (Catch2 v2 and v3 name their matcher differently.)
#define CHECK_MSG_HAS(error, part)                                        \
  do {                                                                    \
    INFO("message: " << (error).what());                                  \
    CHECK(std::string((error).what()).find(part) != std::string::npos);   \
  } while (0)

// Checks that `expr` throws strata::core::Error with `status` and a message
// containing `part`.
#define CHECK_FAILS_WITH(expr, status_, part)          \
  do {                                                 \
    try {                                              \
      (void)(expr);                                    \
      FAIL_CHECK("no error from " #expr);              \
    } catch (const strata::core::Error& e_) {          \
      CHECK(e_.status() == (status_));                 \
      CHECK_MSG_HAS(e_, part);                         \
    }                                                  \
  } while (0)

// The status an Error thrown by `fn` carries, or STRATA_OK when none is thrown.
inline strata_status status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const strata::core::Error& e) {
    return e.status();
  }
  return STRATA_OK;
}
