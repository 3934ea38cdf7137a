// Kernel launches: the programmatic-dependent scope and its device check.
#include "cuda/runtime/launch.h"


#include "core/base/env.h"
#include "cuda/gemm/gemm_host.h"

namespace strata::cuda {
namespace {

thread_local bool t_pdl = false;

}  // namespace

PdlScope::PdlScope(bool enable) : previous_(t_pdl) { t_pdl = enable && pdl_supported(); }

PdlScope::~PdlScope() { t_pdl = previous_; }

bool pdl_active() noexcept { return t_pdl; }

bool pdl_supported() {
  static const bool allowed = core::env_flag(core::EnvVar::Pdl);  // asked at every decode step (PdlScope)
  return allowed && gemm_detail::compute_capability() >= 90;
}

}  // namespace strata::cuda
