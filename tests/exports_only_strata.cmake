# Fails unless every dynamic symbol LIB defines starts with strata_ and
# strata_version_string is one of them (STYLE.md 5; cmake/strata.map does it).
# Usage: cmake -DNM=<nm> -DLIB=<libstrata.so> -P exports_only_strata.cmake
execute_process(COMMAND "${NM}" -D --defined-only "${LIB}"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIB} failed (${rc}): ${err}")
endif()

string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(bad "")
set(count 0)
set(has_version OFF)
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; the address is blank for absolute symbols.
  if(NOT line MATCHES "^[0-9a-fA-F ]* [A-Za-z] (.+)$")
    message(FATAL_ERROR "unexpected nm line: '${line}'")
  endif()
  set(sym "${CMAKE_MATCH_1}")
  math(EXPR count "${count} + 1")
  if(NOT sym MATCHES "^strata_")
    string(APPEND bad "  ${sym}\n")
  endif()
  if(sym MATCHES "^strata_version_string(@|$)")
    set(has_version ON)
  endif()
endforeach()

if(bad)
  message(FATAL_ERROR "${LIB} exports symbols outside the C ABI:\n${bad}")
endif()
if(NOT has_version)
  message(FATAL_ERROR "${LIB} does not export strata_version_string")
endif()
message(STATUS "${LIB}: ${count} symbols exported, all strata_*")
