// Phase-time sums and the host route memory of backends without devices.
#include "core/runtime/executor.h"

#include <algorithm>

#include <vector>

namespace strata::core {

PhaseTimes& PhaseTimes::operator+=(const PhaseTimes& o) {
  attention_ms += o.attention_ms;
  routing_ms += o.routing_ms;
  grouping_ms += o.grouping_ms;
  stream_wait_ms += o.stream_wait_ms;
  expert_ms += o.expert_ms;
  combine_ms += o.combine_ms;
  transfer_ms += o.transfer_ms;
  other_ms += o.other_ms;
  bytes_streamed += o.bytes_streamed;
  peer_share = std::max(peer_share, o.peer_share);
  peer_predicted_alone_ms += o.peer_predicted_alone_ms;
  peer_predicted_ms += o.peer_predicted_ms;
  return *this;
}

void PhaseTimes::add_peer_prediction(double share, double alone_s, double shared_s) {
  peer_share = std::max(peer_share, share);
  peer_predicted_alone_ms += alone_s * 1e3;
  peer_predicted_ms += shared_s * 1e3;
}

namespace {

class HostRoute final : public RouteBuffer {
 public:
  explicit HostRoute(size_t floats) : data_(floats) {}
  float* data() override { return data_.data(); }

 private:
  std::vector<float> data_;
};

}  // namespace

std::unique_ptr<RouteBuffer> Backend::new_route(size_t floats) const { return std::make_unique<HostRoute>(floats); }

}  // namespace strata::core
