// strata-server's connections: see connections.h.
#include "connections.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace server {
namespace {

using Clock = std::chrono::steady_clock;

// How long a send may wait for the client to take more bytes.
constexpr std::chrono::seconds kWriteTimeout{30};
// How often the task queue looks for connections to drop while others wait for a thread.
constexpr std::chrono::milliseconds kRebalance{20};
// A connection is dropped only after it waited or read this long in its
// phase: a client that sends its request at once is never dropped.
constexpr std::chrono::milliseconds kDropGrace{250};

// Waiting: for the first byte of its next request (a new or kept-alive
// connection). Reading: the request arrives. Busy: it is handled or its
// response written. Only the first two may be dropped to make room.
enum class Phase { Waiting, Reading, Busy };

class ConnectionStream;

struct Connection {
  socket_t fd;
  ConnectionStream* stream;
  Clock::time_point accepted;  // when the listener took it, before it waited for a thread
  Phase phase = Phase::Waiting;
  Clock::time_point since = Clock::now();  // start of the phase
  bool dropped = false;                    // shut down to free its thread; it ends soon
};

// Waits up to `until` for fd to be ready for `events`; false at the time limit.
bool wait_for(socket_t fd, short events, Clock::time_point until) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1'000'000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // the read or write that follows reports the error
  }
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

// The socket of one connection as httplib reads and writes it: reads are
// buffered and stop at the request's deadline; writes never raise SIGPIPE.
class ConnectionStream final : public httplib::Stream {
 public:
  explicit ConnectionStream(socket_t fd) : fd_(fd) {}

  // A new request: it must arrive by `deadline`, in at most `limit` bytes (0: no limit).
  void start_request(Clock::time_point deadline, size_t limit) {
    deadline_ = deadline;
    limit_ = limit;
    consumed_ = 0;
  }
  bool buffered() const { return begin_ < end_; }
  // A read met the deadline, the byte limit or the end of the input: nothing
  // more is read from this connection.
  bool read_ended() const { return read_ended_; }
  bool over_limit() const { return over_limit_; }

  // The client has sent all it will send: it half-closed its side (and still
  // reads) or closed the connection; only a write tells which.
  bool input_closed() const {
    if (buffered()) return false;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

  bool is_readable() const override { return buffered() || wait_for(fd_, POLLIN, deadline_); }
  // httplib asks this between the chunks of a body it writes: false once a
  // write failed or the connection was reset (which a write to a closed one
  // brings about). A half-closed client is still writable.
  bool is_writable() const override {
    if (write_failed_) return false;
    pollfd p{fd_, 0, 0};
    return ::poll(&p, 1, 0) <= 0 || !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (!buffered()) {
      if (read_ended_ || !wait_for(fd_, POLLIN, deadline_)) {
        read_ended_ = true;
        return -1;
      }
      ssize_t n;
      do n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) {
        read_ended_ = true;
        return n;
      }
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, end_ - begin_);
    if (limit_ > 0) {
      if (consumed_ >= limit_) {
        read_ended_ = over_limit_ = true;
        return -1;
      }
      n = std::min(n, limit_ - consumed_);
    }
    std::memcpy(ptr, buffer_.data() + begin_, n);
    begin_ += n;
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    const Clock::time_point until = Clock::now() + kWriteTimeout;
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (!wait_for(fd_, POLLOUT, until)) return fail_write();
      } else {
        return fail_write();
      }
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  ssize_t fail_write() {
    write_failed_ = true;
    return -1;
  }

  socket_t fd_;
  Clock::time_point deadline_ = Clock::now();
  size_t limit_ = 0, consumed_ = 0;  // of the current request
  std::array<char, 16384> buffer_{};
  size_t begin_ = 0, end_ = 0;
  bool read_ended_ = false;
  bool over_limit_ = false;
  bool write_failed_ = false;
};

// The connection this thread serves, for request_read(), and when
// the listener accepted the one it is about to serve.
thread_local Connection* tl_connection = nullptr;
thread_local Clock::time_point tl_accepted;

}  // namespace

struct ConnectionServer::Registry {
  std::mutex mutex;
  std::vector<Connection*> served;
  int waiting_for_thread = 0;  // accepted, queued for a thread
  int64_t dropped = 0;

  void add(Connection* c) {
    std::lock_guard lock(mutex);
    served.push_back(c);
  }
  // After this no one shuts the socket down, so its descriptor may be closed and reused.
  void remove(Connection* c) {
    std::lock_guard lock(mutex);
    served.erase(std::find(served.begin(), served.end(), c));
  }
  void set_phase(Connection* c, Phase p) {
    std::lock_guard lock(mutex);
    c->phase = p;
    c->since = Clock::now();
  }
  // Drops the oldest connections that have waited or read past kDropGrace
  // (never a busy one) until `n` are ending, each shutdown waking its thread.
  void drop_until_ending(size_t n) {
    std::lock_guard lock(mutex);
    size_t ending = 0;
    for (const Connection* c : served) ending += c->dropped;
    const Clock::time_point slow = Clock::now() - kDropGrace;
    for (; ending < n; ++ending) {
      Connection* slowest = nullptr;
      for (Connection* c : served)
        if (c->phase != Phase::Busy && !c->dropped && c->since < slow && (!slowest || c->accepted < slowest->accepted))
          slowest = c;
      if (!slowest) return;
      ::shutdown(slowest->fd, SHUT_RDWR);
      slowest->dropped = true;
      ++dropped;
    }
  }
  // At stop: every connection not handling a request ends now.
  void drop_idle() {
    std::lock_guard lock(mutex);
    for (Connection* c : served)
      if (c->phase != Phase::Busy) ::shutdown(c->fd, SHUT_RDWR);
  }
};

namespace {

// httplib's task queue: a thread per connection, started as needed up to the
// limit; beyond it a new connection waits for a thread and drops the slowest
// reader to free one (when every connection is busy it just waits).
class ConnectionQueue final : public httplib::TaskQueue {
 public:
  ConnectionQueue(std::shared_ptr<ConnectionServer::Registry> registry, int max_threads)
      : registry_(std::move(registry)), max_threads_(static_cast<size_t>(std::max(1, max_threads))) {}
  ~ConnectionQueue() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back({std::move(fn), Clock::now()});
      {
        std::lock_guard r(registry_->mutex);
        ++registry_->waiting_for_thread;
      }
      // Each idle worker takes one task; more tasks than idle workers need a new one.
      if (tasks_.size() > idle_ && threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
      ready_.notify_one();
      if (backlog() > 0) tick_.notify_one();
    }
    rebalance();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    ready_.notify_all();
    tick_.notify_all();
    registry_->drop_idle();
    janitor_.join();
    for (std::thread& t : threads_) t.join();
  }

 private:
  // Connections that wait for a thread with none free (mutex_ held). Only
  // enqueue raises it: a worker taking a task lowers tasks and idle alike.
  size_t backlog() const {
    return threads_.size() >= max_threads_ && tasks_.size() > idle_ ? tasks_.size() - idle_ : 0;
  }

  // As many connections ending as wait for a thread when none is free. Runs
  // on each new connection, each one ended, and every kRebalance while there
  // is a backlog (for connections not yet registered, or in their grace, when
  // the others came).
  void rebalance() {
    size_t waiting = 0;
    {
      std::lock_guard lock(mutex_);
      waiting = backlog();
    }
    if (waiting > 0) registry_->drop_until_ending(waiting);
  }

  void tick() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (backlog() == 0) tick_.wait(lock, [this] { return stopping_ || backlog() > 0; });
      else tick_.wait_for(lock, kRebalance);
      lock.unlock();
      rebalance();
      lock.lock();
    }
  }

  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (tasks_.empty()) return;  // stopping, nothing left to serve
      Task task = std::move(tasks_.front());
      tasks_.pop_front();
      {
        std::lock_guard r(registry_->mutex);
        --registry_->waiting_for_thread;
      }
      lock.unlock();
      tl_accepted = task.accepted;
      task.fn();
      rebalance();
      lock.lock();
    }
  }

  std::shared_ptr<ConnectionServer::Registry> registry_;
  const size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable ready_;  // a task or the stop, for the workers
  std::condition_variable tick_;   // a backlog or the stop, for the janitor
  struct Task {
    std::function<void()> fn;  // serves one connection
    Clock::time_point accepted;
  };
  std::deque<Task> tasks_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::thread janitor_{[this] { tick(); }};  // last: starts once the rest is built
};

}  // namespace

ConnectionServer::ConnectionServer(ConnectionLimits limits)
    : limits_(limits), registry_(std::make_shared<Registry>()) {
  new_task_queue = [registry = registry_, max = limits_.max_connections] {
    return new ConnectionQueue(registry, max);  // httplib owns and deletes it
  };
  set_keep_alive_max_count(1000);
}

void ConnectionServer::request_read() {
  if (tl_connection) registry_->set_phase(tl_connection, Phase::Busy);
}

bool ConnectionServer::request_over_limit() const { return tl_connection && tl_connection->stream->over_limit(); }

bool ConnectionServer::client_input_closed() const {
  return tl_connection && tl_connection->stream->input_closed();
}

ConnectionServer::~ConnectionServer() = default;

int ConnectionServer::bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound < 0 || ::listen(svr_sock_, limits_.backlog) != 0) return -1;
  return bound;
}

int ConnectionServer::open_connections() const {
  std::lock_guard lock(registry_->mutex);
  return static_cast<int>(registry_->served.size()) + registry_->waiting_for_thread;
}

int64_t ConnectionServer::dropped_connections() const {
  std::lock_guard lock(registry_->mutex);
  return registry_->dropped;
}

// httplib's keep-alive loop, with a deadline for each request and the
// connection's phase kept where the task queue can drop it.
bool ConnectionServer::process_and_close_socket(socket_t sock) {
  const int on = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  ConnectionStream stream(sock);
  Connection c{sock, &stream, tl_accepted};
  registry_->add(&c);
  tl_connection = &c;
  bool ok = true;
  for (size_t served = 0; ok && served < keep_alive_max_count_;) {
    // The next request's first byte. At a stop the task queue shuts waiting
    // connections down, which ends this wait.
    const bool arrived = stream.buffered() || wait_for(sock, POLLIN, Clock::now() + limits_.idle_timeout);
    if (!arrived || stopping()) break;
    registry_->set_phase(&c, Phase::Reading);
    stream.start_request(Clock::now() + limits_.request_timeout, limits_.max_request_bytes);
    ++served;
    bool closed = false;
    // httplib answers a request whose head it could not read with 400 and
    // would go on reading the rest as the next one; a read that ended ends the connection.
    ok = process_request(stream, served == keep_alive_max_count_, closed, nullptr) && !closed && !stream.read_ended();
    registry_->set_phase(&c, Phase::Waiting);
  }
  tl_connection = nullptr;
  registry_->remove(&c);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace server
