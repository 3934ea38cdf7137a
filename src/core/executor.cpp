// Phase-time sums and the host route memory of backends without devices.
#include "core/executor.h"

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
  return *this;
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
