// The CUDA runtime layer: device info, buffers, pinned/mapped host memory, streams, events, graphs, error mapping.
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "cuda/norm/norm.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/graph.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/runtime.h"
#include "cuda/runtime/stream.h"
#include "ops/ops_util.h"

using namespace strata;
using strata::test::kDevice;
using strata::test::status_of;
using strata::test::test_stream;

TEST_CASE("device_info describes device 0 and rejects a missing ordinal") {
  const cuda::DeviceInfo info = cuda::device_info(kDevice);
  CHECK(info.ordinal == kDevice);
  CHECK_FALSE(info.name.empty());
  CHECK(info.total_mem > 0);
  CHECK(info.free_mem > 0);
  CHECK(info.free_mem <= info.total_mem);
  CHECK(info.sm_count > 0);
  CHECK(info.cc_major >= 5);
  std::string msg;
  CHECK(status_of([] { cuda::device_info(cuda::device_count()); }, &msg) == STRATA_ERR_DEVICE);
  INFO(msg);
  CHECK(msg.find("does not exist") != std::string::npos);
  CHECK(status_of([] { cuda::device_info(-1); }) == STRATA_ERR_DEVICE);
}

TEST_CASE("DeviceBuffer: zero size, round trip, move, and out-of-memory naming the bytes") {
  cuda::DeviceBuffer empty(kDevice, 0);
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);

  std::vector<float> v = {1.5f, -2.0f, 3.25f, 7.0f};
  cuda::DeviceBuffer b = test::to_device(v);
  CHECK(b.size() == v.size() * sizeof(float));
  CHECK(b.count<float>() == v.size());
  CHECK(b.as<float>() == static_cast<float*>(b.data()));
  cuda::DeviceBuffer moved = std::move(b);
  CHECK(b.data() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  CHECK(b.size() == 0);
  CHECK(test::to_host<float>(moved, v.size()) == v);
  cuda::DeviceBuffer assigned;
  assigned = std::move(moved);
  CHECK(test::to_host<float>(assigned, v.size()) == v);
  assigned.reset();
  CHECK(assigned.data() == nullptr);

  std::string msg;
  const size_t huge = size_t{1} << 50;  // 1 PiB: no device has it
  CHECK(status_of([&] { cuda::DeviceBuffer too_big(kDevice, huge); }, &msg) == STRATA_ERR_OUT_OF_MEMORY);
  INFO(msg);
  CHECK(msg.find(std::to_string(huge)) != std::string::npos);
  // The failure left no sticky error behind: later calls work.
  CHECK(test::to_host<float>(test::to_device(v), v.size()) == v);
}

TEST_CASE("HostBuffer: pinned and mapped memory, read back through the device pointer") {
  cuda::HostBuffer plain(64);
  CHECK(plain.data() != nullptr);
  CHECK_FALSE(plain.mapped());
  CHECK(plain.device_ptr() == nullptr);

  const size_t n = 1000;
  cuda::HostBuffer mapped(n * sizeof(float), cudaHostAllocPortable | cudaHostAllocMapped);
  REQUIRE(mapped.mapped());
  for (size_t i = 0; i < n; ++i) mapped.as<float>()[i] = static_cast<float>(i) + 0.5f;
  // Copy from the mapped device address into device memory, then back.
  cuda::DeviceBuffer d = test::poisoned(n * sizeof(float));
  cuda::copy_async(d.data(), mapped.device_ptr(), n * sizeof(float), test_stream().get());
  const std::vector<float> back = test::to_host<float>(d, n);
  CHECK(std::memcmp(back.data(), mapped.data(), n * sizeof(float)) == 0);

  cuda::HostBuffer moved = std::move(mapped);
  CHECK(mapped.data() == nullptr);  // NOLINT(bugprone-use-after-move)
  CHECK(moved.mapped());
  cuda::HostBuffer zero(0);
  CHECK(zero.data() == nullptr);
}

TEST_CASE("Stream, Event and ScopedDevice") {
  cuda::Stream s(kDevice);
  CHECK(s.owning());
  CHECK(s.get() != nullptr);
  cuda::Stream wrapped = cuda::Stream::wrap(s.get(), kDevice);
  CHECK_FALSE(wrapped.owning());
  CHECK(wrapped.get() == s.get());
  CHECK(status_of([] { cuda::Stream::wrap(nullptr, kDevice); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([] { cuda::Stream::wrap(cudaStreamLegacy, kDevice); }) == STRATA_ERR_INVALID_ARGUMENT);

  // Timing events around a copy; a second stream waits on the first's event.
  cuda::Event start(kDevice, true), stop(kDevice, true), plain(kDevice);
  CHECK_FALSE(plain.timing());
  std::vector<float> v(1 << 20, 1.0f);
  cuda::DeviceBuffer a = test::to_device(v);
  cuda::DeviceBuffer b(kDevice, a.size());
  start.record(s);
  cuda::copy_async(b.data(), a.data(), a.size(), s.get());
  stop.record(s);
  cuda::Stream s2(kDevice);
  stop.wait_from(s2);
  plain.record(s2);
  plain.synchronize();
  CHECK(plain.done());
  stop.synchronize();
  CHECK(stop.elapsed_ms_since(start) >= 0.0f);
  CHECK(status_of([&] { (void)plain.elapsed_ms_since(start); }) == STRATA_ERR_INVALID_ARGUMENT);
  s.synchronize();

  int before = -1, after = -1;
  REQUIRE(cudaGetDevice(&before) == cudaSuccess);
  {
    cuda::ScopedDevice on(cuda::device_count() - 1);
    int now = -1;
    REQUIRE(cudaGetDevice(&now) == cudaSuccess);
    CHECK(now == cuda::device_count() - 1);
  }
  REQUIRE(cudaGetDevice(&after) == cudaSuccess);
  CHECK(after == before);
  CHECK(status_of([] { cuda::ScopedDevice bad(cuda::device_count()); }) == STRATA_ERR_DEVICE);
}

TEST_CASE("STRATA_CUDA_CHECK names the error, the call and the place") {
  std::string msg;
  const strata_status st = status_of([] { STRATA_CUDA_CHECK(cudaSetDevice(-5)); }, &msg);
  CHECK(st == STRATA_ERR_DEVICE);
  INFO(msg);
  CHECK(msg.find("cudaErrorInvalidDevice") != std::string::npos);
  CHECK(msg.find("cudaSetDevice(-5)") != std::string::npos);
  CHECK(msg.find("runtime_test.cpp") != std::string::npos);
  CHECK(status_of([] { STRATA_CUDA_CHECK(cudaErrorMemoryAllocation); }) == STRATA_ERR_OUT_OF_MEMORY);
  // Launchers and copies refuse the legacy default stream.
  float* none = nullptr;
  CHECK(status_of([&] { cuda::rmsnorm(none, none, none, 1, 8, 1e-6f, nullptr); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { cuda::copy_async(none, none, 4, cudaStreamLegacy); }) == STRATA_ERR_INVALID_ARGUMENT);
  // launch_check on a clean state does not throw.
  CHECK(status_of([] { cuda::launch_check("nothing", test_stream().get()); }) == STRATA_OK);
}

// Copies and memsets only (no kernel launch): the suite also runs with
// STRATA_SYNC_CHECK=1, whose synchronize after a launch cannot be captured.
TEST_CASE("GraphExec: a replay reads its inputs when it runs; a failed capture leaves the stream usable") {
  cuda::Stream stream(kDevice);
  const cudaStream_t s = stream.get();
  const std::vector<int32_t> a{1, 2, 3, 4}, b{5, 6, 7, 8};
  cuda::DeviceBuffer src = test::to_device(a);
  cuda::DeviceBuffer dst(kDevice, src.size());
  auto dst_now = [&] {
    std::vector<int32_t> v(a.size());
    cuda::copy_async(v.data(), dst.data(), dst.size(), s);
    stream.synchronize();
    return v;
  };
  cuda::GraphExec g = cuda::GraphExec::capture(kDevice, s, [&] {
    cuda::memset_async(dst.data(), 0, dst.size(), s);
    cuda::copy_async(dst.data(), src.data(), src.size(), s);
  });
  REQUIRE(g);
  g.launch(s);
  CHECK(dst_now() == a);
  cuda::copy_async(src.data(), b.data(), src.size(), s);
  g.launch(s);
  CHECK(dst_now() == b);

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusActive;
  // What the function throws comes out; the stream is out of capture mode.
  CHECK(status_of([&] {
          cuda::GraphExec::capture(kDevice, s, [] { throw core::Error(STRATA_ERR_INTERNAL, "from the function"); });
        }) == STRATA_ERR_INTERNAL);
  REQUIRE(cudaStreamIsCapturing(s, &capturing) == cudaSuccess);
  CHECK(capturing == cudaStreamCaptureStatusNone);
  // A synchronize during the capture is refused and breaks it: Error(STRATA_ERR_DEVICE).
  std::string msg;
  CHECK(status_of([&] { cuda::GraphExec::capture(kDevice, s, [&] { stream.synchronize(); }); }, &msg) ==
        STRATA_ERR_DEVICE);
  INFO(msg);
  REQUIRE(cudaStreamIsCapturing(s, &capturing) == cudaSuccess);
  CHECK(capturing == cudaStreamCaptureStatusNone);
  cuda::copy_async(src.data(), a.data(), src.size(), s);
  g.launch(s);
  CHECK(dst_now() == a);

  cuda::GraphExec moved = std::move(g);
  CHECK_FALSE(g);
  CHECK(moved);
  CHECK(status_of([&] { g.launch(s); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { moved.launch(nullptr); }) == STRATA_ERR_INVALID_ARGUMENT);
}
