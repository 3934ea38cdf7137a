// Every (GGUF type, CUDA kernel path) pair: implemented, or refused at load with UNSUPPORTED naming both.
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/model/weights.h"
#include "core/plan/partition.h"
#include "core/quant/quant.h"
#include "cuda/gemm/type_paths.h"

using namespace strata;
using core::GgmlType;
using cuda::KernelPath;

namespace {

// Written out, not derived from the lists: a type joining or leaving a path
// must change this table too.
const std::vector<GgmlType> kFloat = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};
const std::vector<GgmlType> kQuant = {
    GgmlType::Q4_0,   GgmlType::Q4_1,   GgmlType::Q5_0,    GgmlType::Q5_1,   GgmlType::Q8_0,  GgmlType::Q1_0,
    GgmlType::Q2_0,   GgmlType::Q2_K,   GgmlType::Q3_K,    GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,
    GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
    GgmlType::IQ3_S};

std::set<GgmlType> expected(KernelPath p) {
  std::set<GgmlType> s(kQuant.begin(), kQuant.end());
  if (p != KernelPath::Wgmma && p != KernelPath::F16Decode) s.insert(kFloat.begin(), kFloat.end());
  return s;
}

std::string refusal(KernelPath p, GgmlType t, const char* what) {
  try {
    cuda::require_kernel(p, t, what);
  } catch (const core::Error& e) {
    CHECK(e.status() == STRATA_ERR_UNSUPPORTED);
    return e.what();
  }
  return {};
}

template <KernelPath P>
void check_dispatch(GgmlType t, bool implemented) {
  GgmlType seen = GgmlType::I64;
  auto call = [&] { cuda::dispatch_type<P>(t, [&](auto tag) { seen = decltype(tag)::value; }); };
  if (implemented) {
    call();
    CHECK(seen == t);  // the type's own instance, never another type's
  } else {
    CHECK_THROWS_AS(call(), core::Error);
    CHECK(seen == GgmlType::I64);
  }
}

}  // namespace

TEST_CASE("every GGUF type on every CUDA path: implemented or refused with both names") {
  for (uint32_t id = 0; id < 64; ++id) {
    const core::TypeTraits* tr = core::find_type_traits(id);
    if (tr == nullptr) continue;
    const auto t = static_cast<GgmlType>(id);
    for (KernelPath p : cuda::kKernelPaths) {
      INFO(tr->name << " on " << cuda::path_name(p));
      const bool want = expected(p).count(t) != 0;
      CHECK(cuda::has_kernel(p, t) == want);
      switch (p) {
        case KernelPath::Mmvq: check_dispatch<KernelPath::Mmvq>(t, want); break;
        case KernelPath::Mmq: check_dispatch<KernelPath::Mmq>(t, want); break;
        case KernelPath::Wgmma: check_dispatch<KernelPath::Wgmma>(t, want); break;
        case KernelPath::F16Decode: check_dispatch<KernelPath::F16Decode>(t, want); break;
        case KernelPath::Embed: check_dispatch<KernelPath::Embed>(t, want); break;
        case KernelPath::MoeGemm: check_dispatch<KernelPath::MoeGemm>(t, want); break;
        case KernelPath::Peer: check_dispatch<KernelPath::Peer>(t, want); break;
      }
      const std::string msg = refusal(p, t, "blk.0.ffn_up_exps.weight");
      if (want) {
        CHECK(msg.empty());
        // A CUDA kernel implies the CPU oracle, whose activation format it shares.
        REQUIRE(tr->computable);
        CHECK(cuda::q8a_type(t) == (core::activation_kind(t) == core::ActivationKind::Q8A));
      } else {
        CHECK(msg.find(tr->name) != std::string::npos);
        CHECK(msg.find(cuda::path_name(p)) != std::string::npos);
        CHECK(msg.find("blk.0.ffn_up_exps.weight") != std::string::npos);
      }
    }
  }
}

TEST_CASE("the CUDA load check refuses a stage tensor without a kernel on a path it takes") {
  auto tensor = [](const char* name, GgmlType type) {
    static const uint8_t byte = 0;
    core::TensorRef t;
    t.name = name;
    t.type = type;
    t.data = &byte;  // present
    return t;
  };
  core::ModelWeights w;
  w.token_embd = tensor("token_embd.weight", GgmlType::Q4_K);
  w.output = tensor("output.weight", GgmlType::Q6_K);
  core::LayerWeights l;
  using core::TensorRole;
  for (TensorRole r : {TensorRole::AttnQ, TensorRole::AttnK, TensorRole::AttnV, TensorRole::AttnOut})
    l[r] = tensor("blk.0.attn.weight", GgmlType::Q8_0);
  l[TensorRole::FfnGateInp] = tensor("blk.0.ffn_gate_inp.weight", GgmlType::F32);
  for (TensorRole r : {TensorRole::FfnGateExps, TensorRole::FfnUpExps, TensorRole::FfnDownExps})
    l[r] = tensor("blk.0.ffn_exps.weight", GgmlType::Q4_K);
  w.layers = {l, l};
  core::StagePlan plan;
  plan.n_layers = 2;
  plan.has_embd = plan.has_head = true;
  CHECK_NOTHROW(cuda::require_stage_kernels(w, plan, true));

  // Every GGUF type: the stage loads on CUDA exactly when each path
  // its tensor takes has the type (here an expert tensor: moe gemm, peer).
  for (uint32_t id = 0; id < 64; ++id) {
    const core::TypeTraits* tr = core::find_type_traits(id);
    if (tr == nullptr) continue;
    const auto t = static_cast<GgmlType>(id);
    INFO(tr->name);
    w.layers[1][core::TensorRole::FfnUpExps] = tensor("blk.1.ffn_up_exps.weight", t);
    const bool ok = cuda::has_kernel(KernelPath::MoeGemm, t) && cuda::has_kernel(KernelPath::Peer, t);
    if (ok) {
      CHECK_NOTHROW(cuda::require_stage_kernels(w, plan, true));
      continue;
    }
    try {
      cuda::require_stage_kernels(w, plan, true);
      FAIL("no refusal");
    } catch (const core::Error& e) {
      CHECK(e.status() == STRATA_ERR_UNSUPPORTED);
      const std::string msg = e.what();
      CHECK(msg.find("blk.1.ffn_up_exps.weight") != std::string::npos);
      CHECK(msg.find(tr->name) != std::string::npos);
      CHECK(msg.find("moe gemm") != std::string::npos);
    }
  }
  w.layers[1][core::TensorRole::FfnUpExps] = tensor("blk.1.ffn_up_exps.weight", GgmlType::Q4_K);

  // A stage without the embedding does not need its path.
  w.token_embd = tensor("token_embd.weight", GgmlType::MXFP4);
  CHECK_THROWS_AS(cuda::require_stage_kernels(w, plan, false), core::Error);
  plan.has_embd = false;
  CHECK_NOTHROW(cuda::require_stage_kernels(w, plan, false));
}
