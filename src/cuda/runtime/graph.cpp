// CUDA graphs: capture of a stream's work, instantiation, replay.
#include "cuda/runtime/graph.h"

#include <utility>

#include "core/base/env.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/stream.h"

namespace strata::cuda {
namespace {

// Owns a captured (not yet instantiated) graph.
struct GraphOwner {
  cudaGraph_t graph = nullptr;
  ~GraphOwner() {
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
};

}  // namespace

GraphExec GraphExec::capture(int device, cudaStream_t stream, const std::function<void()>& enqueue) {
  require_stream(stream, "GraphExec::capture");
  ScopedDevice on(device);
  STRATA_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  GraphOwner captured;
  try {
    enqueue();
  } catch (...) {
    // Leave capture mode so that the stream takes work again; what was captured is dropped.
    cudaStreamEndCapture(stream, &captured.graph);
    cudaGetLastError();
    throw;
  }
  // Fails (cudaErrorStreamCaptureInvalidated and the like) when a call during the capture broke it.
  STRATA_CUDA_CHECK(cudaStreamEndCapture(stream, &captured.graph));
  GraphExec g;
  STRATA_CUDA_CHECK(cudaGraphInstantiate(&g.exec_, captured.graph, 0));
  g.device_ = device;
  return g;
}

GraphExec::GraphExec(GraphExec&& other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)), device_(std::exchange(other.device_, -1)) {}

GraphExec& GraphExec::operator=(GraphExec&& other) noexcept {
  if (this != &other) {
    reset();
    exec_ = std::exchange(other.exec_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void GraphExec::launch(cudaStream_t stream) const {
  require_stream(stream, "GraphExec::launch");
  require(exec_ != nullptr, "GraphExec::launch", "an instantiated graph");
  STRATA_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

void GraphExec::reset() noexcept {
  if (exec_ != nullptr) on_device_noexcept(device_, [&] { cudaGraphExecDestroy(exec_); });
  exec_ = nullptr;
  device_ = -1;
}

bool graphs_enabled() noexcept {
  if (sync_check_enabled()) return false;
  return core::env_flag(core::EnvVar::CudaGraph);
}

}  // namespace strata::cuda
