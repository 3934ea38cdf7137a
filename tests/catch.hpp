// One include for Catch2 v2 (Debian 12: catch2/catch.hpp) and v3 (catch2/catch_all.hpp).
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
namespace Catch {
using Detail::Approx;
}
#endif
