// Option-list fields: split_fields and trim_blanks.
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "core/base/fields.h"

using strata::core::split_fields;
using strata::core::trim_blanks;
using Fields = std::vector<std::string_view>;

TEST_CASE("split_fields keeps every field, empty ones too, in order") {
  CHECK(split_fields("0,0,cpu") == Fields{"0", "0", "cpu"});
  CHECK(split_fields("a,,b") == Fields{"a", "", "b"});
  CHECK(split_fields("a,") == Fields{"a", ""});
  CHECK(split_fields(",") == Fields{"", ""});
  CHECK(split_fields("") == Fields{""});
  CHECK(split_fields("x=1;y=2", ';') == Fields{"x=1", "y=2"});
}

TEST_CASE("trim_blanks removes spaces and tabs at the ends only") {
  CHECK(trim_blanks(" \t24 24\t ") == "24 24");
  CHECK(trim_blanks("   ").empty());
  CHECK(trim_blanks("a") == "a");
}
