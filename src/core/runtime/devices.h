// Logical devices: the "--devices 0,1 / cpu / 0,0" list, checked against what the machine has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::core {

struct LogicalDevice {
  enum class Kind { Cpu, Cuda } kind = Kind::Cpu;
  int ordinal = -1;  // CUDA device ordinal; -1 for the CPU

  bool is_cpu() const { return kind == Kind::Cpu; }
  std::string name() const;
};

// Parses a device list. "" means GPU 0 when there is one, else the CPU.
// Throws Error(INVALID_ARGUMENT) for a malformed list and Error(DEVICE) for a
// GPU ordinal that does not exist, naming how many there are.
std::vector<LogicalDevice> parse_devices(std::string_view spec);

}  // namespace strata::core
