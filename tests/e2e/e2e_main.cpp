// Runner of the GPU end-to-end tests: skipped (exit 77) where there is no CUDA device.
#define CATCH_CONFIG_RUNNER
#include <cstdio>

#include "catch.hpp"
#include "core/runtime/backends.h"

int main(int argc, char** argv) {
  if (strata::core::device_count(strata::core::LogicalDevice::Kind::Cuda) == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
