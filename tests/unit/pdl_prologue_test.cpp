// Every CUDA kernel of the backend starts with pdl_prologue() (src/cuda/runtime/common.cuh): a kernel launched as a programmatic dependent (launch.h) that touched global memory before it would race with the kernel before it.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"

namespace {

namespace fs = std::filesystem;

// The text after each "__global__" up to its body's first statement.
struct Kernel {
  std::string file;
  std::string signature;
  std::string first_statement;
};

std::vector<Kernel> kernels_in(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  std::vector<Kernel> out;
  for (size_t at = s.find("__global__"); at != std::string::npos; at = s.find("__global__", at + 1)) {
    // Skip mentions in comments: the line up to here holds "//".
    const size_t line = s.rfind('\n', at);
    if (s.substr(line + 1, at - line - 1).find("//") != std::string::npos) continue;
    const size_t body = s.find('{', at);
    REQUIRE(body != std::string::npos);
    size_t first = s.find_first_not_of(" \t\n", body + 1);
    const size_t end = s.find(';', first);
    out.push_back({file.filename().string(), s.substr(at, body - at), s.substr(first, end - first + 1)});
  }
  return out;
}

}  // namespace

TEST_CASE("every CUDA kernel starts with pdl_prologue()", "[cuda][pdl]") {
  const fs::path dir = fs::path(STRATA_SOURCE_DIR) / "src" / "cuda";
  REQUIRE(fs::is_directory(dir));
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cu" && ext != ".cuh") continue;
    for (const Kernel& k : kernels_in(entry.path())) {
      INFO(k.file << ": " << k.signature);
      CHECK(k.first_statement == "pdl_prologue();");
      ++n;
    }
  }
  // The backend's kernels (27 when this test was written): a scan that found none would prove nothing.
  CHECK(n >= 27);
}
