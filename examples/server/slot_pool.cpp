// A fixed number of session slots, each a worker thread owning a strata::Session, fed from one queue.
#include "slot_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "text_stream.h"

namespace server {

bool Job::wait(std::string& text, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return ended_ || !pending_.empty(); });
  text += pending_;
  pending_.clear();
  return ended_;
}

void Job::cancel() {
  cancelled_.store(true);
  std::lock_guard lock(mutex_);
  if (session_) session_->cancel();
}

void Job::attach(strata::Session* session) {
  std::lock_guard lock(mutex_);
  session_ = session;
}

void Job::emit(const std::string& text) {
  if (text.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_ += text;
  }
  changed_.notify_all();
}

void Job::end(Outcome outcome) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = std::move(outcome);
    ended_ = true;
    session_ = nullptr;
  }
  changed_.notify_all();
}

SlotPool::SlotPool(strata::Model model, int32_t n_slots, size_t max_queue, const strata::SessionParams& session_params)
    : model_(std::move(model)), n_ctx_(session_params.n_ctx), max_queue_(max_queue) {
  for (int32_t i = 0; i < n_slots; ++i) {
    auto slot = std::make_unique<Slot>();
    strata::SessionParams p = session_params;
    // Called between prompt chunks on the worker's own thread: closes the gap
    // in which a cancel() that lands just before a call starts is cleared by it.
    Slot* self = slot.get();
    p.progress = [self](uint64_t, uint64_t) { return !(self->job && self->job->cancelled()); };
    slot->session = std::make_unique<strata::Session>(model_.new_session(p));
    slots_.push_back(std::move(slot));
  }
  for (auto& slot : slots_) workers_.emplace_back([this, s = slot.get()] { work(*s); });
}

SlotPool::~SlotPool() { stop(); }

SlotPool::Admit SlotPool::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return Admit::Stopping;
    // Jobs whose clients left while queued make room at once.
    std::erase_if(queue_, [this](const std::shared_ptr<Job>& j) {
      if (!j->cancelled()) return false;
      j->end({.finish = Finish::Cancelled, .prompt_tokens = static_cast<int32_t>(j->generation().prompt.size())});
      ++cancelled_;
      return true;
    });
    if (queue_.size() >= max_queue_) return Admit::Full;
    queue_.push_back(std::move(job));
  }
  work_ready_.notify_one();
  return Admit::Queued;
}

void SlotPool::stop() {
  std::call_once(stop_once_, [this] {
    std::deque<std::shared_ptr<Job>> dropped;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      dropped.swap(queue_);
      for (auto& slot : slots_)
        if (slot->job) slot->job->cancel();
    }
    work_ready_.notify_all();
    for (auto& job : dropped)
      job->end({.finish = Finish::Error,
                .prompt_tokens = static_cast<int32_t>(job->generation().prompt.size()),
                .error = "the server is shutting down"});
    for (std::thread& t : workers_) t.join();
  });
}

PoolStatus SlotPool::status() const {
  std::lock_guard lock(mutex_);
  PoolStatus s;
  s.slots = static_cast<int32_t>(slots_.size());
  for (const auto& slot : slots_) s.busy += slot->job != nullptr;
  s.queued = queue_.size();
  s.completed = completed_;
  s.cancelled = cancelled_;
  s.failed = failed_;
  return s;
}

void SlotPool::work(Slot& slot) {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      slot.job = std::move(queue_.front());
      queue_.pop_front();
    }
    Job& job = *slot.job;
    const auto t0 = std::chrono::steady_clock::now();
    Outcome outcome = generate(job, *slot.session);
    log(job.generation().id, outcome, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    {
      std::lock_guard lock(mutex_);
      // A job cancelled by stop() ends as an error: its client is still there.
      if (outcome.finish == Finish::Cancelled && stopping_) {
        outcome.finish = Finish::Error;
        outcome.error = "the server is shutting down";
      }
      count(outcome);
      job.end(std::move(outcome));
      slot.job.reset();
    }
  }
}

void SlotPool::count(const Outcome& outcome) {
  switch (outcome.finish) {
    case Finish::Stop:
    case Finish::Length: ++completed_; break;
    case Finish::Cancelled: ++cancelled_; break;
    case Finish::Error: ++failed_; break;
  }
}

void SlotPool::log(const std::string& id, const Outcome& o, double seconds) {
  static constexpr const char* kFinish[] = {"stop", "length", "cancelled", "failed"};
  fmt::print(stderr, "strata-server: {}: {} prompt + {} completion tokens, {} in {:.2f} s{}{}\n", id, o.prompt_tokens,
             o.completion_tokens, kFinish[static_cast<int>(o.finish)], seconds, o.error.empty() ? "" : ": ",
             strata::printable(o.error));
}

// The generate loop of the strata CLI, with the text turned into client text
// (UTF-8, stop strings) as it comes, and a cancellation check at every step.
Outcome SlotPool::generate(Job& job, strata::Session& session) {
  const Generation& g = job.generation();
  Outcome out;
  out.prompt_tokens = static_cast<int32_t>(g.prompt.size());
  const int32_t eos = model_.eos(), eot = model_.eot();
  const int32_t limit = g.max_tokens < 0 ? std::numeric_limits<int32_t>::max() : g.max_tokens;
  TextStream text(g.stop);
  job.attach(&session);
  try {
    session.reset();
    if (job.cancelled()) throw strata::Error(STRATA_ABORTED, "cancelled");
    session.prompt(g.prompt);
    strata::Sampler sampler(g.sampling);
    for (int32_t t : g.prompt) sampler.accept(t);
    for (;;) {
      if (job.cancelled()) throw strata::Error(STRATA_ABORTED, "cancelled");
      const int32_t tok = session.sample(sampler);
      if (tok == eos || tok == eot) {
        out.finish = Finish::Stop;
        break;
      }
      ++out.completion_tokens;
      const bool stopped = text.push(model_.detokenize({tok}));
      job.emit(text.take());
      if (stopped) {
        out.finish = Finish::Stop;
        break;
      }
      if (out.completion_tokens >= limit || session.n_past() >= n_ctx_) {
        out.finish = Finish::Length;
        break;
      }
      session.decode(tok);
    }
    text.finish();
    job.emit(text.take());
  } catch (const strata::Error& e) {
    out.finish = e.status() == STRATA_ABORTED ? Finish::Cancelled : Finish::Error;
    out.error = e.what();
  } catch (const std::exception& e) {
    out.finish = Finish::Error;
    out.error = e.what();
  }
  job.attach(nullptr);
  return out;
}

}  // namespace server
