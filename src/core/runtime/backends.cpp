// The backend registry: one entry per kind of device, filled at static initialisation.
#include "core/runtime/backends.h"

#include <array>

namespace strata::core {
namespace {

constexpr size_t kKinds = static_cast<size_t>(LogicalDevice::Kind::Cuda) + 1;  // the last kind's slot + 1

// Function-local, so that it exists before any backend's initialiser registers into it.
std::array<const BackendEntry*, kKinds>& registry() noexcept {
  static std::array<const BackendEntry*, kKinds> entries{};
  return entries;
}

}  // namespace

bool register_backend(const BackendEntry& entry) noexcept {
  const auto slot = static_cast<size_t>(entry.kind);
  if (slot >= kKinds || registry()[slot]) return false;
  registry()[slot] = &entry;
  return true;
}

const BackendEntry* find_backend(LogicalDevice::Kind kind) noexcept {
  const auto slot = static_cast<size_t>(kind);
  return slot < kKinds ? registry()[slot] : nullptr;
}

int device_count(LogicalDevice::Kind kind) noexcept {
  const BackendEntry* b = find_backend(kind);
  return b ? b->device_count() : 0;
}

}  // namespace strata::core
