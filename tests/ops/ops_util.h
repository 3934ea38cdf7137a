// Helpers of the CUDA op tests: the test device and stream, uploads/downloads, poisoned (also mapped) buffers, reports.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/stream.h"
#include "unit/test_random.h"

namespace strata::test {

// One seed per run (printed by the runner, replayed with STRATA_TEST_SEED);
// each test derives its own generator from it and a salt.
uint64_t ops_seed();
inline Rng rng_for(uint64_t salt) { return Rng(ops_seed() ^ (salt * 0x9e3779b97f4a7c15ull)); }

// Device 0 and a non-blocking stream on it, for every test.
constexpr int kDevice = 0;
cuda::Stream& test_stream();

template <typename T>
cuda::DeviceBuffer to_device(const std::vector<T>& v) {
  cuda::DeviceBuffer b(kDevice, v.size() * sizeof(T));
  cuda::copy_async(b.data(), v.data(), b.size(), test_stream().get());
  test_stream().synchronize();
  return b;
}

template <typename T>
std::vector<T> to_host(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  cuda::copy_async(v.data(), b.data(), n * sizeof(T), test_stream().get());
  test_stream().synchronize();
  return v;
}

// A buffer of `bytes` filled with 0xFF: NaN as F32 or F16, so an element a
// kernel fails to write fails every comparison.
cuda::DeviceBuffer poisoned(size_t bytes);
// Refills b with 0xFF.
void poison(cuda::DeviceBuffer& b);

// Where a kernel's input or output lies: device memory, or mapped pinned host
// memory that the kernel reaches through its device address (the host route).
enum class Mem { Device, Mapped };
inline const char* mem_name(Mem m) { return m == Mem::Device ? "device" : "mapped host"; }

// `bytes` in device memory or mapped pinned host memory, filled with 0xFF
// (the poison of poisoned()).
class AnyBuffer {
 public:
  AnyBuffer(size_t bytes, Mem mem);
  // The address kernels use.
  template <typename T>
  T* dev() const {
    return static_cast<T*>(mem_ == Mem::Device ? device_.data() : host_.device_ptr());
  }
  // Copies v to the start of the buffer and waits for the copy.
  template <typename T>
  void upload(const std::vector<T>& v) {
    upload_bytes(v.data(), v.size() * sizeof(T));
  }
  // The first n elements, after waiting for the test stream.
  template <typename T>
  std::vector<T> download(size_t n) const {
    std::vector<T> v(n);
    download_bytes(v.data(), n * sizeof(T));
    return v;
  }

 private:
  void upload_bytes(const void* src, size_t bytes);
  void download_bytes(void* dst, size_t bytes) const;
  Mem mem_;
  cuda::DeviceBuffer device_;
  cuda::HostBuffer host_;
};

// Within tolerance: |got - want| <= abs + rel * |want| (NaN never is).
struct Tol {
  double abs;
  double rel;
};

// "" when every element is within tol, else a report: how many are not, the
// worst one and the first few, each with its index (and `what(i)` if given).
std::string mismatches(const float* got, const float* want, size_t n, Tol tol,
                       const std::function<std::string(size_t)>& what = nullptr);
inline std::string mismatches(const std::vector<float>& got, const std::vector<float>& want, Tol tol) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  return mismatches(got.data(), want.data(), got.size(), tol);
}

// "" when the bytes are equal, else the first differing byte offsets.
std::string byte_mismatches(const void* got, const void* want, size_t bytes);

// The status of the core::Error that f() throws; STRATA_OK when it throws none.
template <typename F>
strata_status status_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const core::Error& e) {
    if (message) *message = e.what();
    return e.status();
  }
  return STRATA_OK;
}

template <typename T>
bool bit_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace strata::test

// Checks a report from mismatches()/byte_mismatches(): passes when empty,
// else prints it with the seed.
#define CHECK_REPORT(report)                                                       \
  do {                                                                             \
    const std::string strata_report_ = (report);                                   \
    INFO("seed=" << ::strata::test::ops_seed() << ": " << strata_report_);         \
    CHECK(strata_report_.empty());                                                 \
  } while (0)
