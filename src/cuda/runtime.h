// CUDA runtime queries that the CUDA-free core may call.
#pragma once

namespace strata::cuda {

// Devices this process can use; 0 when the driver or a GPU is missing (never throws).
int device_count() noexcept;

}  // namespace strata::cuda
