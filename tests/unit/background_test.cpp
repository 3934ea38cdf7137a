// Background: the job runs on its own thread while the caller goes on; wait joins it and rethrows its error.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/runtime/background.h"

using strata::core::Background;

namespace {

// Polls flag for up to two seconds; whether it was set.
bool seen_within(const std::atomic<bool>& flag) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("background: start returns before the job ends, wait after") {
  for (int spin_us : {0, 2000}) {
    INFO("spin_us " << spin_us);
    Background bg(spin_us);
    std::atomic<bool> released = false, saw_release = false, finished = false;
    std::thread::id job_thread;
    bg.start([&] {
      job_thread = std::this_thread::get_id();
      saw_release = seen_within(released);  // only if start() returned first
      finished = true;
    });
    CHECK(bg.running());
    released = true;
    bg.wait();
    CHECK(saw_release);
    CHECK(finished);
    CHECK(job_thread != std::this_thread::get_id());
    CHECK_FALSE(bg.running());
  }
}

TEST_CASE("background: a job's exception comes out of wait, and the thread takes the next job") {
  Background bg(100);
  bg.start([] { throw std::runtime_error("job failed"); });
  CHECK_THROWS_WITH(bg.wait(), "job failed");
  int runs = 0;
  for (int i = 0; i < 1000; ++i) {
    bg.start([&] { ++runs; });
    bg.wait();
  }
  CHECK(runs == 1000);
  bg.wait();  // nothing running: returns
}

TEST_CASE("background: a second start before wait is refused, the destructor waits for the job") {
  std::atomic<bool> released = false;
  std::atomic<int> done = 0;
  {
    Background bg;
    bg.start([&] {
      (void)seen_within(released);
      ++done;
    });
    try {
      bg.start([] {});
      FAIL("the second start was accepted");
    } catch (const strata::core::Error& e) {
      CHECK(e.status() == STRATA_ERR_INTERNAL);
    }
    released = true;
  }
  CHECK(done == 1);
}
