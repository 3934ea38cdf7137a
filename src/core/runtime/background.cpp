// Background: a job slot of three states (idle, queued, done) that the thread and the caller poll, then sleep on.
#include "core/runtime/background.h"

#include <utility>

#include "core/base/error.h"
#include "core/runtime/spin.h"

namespace strata::core {

Background::Background(int spin_us) : spin_us_(spin_us) {
  if (spin_us < 0) fail(STRATA_ERR_INVALID_ARGUMENT, "background thread: spin_us must be >= 0, got {}", spin_us);
  try {
    thread_ = std::thread([this] { main(); });
  } catch (...) {
    fail(STRATA_ERR_OUT_OF_MEMORY, "background thread: cannot start a thread");
  }
}

WaitOnExit::~WaitOnExit() {
  if (bg_ && bg_->running()) {
    try {
      bg_->wait();
    } catch (...) {  // the job's error has no caller left to take it
    }
  }
}

Background::~Background() {
  { const WaitOnExit finish(this); }
  {
    std::lock_guard lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
  thread_.join();
}

void Background::start(std::function<void()> job) {
  if (running()) fail(STRATA_ERR_INTERNAL, "background thread: a job is still running");
  job_ = std::move(job);
  error_ = nullptr;
  {
    std::lock_guard lock(mutex_);  // the thread deciding to sleep sees the job or gets the notify
    state_.store(kQueued, std::memory_order_release);
  }
  cv_.notify_all();
}

void Background::wait() {
  if (!running()) return;
  auto done = [&] { return state_.load(std::memory_order_acquire) == kDone; };
  if (!spin_for(spin_us_, done)) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, done);
  }
  job_ = nullptr;
  state_.store(kIdle, std::memory_order_release);
  if (std::exception_ptr e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
}

void Background::main() {
  auto ready = [&] {
    return stop_.load(std::memory_order_acquire) || state_.load(std::memory_order_acquire) == kQueued;
  };
  for (;;) {
    if (!spin_for(spin_us_, ready)) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    try {
      job_();
    } catch (...) {
      error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);  // the caller may be between its check and its sleep
      state_.store(kDone, std::memory_order_release);
    }
    cv_.notify_all();
  }
}

}  // namespace strata::core
