// How strata-server holds its connections: a thread per connection up to a
// limit, a deadline for reading each whole request, the slowest readers
// dropped to make room, TCP_NODELAY and a listen backlog that holds a burst.
//
// httplib's own connection loop gives each connection a pool thread for as
// long as the client keeps sending a byte every few seconds, so a few dozen
// slow clients take every thread. ConnectionServer replaces that loop (the
// Server's process_and_close_socket, through its protected process_request,
// as cpp-httplib 0.11, Debian 12's, declares them) and its task queue.
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>

namespace server {

struct ConnectionLimits {
  int max_connections = 256;  // served at once; a new one beyond them drops the slowest reader or waits
  std::chrono::milliseconds request_timeout{30'000};  // a whole request, head and body, from its first byte
  std::chrono::milliseconds idle_timeout{5'000};      // a kept-alive connection waiting for its next request
  int backlog = 512;                                  // the listen queue of connections not yet accepted
  size_t max_request_bytes = 0;  // a request's head and body as sent (framing included); 0: no limit
};

class ConnectionServer : public httplib::Server {
 public:
  explicit ConnectionServer(ConnectionLimits limits);
  ~ConnectionServer() override;

  // bind_to_port / bind_to_any_port with the limits' listen backlog.
  int bind(const std::string& host, int port);

  // Handlers call this first: the request (head and body) has been read, so
  // its connection is busy and never dropped. (httplib's pre-routing handler
  // runs before the body is read.)
  void request_read();

  // Of the connection the calling thread serves (false on any other thread):
  // its request passed max_request_bytes (httplib then answers 400 with an
  // empty body), and its client has sent all it will send (half-closed, or
  // gone: a write tells which).
  bool request_over_limit() const;
  bool client_input_closed() const;

  // Connections open now (served or waiting for a thread), and how many were
  // dropped for being slow since the start.
  int open_connections() const;
  int64_t dropped_connections() const;

  // Where the connections stand; shared with the task queue (see the .cpp).
  struct Registry;

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool stopping() const { return svr_sock_ == INVALID_SOCKET; }  // stop() closes the listening socket

  const ConnectionLimits limits_;
  std::shared_ptr<Registry> registry_;
};

}  // namespace server
