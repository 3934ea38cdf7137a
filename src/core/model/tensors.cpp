// The tensors of a layer, by role, and the list an architecture gives for each layer.
#include "core/model/tensors.h"

#include "core/base/error.h"

namespace strata::core {

TensorKind kind_of(TensorRole role) {
  switch (role) {
    case TensorRole::AttnNorm:
    case TensorRole::AttnQNorm:
    case TensorRole::AttnKNorm:
    case TensorRole::FfnNorm: return TensorKind::Vector;
    case TensorRole::AttnQ:
    case TensorRole::AttnK:
    case TensorRole::AttnV:
    case TensorRole::AttnOut: return TensorKind::Matrix;
    case TensorRole::FfnGateInp: return TensorKind::Router;
    case TensorRole::FfnGateExps:
    case TensorRole::FfnUpExps:
    case TensorRole::FfnDownExps: return TensorKind::Experts;
    case TensorRole::Count: break;
  }
  fail(STRATA_ERR_INTERNAL, "tensors: role {} has no kind", static_cast<int>(role));
}

void TensorList::add(TensorRole role, std::string name, std::initializer_list<int64_t> ne, bool optional) {
  TensorSpec s;
  s.role = role;
  s.name = std::move(name);
  if (ne.size() > s.ne.size()) fail(STRATA_ERR_INTERNAL, "tensors: '{}' has {} dimensions", s.name, ne.size());
  size_t i = 0;
  for (int64_t d : ne) s.ne[i++] = d;
  s.optional = optional;
  specs_.push_back(std::move(s));
}

}  // namespace strata::core
