// Helpers of the CUDA op tests: the test device and stream, uploads/downloads, poisoned buffers, tolerance reports.
#include "ops/ops_util.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace strata::test {

uint64_t ops_seed() {
  static const uint64_t seed = test_seed();
  return seed;
}

cuda::Stream& test_stream() {
  static cuda::Stream s(kDevice);
  return s;
}

cuda::DeviceBuffer poisoned(size_t bytes) {
  cuda::DeviceBuffer b(kDevice, bytes);
  poison(b);
  return b;
}

void poison(cuda::DeviceBuffer& b) {
  cuda::memset_async(b.data(), 0xFF, b.size(), test_stream().get());
  test_stream().synchronize();
}

AnyBuffer::AnyBuffer(size_t bytes, Mem mem) : mem_(mem) {
  if (mem == Mem::Device) {
    device_ = poisoned(bytes);
  } else {
    host_ = cuda::HostBuffer(bytes, cudaHostAllocPortable | cudaHostAllocMapped);
    std::memset(host_.data(), 0xFF, bytes);
  }
}

void AnyBuffer::upload_bytes(const void* src, size_t bytes) {
  if (mem_ == Mem::Mapped) {
    std::memcpy(host_.data(), src, bytes);
    return;
  }
  cuda::copy_async(device_.data(), src, bytes, test_stream().get());
  test_stream().synchronize();
}

void AnyBuffer::download_bytes(void* dst, size_t bytes) const {
  test_stream().synchronize();
  if (mem_ == Mem::Mapped) {
    std::memcpy(dst, host_.data(), bytes);
    return;
  }
  cuda::copy_async(dst, device_.data(), bytes, test_stream().get());
  test_stream().synchronize();
}

std::string mismatches(const float* got, const float* want, size_t n, Tol tol,
                       const std::function<std::string(size_t)>& what) {
  size_t bad = 0, worst = 0;
  double worst_excess = -1.0;
  std::string first;
  for (size_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i];
    const double bound = tol.abs + tol.rel * std::fabs(w);
    const double err = std::fabs(g - w);
    if (err <= bound) continue;  // false for NaN
    const double excess = std::isnan(err) ? INFINITY : err / bound;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
    if (bad < 5) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "\n  [%zu] got %.9g want %.9g (err %.3g > %.3g)", i, g, w, err, bound);
      first += buf;
      if (what) {
        first += ' ';  // appended in two steps: GCC 12 warns (falsely, -Wrestrict) about " " + string
        first += what(i);
      }
    }
    ++bad;
  }
  if (bad == 0) return "";
  char head[200];
  std::snprintf(head, sizeof head, "%zu of %zu elements outside |err| <= %g + %g*|want|; worst [%zu] got %.9g want %.9g",
                bad, n, tol.abs, tol.rel, worst, static_cast<double>(got[worst]), static_cast<double>(want[worst]));
  return head + first;
}

std::string byte_mismatches(const void* got, const void* want, size_t bytes) {
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < bytes; ++i) {
    if (g[i] == w[i]) continue;
    if (bad < 8) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "\n  byte %zu: got 0x%02x want 0x%02x", i, g[i], w[i]);
      first += buf;
    }
    ++bad;
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(bytes) + " bytes differ" + first;
}

}  // namespace strata::test
