// CUDA runtime queries: the device count and each device's properties, for the backend's registry entry and the tests.
#pragma once

#include <cstddef>
#include <string>

namespace strata::cuda {

// Devices this process can use; 0 when the driver or a GPU is missing (never throws).
int device_count() noexcept;

struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  size_t total_mem = 0;  // bytes
  size_t free_mem = 0;   // bytes free when asked
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  bool can_map_host = false;  // mapped pinned host memory readable by kernels
};

// Properties and current free memory of a device (creates its context).
// Throws Error(STRATA_ERR_DEVICE) for an ordinal that does not exist, naming
// how many devices there are, or when the driver fails.
DeviceInfo device_info(int ordinal);

}  // namespace strata::cuda
