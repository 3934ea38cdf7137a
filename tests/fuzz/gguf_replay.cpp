// Replays every file in the given directories through the GGUF fuzz target (the ctest form of the fuzzer).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf_fuzz_target.h"

// Files named valid_* must be accepted and corrupt_* rejected; any other file
// (a fuzzer finding kept in a corpus) may go either way but must not crash.
int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR...\n", argv[0]);
    return 2;
  }
  size_t files = 0, accepted = 0, wrong = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::filesystem::directory_iterator it(argv[i], ec);
    if (ec) {
      std::fprintf(stderr, "gguf_replay: cannot list '%s': %s\n", argv[i], ec.message().c_str());
      return 2;
    }
    for (const auto& entry : it) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      // A buffer of exactly the file's size: a sanitizer build sees over-reads.
      const int rejected = strata::test::gguf_fuzz_one(bytes.data(), bytes.size());
      ++files;
      accepted += rejected == 0;
      const std::string name = entry.path().filename().string();
      const bool want_ok = name.rfind("valid_", 0) == 0, want_bad = name.rfind("corrupt_", 0) == 0;
      if ((want_ok && rejected) || (want_bad && !rejected)) {
        std::fprintf(stderr, "gguf_replay: %s was %s\n", entry.path().c_str(), rejected ? "rejected" : "accepted");
        ++wrong;
      }
    }
  }
  std::printf("gguf_replay: %zu files, %zu accepted, %zu rejected\n", files, accepted, files - accepted);
  std::printf("%zu passed, %zu failed\n", files - wrong, wrong);
  if (files == 0) std::fprintf(stderr, "gguf_replay: no input files\n");
  return files == 0 || wrong != 0 ? 1 : 0;
}
