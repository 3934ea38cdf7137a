// Kernel launches: the checked launch every kernel of the backend goes through, and the scope in which launches are programmatic dependents (overlapping the previous kernel's end).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/runtime/check.h"

namespace strata::cuda {

// While a PdlScope lives on this thread, launch() makes kernels programmatic
// dependents of the kernel before them on their stream (compute capability
// 9.0 and later; STRATA_PDL=0 turns it off): a kernel's blocks may be
// scheduled while that kernel finishes, and wait in pdl_prologue()
// (common.cuh) for its completion. For chains of small kernels on one stream,
// such as a captured decode step, whose launch gaps it hides. Only kernels
// whose stream predecessor is a kernel of this library belong in a scope.
class PdlScope {
 public:
  explicit PdlScope(bool enable);
  ~PdlScope();
  PdlScope(const PdlScope&) = delete;
  PdlScope& operator=(const PdlScope&) = delete;

 private:
  bool previous_;
};

// Whether launch() on this thread now makes programmatic dependents.
bool pdl_active() noexcept;

// Whether the current device takes programmatic dependent launches (compute
// capability 9.0 or later) and STRATA_PDL is not 0 (read once per process).
bool pdl_supported();

// kernel<<<grid, block, smem, stream>>>(args...), a programmatic dependent
// inside a PdlScope, then launch_check(name, stream).
template <typename... Params, typename... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  if (pdl_active()) {
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  // A failed launch also sets the last error, which launch_check reports with the kernel's name.
  static_cast<void>(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
  launch_check(name, stream);
}

}  // namespace strata::cuda
