// The CUDA kernel paths' refusals, and the loader's check of a stage against the type lists.
#include "cuda/gemm/type_paths.h"

#include <initializer_list>
#include <string>
#include <utility>

#include "core/base/error.h"
#include "core/model/weights.h"
#include "core/plan/partition.h"

namespace strata::cuda {

void refuse_kernel(KernelPath p, core::GgmlType t, const char* what) {
  const core::TypeTraits* tr = core::find_type_traits(static_cast<uint32_t>(t));
  core::fail(STRATA_ERR_UNSUPPORTED, "{}{}tensor type {} has no CUDA {} kernel", what != nullptr ? what : "",
             what != nullptr ? ": " : "", tr != nullptr ? tr->name : "(unknown id)", path_name(p));
}

void require_stage_kernels(const core::ModelWeights& w, const core::StagePlan& plan, bool peer) {
  auto need = [](const core::TensorRef& t, std::initializer_list<KernelPath> paths) {
    if (!t.present()) return;
    for (KernelPath p : paths) require_kernel(p, t.type, t.name.c_str());
  };
  if (plan.has_embd) need(w.token_embd, {KernelPath::Embed});
  if (plan.has_head) need(w.output, {KernelPath::Mmvq, KernelPath::Mmq});
  for (int32_t i = 0; i < plan.n_layers; ++i) {
    const core::LayerWeights& l = w.layers[static_cast<size_t>(plan.first_layer + i)];
    core::for_each_tensor(l, [&](core::TensorRole role, const core::TensorRef& t) {
      switch (core::kind_of(role)) {
        case core::TensorKind::Vector: break;
        case core::TensorKind::Matrix:
        case core::TensorKind::Router: need(t, {KernelPath::Mmvq, KernelPath::Mmq}); break;
        case core::TensorKind::Experts:
          need(t, {KernelPath::MoeGemm});
          if (peer) need(t, {KernelPath::Peer});
          break;
      }
    });
  }
}

}  // namespace strata::cuda
