// The backend registry (src/core/runtime/backends.h) and the layering it allows: no backend in core or prefill.
#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "core/runtime/backends.h"

namespace fs = std::filesystem;
using strata::core::BackendEntry;
using strata::core::LogicalDevice;

TEST_CASE("backends: the CPU backend is always registered, CUDA exactly in a CUDA build", "[backends]") {
  const BackendEntry* cpu = strata::core::find_backend(LogicalDevice::Kind::Cpu);
  REQUIRE(cpu != nullptr);
  CHECK(std::string(cpu->name) == "cpu");
  CHECK(strata::core::device_count(LogicalDevice::Kind::Cpu) == 1);
  CHECK(cpu->memory_bytes(-1) > (uint64_t{1} << 28));  // the host's memory: more than 256 MiB on any test machine
  CHECK(cpu->load != nullptr);

  const BackendEntry* gpu = strata::core::find_backend(LogicalDevice::Kind::Cuda);
#ifdef STRATA_HAVE_CUDA
  REQUIRE(gpu != nullptr);
  CHECK(std::string(gpu->name) == "cuda");
  CHECK(strata::core::device_count(LogicalDevice::Kind::Cuda) >= 0);
#else
  CHECK(gpu == nullptr);
  CHECK(strata::core::device_count(LogicalDevice::Kind::Cuda) == 0);
#endif
}

TEST_CASE("backends: a second backend of a registered kind is refused and the first kept", "[backends]") {
  static constexpr BackendEntry other{LogicalDevice::Kind::Cpu, "other", [] { return 7; },
                                      [](int) -> uint64_t { return 0; }, nullptr};
  const BackendEntry* before = strata::core::find_backend(LogicalDevice::Kind::Cpu);
  CHECK_FALSE(strata::core::register_backend(other));
  CHECK(strata::core::find_backend(LogicalDevice::Kind::Cpu) == before);
  CHECK(strata::core::device_count(LogicalDevice::Kind::Cpu) == 1);
}

TEST_CASE("backends: core and prefill include no backend, core includes no prefill", "[backends]") {
  for (const char* dir : {"core", "prefill"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(STRATA_SOURCE_DIR) / "src" / dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        INFO(entry.path().string() << ":" << n << ": " << line);
        CHECK(line.find("#include \"cuda/") == std::string::npos);
        CHECK(line.find("#include \"cpu/") == std::string::npos);
        if (std::string(dir) == "core") CHECK(line.find("#include \"prefill/") == std::string::npos);
      }
    }
  }
}
