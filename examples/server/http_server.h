// The HTTP side of strata-server: routes, the API key, request limits, streaming to clients.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "slot_pool.h"

#include "connections.h"

namespace server {

struct HttpOptions {
  std::string model_name;            // the id clients name the model by
  std::string api_key;               // empty: no key asked for
  size_t max_body_bytes = 4u << 20;  // larger request bodies get 413
  int32_t max_tokens_default = -1;   // max_tokens when a request gives none; -1: to the end of the context
  ConnectionLimits connections;
  bool content_control_tokens = false;  // chat: match control tokens in message text too (trusted clients)
};

class HttpServer {
 public:
  // model and pool must outlive the server.
  HttpServer(const strata::Model& model, SlotPool& pool, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free one). Returns the port, or -1 when binding failed.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns false if serving could not start.
  bool run();
  // Ends run() (any thread): lets the generation responses being written
  // finish (up to 5 s; the pool's stop() ends their jobs first), then stops
  // serving.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace server
