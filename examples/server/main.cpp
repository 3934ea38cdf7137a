// strata-server: an OpenAI-compatible HTTP server over libstrata's public API (an example).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "common.h"
#include "http_server.h"
#include "slot_pool.h"

namespace {

struct ServerOptions {
  std::string model_path, name, host = "127.0.0.1", api_key, max_body = "4MiB";
  int port = 8080;
  int32_t slots = 1;
  int32_t queue = 16;
  int32_t max_tokens = -1;
  int max_connections = 256;
  double request_timeout_s = 30;
  bool content_control_tokens = false;
  cli::EngineOptions engine;
};

// SIGINT/SIGTERM are blocked in every thread (the mask is set before any is
// made) and taken here, so shutting down runs as ordinary code, not in a
// signal handler. Returns when a signal came or `done` was set.
void wait_for_signal(const std::atomic<bool>& done, const std::function<void()>& on_signal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const timespec tick{0, 200'000'000};
  while (!done.load()) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      fmt::print(stderr, "strata-server: {}: shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
      on_signal();
      return;
    }
  }
}

int serve(const ServerOptions& o) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error status, not the end of the process

  const uint64_t max_body = strata::parse_size(o.max_body);  // before the load: a bad option fails at once
  const strata::Model model = strata::Model::load(o.model_path, o.engine.model_params(false));
  strata::SessionParams sp = o.engine.session_params(false);
  // The context every slot gets, resolved here so that requests can be checked against it.
  if (sp.n_ctx <= 0) sp.n_ctx = std::min(model.info().n_ctx_train, 4096);
  server::SlotPool pool(model, o.slots, static_cast<size_t>(o.queue), sp);

  server::HttpOptions http;
  http.model_name = o.name.empty() ? std::filesystem::path(o.model_path).stem().string() : o.name;
  http.api_key = o.api_key;
  http.max_body_bytes = max_body;
  http.max_tokens_default = o.max_tokens;
  http.content_control_tokens = o.content_control_tokens;
  http.connections.max_connections = o.max_connections;
  http.connections.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1000));
  server::HttpServer server(model, pool, http);
  const int port = server.bind(o.host, o.port);
  if (port < 0) {
    fmt::print(stderr, "strata-server: cannot listen on {}:{}\n", o.host, o.port);
    return 1;
  }
  fmt::print("strata-server: model {} ({}), {} slot(s) of {} tokens, {} backend\n", http.model_name,
             model.info().architecture, o.slots, sp.n_ctx, model.info().backend);
  fmt::print("strata-server: listening on http://{}:{}\n", o.host, port);
  std::fflush(stdout);

  std::atomic<bool> done{false};
  std::thread signals(wait_for_signal, std::cref(done), [&] {
    pool.stop();    // queued requests end with 503, running ones are cancelled
    server.stop();  // then run() returns once the open requests are answered
  });
  const bool served = server.run();
  done.store(true);
  signals.join();
  pool.stop();
  fmt::print(stderr, "strata-server: stopped\n");
  return served ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata-server: an OpenAI-compatible HTTP server over libstrata"};
  app.set_version_flag("--version", std::string("strata-server ") + strata_version_string());
  ServerOptions o;
  app.add_option("-m,--model", o.model_path, "GGUF model file")->required();
  app.add_option("--name", o.name, "Model id clients use (default: the file name without .gguf)");
  app.add_option("--host", o.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "Port (0: any free port, printed at start)")->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--slots", o.slots, "Sessions generating at once")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--queue", o.queue, "Requests waiting for a slot before new ones get 503")
      ->capture_default_str()->check(CLI::Range(0, 100000));
  app.add_option("--api-key", o.api_key, "Require 'Authorization: Bearer KEY' on /v1/*")
      ->envname("STRATA_SERVER_API_KEY");
  app.add_option("--max-body", o.max_body, "Largest request body, e.g. 4MiB (larger: 413)")->capture_default_str();
  app.add_option("--max-tokens", o.max_tokens, "max_tokens of requests that give none (-1: to the end of the context)")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "Connections served at once; beyond them a new one drops the slowest reader")
      ->capture_default_str()
      ->check(CLI::Range(2, 65536));
  app.add_option("--request-timeout", o.request_timeout_s, "Seconds a client has to send a whole request")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_flag("--content-control-tokens", o.content_control_tokens,
               "Chat: turn markers such as <|im_end|> in message text into control tokens (trusted clients only)");
  o.engine.add_to(app);
  try {
    app.parse(argc, argv);
    return serve(o);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const strata::Error& e) {
    fmt::print(stderr, "strata-server: error: {} ({})\n", e.what(), strata_status_name(e.status()));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata-server: error: {}\n", e.what());
    return 1;
  }
}
