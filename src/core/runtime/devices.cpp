// Logical devices: the "--devices 0,1 / cpu / 0,0" list, checked against what the machine has.
#include "core/runtime/devices.h"

#include <charconv>

#include "core/base/error.h"
#include "core/base/fields.h"
#include "core/runtime/backends.h"

namespace strata::core {

std::string LogicalDevice::name() const { return is_cpu() ? "cpu" : fmt::format("cuda:{}", ordinal); }

std::vector<LogicalDevice> parse_devices(std::string_view spec) {
  const int n_gpu = device_count(LogicalDevice::Kind::Cuda);
  std::vector<LogicalDevice> out;
  if (spec.empty()) {
    if (n_gpu > 0) out.push_back({LogicalDevice::Kind::Cuda, 0});
    else out.push_back({});
    return out;
  }
  for (const std::string_view item : split_fields(spec)) {
    if (item == "cpu") {
      out.push_back({});
    } else {
      int ordinal = -1;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), ordinal);
      if (item.empty() || ec != std::errc() || end != item.data() + item.size() || ordinal < 0)
        fail(STRATA_ERR_INVALID_ARGUMENT, "devices: '{}' in '{}' is neither 'cpu' nor a GPU number", item, spec);
      if (ordinal >= n_gpu)
        fail(STRATA_ERR_DEVICE, "devices: GPU {} was asked for, but this process sees {} CUDA device{}{}", ordinal,
             n_gpu, n_gpu == 1 ? "" : "s",
             find_backend(LogicalDevice::Kind::Cuda) ? "" : " (this build has no CUDA backend)");
      out.push_back({LogicalDevice::Kind::Cuda, ordinal});
    }
  }
  if (out.size() > 16) fail(STRATA_ERR_INVALID_ARGUMENT, "devices: at most 16 logical devices, got {}", out.size());
  return out;
}

}  // namespace strata::core
