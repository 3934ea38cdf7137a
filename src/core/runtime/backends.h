// The backend registry: the kinds of device this build can put a stage on. Each backend registers one entry at
// static initialisation (STRATA_REGISTER_BACKEND); core asks the registry how many devices of a kind there are,
// how much memory they have and for a stage's Backend, and includes no backend.
#pragma once

#include <cstdint>
#include <memory>

#include "core/model/model.h"
#include "core/plan/expert_store.h"
#include "core/plan/partition.h"
#include "core/runtime/devices.h"
#include "core/runtime/executor.h"

namespace strata::core {

// What a backend makes one stage's Backend from.
struct StageLoad {
  const Model& model;
  const StagePlan& plan;
  LogicalDevice device;
  uint64_t budget = 0;       // the stage's device budget, resolved (stage_devices)
  uint64_t vram_budget = 0;  // the model option as given (0 = none): a CPU stage streams its experts beyond it
  int32_t threads = 1;       // the stage's share of the model's threads (CPU stages share them)
  const ExpertOptions& experts;
  const ProgressFn& progress;
};

struct BackendEntry {
  LogicalDevice::Kind kind = LogicalDevice::Kind::Cpu;
  const char* name = "";
  // Devices of this kind the process can use (never an error: 0 without a driver or a device).
  int (*device_count)() = nullptr;
  // Bytes a stage on device `ordinal` may plan with: a GPU's free memory now, the host's physical memory.
  uint64_t (*memory_bytes)(int ordinal) = nullptr;
  // The stage's Backend: its weights loaded and placed. Throws Error (OUT_OF_MEMORY, DEVICE, ABORTED, ...).
  std::unique_ptr<Backend> (*load)(const StageLoad& load) = nullptr;
};

// Adds a backend. Returns false (and keeps the first) when its kind is already registered.
bool register_backend(const BackendEntry& entry) noexcept;

// The backend of a kind of device; nullptr when this build has none.
const BackendEntry* find_backend(LogicalDevice::Kind kind) noexcept;

// Devices of a kind: 0 when this build has no backend for it.
int device_count(LogicalDevice::Kind kind) noexcept;

}  // namespace strata::core

// Registers a backend at static initialisation. The static library drops an object nothing references, so the
// symbol it defines, strata_backend_<tag>, is pulled in by the linker option src/CMakeLists.txt adds for each
// backend (--undefined=strata_backend_<tag>).
#define STRATA_REGISTER_BACKEND(tag, entry) \
  extern "C" const bool strata_backend_##tag; \
  extern "C" const bool strata_backend_##tag = ::strata::core::register_backend(entry)
