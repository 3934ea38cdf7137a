// A fixed number of session slots, each a worker thread owning a strata::Session, fed from one queue.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.hpp"

namespace server {

// What one request asks of the engine.
struct Generation {
  std::string id;  // the request's id, for the log
  std::vector<int32_t> prompt;
  int32_t max_tokens = -1;  // -1: until the context is full
  strata::SamplerParams sampling;
  std::vector<std::string> stop;
};

enum class Finish {
  Stop,       // end-of-turn token or a stop string
  Length,     // max_tokens or the end of the context
  Cancelled,  // the client went away
  Error,      // the engine failed, or the server is shutting down
};

struct Outcome {
  Finish finish = Finish::Error;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // tokens sampled, the end-of-turn token not counted
  std::string error;              // with Finish::Error
};

// One request on its way through the pool, shared by the HTTP thread that
// waits for its text and the slot worker that generates it.
class Job {
 public:
  explicit Job(Generation generation) : generation_(std::move(generation)) {}
  const Generation& generation() const { return generation_; }

  // HTTP side. Waits at most timeout for new text or the end; appends the new
  // text to text. Returns true once the job has ended (outcome() is then set).
  bool wait(std::string& text, std::chrono::milliseconds timeout);
  const Outcome& outcome() const { return outcome_; }
  // Stops the job as soon as possible: dropped from the queue, or its
  // running prompt/decode aborted (any thread, any number of times).
  void cancel();

  // Worker side.
  bool cancelled() const { return cancelled_.load(); }
  void attach(strata::Session* session);  // the session cancel() stops; nullptr detaches
  void emit(const std::string& text);
  void end(Outcome outcome);

 private:
  const Generation generation_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  bool ended_ = false;
  Outcome outcome_;
  strata::Session* session_ = nullptr;
};

struct PoolStatus {
  int32_t slots = 0, busy = 0;
  size_t queued = 0;
  uint64_t completed = 0, cancelled = 0, failed = 0;
};

class SlotPool {
 public:
  // Makes n_slots sessions of session_params (whose n_ctx must be set) and
  // starts a worker for each; throws strata::Error when a session cannot be made.
  SlotPool(strata::Model model, int32_t n_slots, size_t max_queue, const strata::SessionParams& session_params);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  enum class Admit { Queued, Full, Stopping };
  Admit submit(std::shared_ptr<Job> job);

  // Ends queued jobs with an error, cancels running ones and joins the
  // workers. Only the first call does anything; the destructor calls it.
  void stop();

  int32_t n_ctx() const { return n_ctx_; }
  PoolStatus status() const;

 private:
  struct Slot {
    std::unique_ptr<strata::Session> session;
    std::shared_ptr<Job> job;  // the job being generated, guarded by mutex_
  };
  void work(Slot& slot);
  Outcome generate(Job& job, strata::Session& session);
  void count(const Outcome& outcome);
  static void log(const std::string& id, const Outcome& outcome, double seconds);

  const strata::Model model_;
  const int32_t n_ctx_;
  const size_t max_queue_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::once_flag stop_once_;
  uint64_t completed_ = 0, cancelled_ = 0, failed_ = 0;
  std::vector<std::thread> workers_;  // last: joined before the slots go
};

}  // namespace server
