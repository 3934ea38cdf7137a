// A small fixed thread pool whose parallel_for splits [0, n) into contiguous ranges.
#pragma once

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
class ThreadPool {
 public:
  // n_threads >= 1; 1 runs every job inline on the caller. Throws
  // Error(STRATA_ERR_INVALID_ARGUMENT) otherwise.
  explicit ThreadPool(int n_threads);
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

  int n_threads_;
  std::vector<std::thread> workers_;

  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;       // guards the job fields below
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stop_ = false;
  uint64_t generation_ = 0;  // bumped per job so each worker runs it once
  int pending_ = 0;          // worker ranges still running
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
