// One background thread that runs a caller's job while the caller does other work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace strata::core {

// start() hands the thread a job and returns at once; wait() returns when the
// job has finished and rethrows what it threw. One job at a time: start()
// after a start() without its wait() is refused (STRATA_ERR_INTERNAL). The
// thread polls for its next job for spin_us before it sleeps, and wait()
// polls as long, as ThreadPool's waits do (hybrid decode starts a job a
// layer, a few hundred microseconds apart). The destructor waits for a
// running job, then joins the thread.
class Background {
 public:
  explicit Background(int spin_us = 0);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  void start(std::function<void()> job);
  void wait();
  bool running() const noexcept { return state_.load(std::memory_order_acquire) != kIdle; }

 private:
  enum State : int { kIdle, kQueued, kDone };
  void main();

  int spin_us_;
  std::function<void()> job_;
  std::exception_ptr error_;
  std::atomic<int> state_ = kIdle;
  std::atomic<bool> stop_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
};

// Waits for a Background's job, if one runs, when it goes out of scope, and
// drops the job's error (the path that leaves by an exception has its own):
// a frame whose locals a job reads declares one after them.
class WaitOnExit {
 public:
  explicit WaitOnExit(Background* bg) : bg_(bg) {}
  ~WaitOnExit();
  WaitOnExit(const WaitOnExit&) = delete;
  WaitOnExit& operator=(const WaitOnExit&) = delete;

 private:
  Background* bg_;
};

}  // namespace strata::core
