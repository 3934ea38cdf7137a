// A small fixed thread pool whose parallel_for splits [0, n) into contiguous ranges.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::core {

// Runs parallel_for jobs on n_threads threads: the calling thread plus
// n_threads - 1 workers started once in the constructor.
//
// Determinism contract: the pool only decides *which thread* runs a range,
// never how results are combined. Callers write each output from exactly one
// range and never reduce across ranges, so results do not depend on the thread
// count (the CPU oracle relies on this).
//
// Thread safety: parallel_for may be called from several threads; calls are
// served one at a time. A parallel_for called from inside a running range (a
// nested call) runs inline on that thread instead of deadlocking.
//
// Waiting: with spin_us > 0 an idle worker polls for the next job for that
// long before it sleeps, and the caller polls for the job's end as long:
// a dispatch then costs about a microsecond instead of a futex wake-up of
// every worker. For pools on a latency path (hybrid decode dispatches a few
// tens of microseconds of work per layer); the default sleeps at once.
class ThreadPool {
 public:
  // n_threads >= 1; 1 runs every job inline on the caller; spin_us >= 0.
  // Throws Error(STRATA_ERR_INVALID_ARGUMENT) otherwise.
  explicit ThreadPool(int n_threads, int spin_us = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const noexcept { return n_threads_; }

  // Calls fn(begin, end) over min(n, n_threads) contiguous, non-empty ranges
  // that cover [0, n) exactly once, and returns when all have finished. If
  // ranges throw, the exception of the lowest-numbered failing range is
  // rethrown here (the others are dropped). n <= 0 does nothing.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_main(int index);
  void run_range(int index);
  void stop();

  int n_threads_;
  int spin_us_;
  std::vector<std::thread> workers_;

  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;       // sleeping and waking: the condition variables' predicates change under it
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<bool> stop_ = false;
  // The job's generation (bumped per job, after the fields below are set) << 32 | its range count: one
  // load tells a worker whether it takes part. Only the workers that take part are waited for, so only
  // they may read the fields below.
  std::atomic<uint64_t> job_ = 0;
  std::atomic<int> pending_ = 0;  // worker ranges still running
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int n_ranges_ = 0;
  std::vector<std::exception_ptr> errors_;  // one slot per range
};

// pool->parallel_for(n, fn), or fn(0, n) on the caller when pool is null (the
// ops take an optional pool).
inline void parallel_for(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) {
    pool->parallel_for(n, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace strata::core
