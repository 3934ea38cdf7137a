// CUDA graphs: the work a function queues on a stream, captured once and replayed with one launch (RAII over cudaGraphExec_t).
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace strata::cuda {

// An instantiated CUDA graph. Move-only; an empty one (default-constructed or
// moved from) holds nothing and may not be launched.
//
// The graph holds the kernels' arguments as they were at capture: whatever
// changes from one replay to the next must be read by the kernels from device
// memory (or by copy nodes from pinned host memory), and every buffer the
// captured work touches must outlive the graph, at the same address.
class GraphExec {
 public:
  GraphExec() = default;
  // Captures what `enqueue` queues on `stream` (of device `device`, current
  // during the call) without running it, and instantiates the graph. The
  // capture is thread-local: other threads' CUDA calls go on as usual, while
  // this thread must make no call that synchronizes or allocates until
  // `enqueue` returns (an illegal call fails and invalidates the capture).
  // Throws what `enqueue` throws, or Error(STRATA_ERR_DEVICE) when the
  // capture or the instantiation fails; the stream then leaves capture mode
  // and nothing is kept.
  static GraphExec capture(int device, cudaStream_t stream, const std::function<void()>& enqueue);
  ~GraphExec() { reset(); }
  GraphExec(GraphExec&& other) noexcept;
  GraphExec& operator=(GraphExec&& other) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  explicit operator bool() const noexcept { return exec_ != nullptr; }
  // Queues one replay on `stream` (asynchronous, like the launches it
  // replaces). Throws Error(STRATA_ERR_DEVICE) when the launch fails and
  // Error(STRATA_ERR_INVALID_ARGUMENT) for an empty graph or the legacy
  // default stream.
  void launch(cudaStream_t stream) const;
  void reset() noexcept;

 private:
  cudaGraphExec_t exec_ = nullptr;
  int device_ = -1;
};

// Whether the executor may capture decode steps as graphs: false when
// STRATA_CUDA_GRAPH=0 was set when asked (read at each call, so that a
// process may switch between sessions) or when STRATA_SYNC_CHECK=1 (its
// synchronize after each launch cannot be captured).
bool graphs_enabled() noexcept;

}  // namespace strata::cuda
