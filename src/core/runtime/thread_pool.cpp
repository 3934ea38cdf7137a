// ThreadPool: workers wait on a generation counter; each job is split into contiguous ranges.
#include "core/runtime/thread_pool.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/runtime/spin.h"

namespace strata::core {

namespace {

// True while this thread is executing a range of some pool's job; a nested
// parallel_for then runs inline (waiting for the pool from inside it would deadlock).
thread_local bool t_in_range = false;

struct InRangeScope {
  bool saved = t_in_range;
  InRangeScope() { t_in_range = true; }
  ~InRangeScope() { t_in_range = saved; }
};

// Bounds of range i of r over [0, n): the first n % r ranges get one extra
// element, so sizes differ by at most one.
int64_t range_begin(int64_t n, int r, int i) {
  const int64_t base = n / r, extra = n % r;
  return i * base + std::min<int64_t>(i, extra);
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, int spin_us) : n_threads_(n_threads), spin_us_(spin_us) {
  if (n_threads < 1) fail(STRATA_ERR_INVALID_ARGUMENT, "thread pool: n_threads must be >= 1, got {}", n_threads);
  if (spin_us < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "thread pool: spin_us must be >= 0, got {}", spin_us);
  workers_.reserve(n_threads - 1);
  try {
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
  } catch (...) {
    // Join what started before reporting, so no thread outlives the pool.
    stop();
    fail(STRATA_ERR_OUT_OF_MEMORY, "thread pool: cannot start {} threads", n_threads);
  }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_range(int index) {
  InRangeScope scope;
  try {
    (*fn_)(range_begin(n_, n_ranges_, index), range_begin(n_, n_ranges_, index + 1));
  } catch (...) {
    errors_[index] = std::current_exception();  // slot owned by this range alone
  }
}

void ThreadPool::worker_main(int index) {
  uint64_t seen = 0;
  auto ready = [&] {
    return stop_.load(std::memory_order_acquire) || job_.load(std::memory_order_acquire) >> 32 != seen >> 32;
  };
  for (;;) {
    if (!spin_for(spin_us_, ready)) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = job_.load(std::memory_order_acquire);
    if (index >= static_cast<int>(seen & 0xffffffffu)) continue;  // this job has fewer ranges than threads
    run_range(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);  // the caller may be between its check and its sleep
      done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || t_in_range) {
    InRangeScope scope;
    fn(0, n);
    return;
  }
  std::lock_guard call_lock(call_mutex_);
  const int n_ranges = static_cast<int>(std::min<int64_t>(n, n_threads_));
  fn_ = &fn;
  n_ = n;
  n_ranges_ = n_ranges;
  errors_.assign(n_ranges, nullptr);
  pending_.store(n_ranges - 1, std::memory_order_relaxed);  // range 0 runs on the caller
  {
    std::lock_guard lock(mutex_);  // a worker deciding to sleep sees the bump or gets the notify
    const uint64_t generation = (job_.load(std::memory_order_relaxed) >> 32) + 1;
    job_.store(generation << 32 | static_cast<uint32_t>(n_ranges), std::memory_order_release);
  }
  wake_.notify_all();
  run_range(0);
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_for(spin_us_, done)) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, done);
  }
  fn_ = nullptr;
  for (auto& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace strata::core
