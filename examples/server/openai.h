// The OpenAI HTTP API's JSON: requests checked and read into plain structs, responses and errors written.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "slot_pool.h"

namespace server {

// Responses keep their keys in the order written, as OpenAI's do.
using Json = nlohmann::ordered_json;

// An error as the OpenAI API reports one: an HTTP status and
// {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string type, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;  // param and code: empty for JSON null
};

// 400 invalid_request_error, the answer to anything wrong in a request.
ApiError invalid_request(const std::string& message, std::string param = {}, std::string code = {});

enum class Endpoint { Chat, Completion };

// A request of /v1/chat/completions or /v1/completions, checked.
struct Request {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;  // as the client named it; empty when it named none
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // The prompt: a chat's messages, a completion's text (which may spell out
  // control tokens), or a completion's token ids.
  std::vector<strata::ChatMessage> messages;
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  int32_t max_tokens = -1;      // -1: not given
  float temperature = 1.0f;     // OpenAI's default
  float top_p = 1.0f;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
};

// Reads and checks a request body; throws ApiError (400) naming the field at fault.
Request parse_request(Endpoint endpoint, std::string_view body);

// What every response and chunk of one request shares.
struct Reply {
  Endpoint endpoint = Endpoint::Chat;
  std::string id;     // "chatcmpl-..." or "cmpl-..."
  std::string model;  // the served model's name
  int64_t created = 0;
};

// The whole answer of a non-streamed request.
Json full_response(const Reply& reply, const std::string& text, const Outcome& outcome);
// One server-sent event's document: a piece of text (the chat's first chunk
// also carries the role), or with finish set, the last choice chunk.
Json chunk(const Reply& reply, const std::string& text, bool first, const Outcome* finish);
// The chunk after the last one when stream_options.include_usage is set.
Json usage_chunk(const Reply& reply, const Outcome& outcome);

Json error_body(const ApiError& error);
Json model_object(const std::string& name, int64_t created);
Json model_list(const std::string& name, int64_t created);

// JSON text of a document; never throws (invalid UTF-8 becomes U+FFFD).
std::string to_text(const Json& document);

}  // namespace server
