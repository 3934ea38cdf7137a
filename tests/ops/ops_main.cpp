// Runner of the CUDA op tests: exits 77 (ctest: skipped) when there is no CUDA device, and prints the prompt attention kernel and the run's seed.
#if !__has_include(<catch2/catch_all.hpp>)
#define CATCH_CONFIG_RUNNER
#endif
#include <cstdio>

#include "catch.hpp"
#include "cuda/attention/attention.cuh"
#include "cuda/runtime/runtime.h"
#include "ops/ops_util.h"

int main(int argc, char** argv) {
  if (strata::cuda::device_count() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  const strata::cuda::DeviceInfo info = strata::cuda::device_info(0);
  std::printf("ops_tests on device 0: %s (sm_%d%d, %d SMs), prompt attention on %s; seed=%llu (replay with "
              "STRATA_TEST_SEED=%llu)\n",
              info.name.c_str(), info.cc_major, info.cc_minor, info.sm_count,
              strata::cuda::attention_kernel() == strata::cuda::AttentionKernel::Wgmma ? "wgmma" : "mma.sync",
              static_cast<unsigned long long>(strata::test::ops_seed()),
              static_cast<unsigned long long>(strata::test::ops_seed()));
  std::fflush(stdout);
  return Catch::Session().run(argc, argv);
}
