// Layer split on one GPU through logical devices (--devices 0,0 / 0,0,0, host route, no P2P): against the
// unsplit GPU run bit for bit, and against the CPU oracle.
#include <cstdio>
#include <cstring>

#include "catch.hpp"
#include "e2e/parity.h"

using namespace strata::core;
using namespace strata::e2e;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

// The route carries F32 rows unchanged and each stage runs the same kernels
// on the same rows, so a split run equals the unsplit one bit for bit.
TEST_CASE("qwen3-30b-a3b, 8 layers: 0,0 and 0,0,0 equal the unsplit GPU run bit for bit, pipelined or not", "[stages]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  const auto toks = tokens(256, 151643);
  const Run whole = run_counts(path, Placement{"0"}, toks, 64);
  for (const Placement& p : {Placement{"0,0", "auto", true}, Placement{"0,0", "auto", false},
                             Placement{"0,0,0", "auto", true}, Placement{"0,0,0", "3,3,2", false}}) {
    INFO("devices " << p.devices << " split " << p.layer_split << " pipeline " << p.pipeline);
    const Run split = run_counts(path, p, toks, 64);
    CHECK(same_bits(split.logits, whole.logits));
    CHECK(split.counts == whole.counts);
  }
}

TEST_CASE("qwen3-30b-a3b, 8 layers: 0,0 split against the CPU oracle, and a CPU stage after a GPU stage", "[stages]") {
  const std::string path = model_path({"qwen3-30b-a3b", 8, "qwen3"});
  const auto toks = tokens(128, 151643);
  const Run cpu = run_counts(path, Placement{"cpu"}, toks, 32);
  for (const Placement& p : {Placement{"0,0", "auto", true}, Placement{"0,cpu", "4,4", true}}) {
    std::printf("devices %s, split %s:\n", p.devices, p.layer_split);
    const Run gpu = run_counts(path, p, toks, 32);
    CHECK(routing_flips(gpu.counts, cpu.counts) <= kMaxFlipShare * 128 * 8 * 8);
    compare(gpu.logits, cpu.logits, 151669, kBound);
  }
}
