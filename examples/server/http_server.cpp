// The HTTP side of strata-server: routes, the API key, request limits, streaming to clients.
#include "http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>

#include "openai.h"

namespace server {
namespace {

// One line on stderr. A request's method and path (decoded: %0a is a newline) and the messages that quote a
// client go through strata::printable, so that no client can write a line of its own or a terminal escape.
void log_line(const std::string& line) { fmt::print(stderr, "strata-server: {}\n", strata::printable(line)); }

// How often a request waiting for its job checks that its client is still there.
constexpr std::chrono::milliseconds kPoll{100};
// How often a response whose client has stopped sending writes a probe (see Probe).
constexpr std::chrono::seconds kProbeEvery{1};
// A request's head and the framing of a chunked body, on top of --max-body.
constexpr size_t kHeadAllowance = 64 << 10;
// How long stop() lets the responses being written finish.
constexpr std::chrono::seconds kDrain{5};

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t random64() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

std::string new_id(Endpoint endpoint) {
  return fmt::format("{}-{:016x}{:08x}", endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl", random64(),
                     static_cast<uint32_t>(random64()));
}

void reply_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(to_text(error_body(e)), "application/json");
}

void reply_json(httplib::Response& res, const Json& doc) { res.set_content(to_text(doc), "application/json"); }

std::string event(const Json& doc) { return "data: " + to_text(doc) + "\n\n"; }

// Compares without stopping at the first difference, so the time taken does
// not tell how much of a guessed key was right (its length is no secret).
bool same_secret(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

// A generation's state across the content provider's calls.
struct Delivery {
  std::shared_ptr<Job> job;
  Reply reply;
  bool include_usage = false;
  bool started = false;
  std::string text;  // non-streamed: the whole text so far
  std::chrono::steady_clock::time_point probed{};
};

// A client that has sent all it will send either half-closed its side and
// waits for the answer, or left. Only a write tells: to one that left, the
// first draws a reset, and the sink is no longer writable at the next poll.
// So while such a client waits, the response writes `probe` (bytes its
// format ignores) at once and then every kProbeEvery. False: the client is gone.
bool still_there(const ConnectionServer& http, httplib::DataSink& sink, Delivery& d, std::string_view probe) {
  if (!sink.is_writable()) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - d.probed < kProbeEvery || !http.client_input_closed()) return true;
  d.probed = now;
  return sink.write(probe.data(), probe.size());
}

ConnectionLimits limits_of(const HttpOptions& o) {
  ConnectionLimits l = o.connections;
  l.max_request_bytes = 2 * o.max_body_bytes + kHeadAllowance;
  return l;
}

}  // namespace

struct HttpServer::Impl {
  Impl(const strata::Model& m, SlotPool& p, HttpOptions o) : model(m), pool(p), options(std::move(o)) {}

  const strata::Model& model;
  SlotPool& pool;
  const HttpOptions options;
  const int64_t created = unix_now();
  ConnectionServer http{limits_of(options)};

  using Handler = void (Impl::*)(const httplib::Request&, httplib::Response&);

  void routes();
  // Wraps a handler: the API key first, then ApiError and any other exception
  // become an error response; nothing a client sends ends the process.
  httplib::Server::Handler guarded(Handler handler, bool needs_key);
  void health(const httplib::Request& req, httplib::Response& res);
  void models(const httplib::Request& req, httplib::Response& res);
  void model_by_id(const httplib::Request& req, httplib::Response& res);
  void chat(const httplib::Request& req, httplib::Response& res) { generate(req, res, Endpoint::Chat); }
  void completion(const httplib::Request& req, httplib::Response& res) { generate(req, res, Endpoint::Completion); }
  httplib::Server::HandlerResponse on_http_error(const httplib::Request& req, httplib::Response& res);
  void generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  Generation generation_of(const Request& r) const;
  void stream(httplib::Response& res, std::shared_ptr<Delivery> d);
  void respond_whole(httplib::Response& res, std::shared_ptr<Delivery> d);

  // Generation responses whose body is still being written. httplib's stop()
  // ends every chunked body at its next step, so stop() first lets these
  // write their ending (the pool has ended their jobs), up to kDrain.
  std::mutex bodies_mutex;
  std::condition_variable bodies_ended;
  int open_bodies = 0;
  void body_opened();
  void body_closed();
};

void HttpServer::Impl::body_opened() {
  std::lock_guard lock(bodies_mutex);
  ++open_bodies;
}

void HttpServer::Impl::body_closed() {
  {
    std::lock_guard lock(bodies_mutex);
    --open_bodies;
  }
  bodies_ended.notify_all();
}

httplib::Server::Handler HttpServer::Impl::guarded(Handler handler, bool needs_key) {
  return [this, handler, needs_key](const httplib::Request& req, httplib::Response& res) {
    http.request_read();
    if (req.body.size() > options.max_body_bytes) {  // chunked: httplib checks only a Content-Length
      res.status = 413;
      on_http_error(req, res);
      return;
    }
    try {
      if (needs_key && !options.api_key.empty()) {
        const std::string auth = req.get_header_value("Authorization");
        const std::string_view bearer = "Bearer ";
        if (!auth.starts_with(bearer) || !same_secret(std::string_view(auth).substr(bearer.size()), options.api_key)) {
          res.set_header("WWW-Authenticate", "Bearer");
          throw ApiError(401, "invalid_request_error",
                         "Incorrect or missing API key: send the header 'Authorization: Bearer <key>'.", "",
                         "invalid_api_key");
        }
      }
      (this->*handler)(req, res);
    } catch (const ApiError& e) {
      reply_error(res, e);
    } catch (const std::exception& e) {
      log_line(fmt::format("{} {}: {}", req.method, req.path, e.what()));
      reply_error(res, ApiError(500, "server_error", fmt::format("The server failed: {}", e.what())));
    }
  };
}

void HttpServer::Impl::health(const httplib::Request&, httplib::Response& res) {
  const PoolStatus s = pool.status();
  reply_json(res, {{"status", "ok"},
                   {"model", options.model_name},
                   {"slots", s.slots},
                   {"slots_busy", s.busy},
                   {"queued", s.queued},
                   {"completed", s.completed},
                   {"cancelled", s.cancelled},
                   {"failed", s.failed},
                   {"connections", http.open_connections()},
                   {"connections_dropped", http.dropped_connections()}});
}

void HttpServer::Impl::models(const httplib::Request&, httplib::Response& res) {
  reply_json(res, model_list(options.model_name, created));
}

void HttpServer::Impl::model_by_id(const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  if (name != options.model_name)
    throw ApiError(404, "invalid_request_error", fmt::format("The model '{}' does not exist.", name), "model",
                   "model_not_found");
  reply_json(res, model_object(options.model_name, created));
}

void HttpServer::Impl::routes() {
  http.Get("/health", guarded(&Impl::health, false));
  http.Get("/v1/models", guarded(&Impl::models, true));
  http.Get("/v1/models/(.+)", guarded(&Impl::model_by_id, true));
  http.Post("/v1/chat/completions", guarded(&Impl::chat, true));
  http.Post("/v1/completions", guarded(&Impl::completion, true));

  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) { return on_http_error(req, res); }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    reply_error(res, ApiError(500, "server_error", "The server failed while reading the request."));
  });
}

// Statuses httplib sets itself (404 no route, 413 body too large, 400
// unreadable request) get an OpenAI-style body too; ours already have one.
httplib::Server::HandlerResponse HttpServer::Impl::on_http_error(const httplib::Request& req,
                                                                 httplib::Response& res) {
  if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
  if (res.status == 400 && http.request_over_limit()) res.status = 413;  // a chunked body past the cap
  std::string message = fmt::format("HTTP error {}", res.status), code;
  if (res.status == 400) {
    message = "The HTTP request could not be read (a POST needs a body with a Content-Length or chunked encoding).";
  } else if (res.status == 404) {
    message = fmt::format("Unknown request URL: {} {}.", req.method, req.path);
    code = "unknown_url";
  } else if (res.status == 413) {
    // httplib parses form bodies itself and caps them at 8 KiB (curl -d sends one without -H).
    const bool form = req.get_header_value("Content-Type").starts_with("application/x-www-form-urlencoded");
    message = form ? "A body sent as application/x-www-form-urlencoded is limited to 8192 bytes; send "
                     "'Content-Type: application/json'."
                   : fmt::format("The request body is larger than this server's limit of {} bytes.",
                                 options.max_body_bytes);
    code = "request_too_large";
  }
  reply_error(res, ApiError(res.status, "invalid_request_error", message, "", code));
  return httplib::Server::HandlerResponse::Handled;
}

Generation HttpServer::Impl::generation_of(const Request& r) const {
  Generation g;
  const char* prompt_param = r.endpoint == Endpoint::Chat ? "messages" : "prompt";
  const auto n_ctx = static_cast<size_t>(pool.n_ctx());
  const auto too_long = [&](std::string_view how_many) {
    return invalid_request(fmt::format("This model's maximum context length is {} tokens. However, your {} resulted in "
                                       "{} tokens. Please reduce the length of the {}.",
                                       n_ctx, prompt_param, how_many, prompt_param),
                           prompt_param, "context_length_exceeded");
  };
  try {
    // Tokenizing stops past the context, so a huge prompt costs no more than one that fits.
    if (r.endpoint == Endpoint::Chat)
      g.prompt = model.chat_tokenize(r.messages, true, options.content_control_tokens, n_ctx);
    else if (r.prompt_tokens.empty())
      g.prompt = model.tokenize(r.prompt_text, true, n_ctx);  // a raw prompt may spell out a chat template
  } catch (const strata::Error& e) {
    if (e.status() == STRATA_ERR_CONTEXT_FULL) throw too_long(fmt::format("more than {}", n_ctx));
    throw;
  }
  if (!r.prompt_tokens.empty()) {
    const int32_t n_vocab = model.info().n_vocab;
    for (size_t i = 0; i < r.prompt_tokens.size(); ++i)
      if (r.prompt_tokens[i] >= n_vocab)
        throw invalid_request(fmt::format("Token id {} at prompt position {} is outside the vocabulary of {} tokens.",
                                          r.prompt_tokens[i], i, n_vocab),
                              "prompt", "invalid_value");
    g.prompt = r.prompt_tokens;
  }
  if (g.prompt.empty()) throw invalid_request("The prompt is empty.", prompt_param, "invalid_value");
  if (g.prompt.size() > n_ctx) throw too_long(std::to_string(g.prompt.size()));
  g.max_tokens = r.max_tokens > 0 ? r.max_tokens : options.max_tokens_default;
  g.sampling.temperature = r.temperature;
  g.sampling.top_p = r.top_p;
  g.sampling.seed = r.seed ? *r.seed : random64();
  g.stop = r.stop;
  return g;
}

void HttpServer::Impl::generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  const Request r = parse_request(endpoint, req.body);
  if (!r.model.empty() && r.model != options.model_name)
    throw ApiError(404, "invalid_request_error",
                   fmt::format("The model '{}' does not exist; this server serves '{}'.", r.model, options.model_name),
                   "model", "model_not_found");
  auto d = std::make_shared<Delivery>();
  d->reply = {endpoint, new_id(endpoint), options.model_name, unix_now()};
  Generation g = generation_of(r);
  g.id = d->reply.id;
  d->job = std::make_shared<Job>(std::move(g));
  d->include_usage = r.include_usage;
  switch (pool.submit(d->job)) {
    case SlotPool::Admit::Queued: break;
    case SlotPool::Admit::Full:
      throw ApiError(503, "server_error", "Every slot is busy and the queue is full; retry later.", "", "server_busy");
    case SlotPool::Admit::Stopping:
      throw ApiError(503, "server_error", "The server is shutting down.", "", "server_shutting_down");
  }
  if (r.stream) stream(res, std::move(d));
  else respond_whole(res, std::move(d));
}

// Server-sent events: the chat's role chunk at once, then each piece of text
// as it is generated, the finish chunk, the usage chunk when asked, [DONE].
// A client gone (the socket closed, or a write fails) cancels the job.
void HttpServer::Impl::stream(httplib::Response& res, std::shared_ptr<Delivery> d) {
  res.set_header("Cache-Control", "no-cache");
  body_opened();
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, d](size_t, httplib::DataSink& sink) {
        std::string text;
        const bool ended = d->job->wait(text, kPoll);
        if (!still_there(http, sink, *d, ":\n\n")) {  // an SSE comment
          d->job->cancel();
          return false;
        }
        std::string out;
        if (!d->started && d->reply.endpoint == Endpoint::Chat) out += event(chunk(d->reply, "", true, nullptr));
        d->started = true;
        if (!text.empty()) out += event(chunk(d->reply, text, false, nullptr));
        if (ended) {
          const Outcome& o = d->job->outcome();
          if (o.finish == Finish::Error || o.finish == Finish::Cancelled) {
            out += event(error_body(ApiError(500, "server_error", "The generation failed: " + o.error)));
          } else {
            out += event(chunk(d->reply, "", false, &o));
            if (d->include_usage) out += event(usage_chunk(d->reply, o));
            out += "data: [DONE]\n\n";
          }
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          d->job->cancel();
          return false;
        }
        if (ended) sink.done();
        return true;
      },
      [this, d](bool) {  // however the response ended, its job stops
        d->job->cancel();
        body_closed();
      });
}

// One JSON document once the job has ended. The body goes through a content
// provider only so that a client that leaves cancels its job; the status (200)
// is sent before the generation ends, so a job that fails then (the engine, a
// shutdown) closes the connection with the response unfinished.
void HttpServer::Impl::respond_whole(httplib::Response& res, std::shared_ptr<Delivery> d) {
  body_opened();
  res.set_chunked_content_provider(
      "application/json",
      [this, d](size_t, httplib::DataSink& sink) {
        const bool ended = d->job->wait(d->text, kPoll);
        if (!still_there(http, sink, *d, " ")) {  // white space before the JSON
          d->job->cancel();
          return false;
        }
        if (!ended) return true;
        const Outcome& o = d->job->outcome();
        if (o.finish == Finish::Error || o.finish == Finish::Cancelled) {
          log_line(fmt::format("{} failed: {}", d->reply.id, o.error));
          return false;
        }
        const std::string body = to_text(full_response(d->reply, d->text, o));
        if (!sink.write(body.data(), body.size())) return false;
        sink.done();
        return true;
      },
      [this, d](bool) {
        d->job->cancel();
        body_closed();
      });
}

HttpServer::HttpServer(const strata::Model& model, SlotPool& pool, HttpOptions options)
    : impl_(std::make_unique<Impl>(model, pool, std::move(options))) {
  impl_->http.set_payload_max_length(impl_->options.max_body_bytes);
  impl_->http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    log_line(fmt::format("{} {} {}", req.method, req.path, res.status));
  });
  impl_->routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind(const std::string& host, int port) { return impl_->http.bind(host, port); }

bool HttpServer::run() { return impl_->http.listen_after_bind(); }

void HttpServer::stop() {
  {
    std::unique_lock lock(impl_->bodies_mutex);
    impl_->bodies_ended.wait_for(lock, kDrain, [this] { return impl_->open_bodies == 0; });
  }
  impl_->http.stop();
}

}  // namespace server
