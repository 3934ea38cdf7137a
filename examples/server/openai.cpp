// The OpenAI HTTP API's JSON: requests checked and read into plain structs, responses and errors written.
#include "openai.h"

#include <fmt/format.h>

#include <limits>

namespace server {
namespace {

constexpr int kMaxDepth = 64;  // deeper request JSON is refused before it is built
constexpr size_t kMaxStops = 4;

const char* kind_of(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "something else";
  }
}

ApiError wrong_type(const std::string& name, const char* expected, const Json& got) {
  return invalid_request(fmt::format("Invalid type for '{}': expected {}, but got {} instead.", name, expected,
                                     kind_of(got)),
                         name, "invalid_type");
}

ApiError bad_value(const std::string& name, const std::string& why) {
  return invalid_request(fmt::format("Invalid value for '{}': {}.", name, why), name, "invalid_value");
}

ApiError unsupported(const std::string& name, const std::string& message) {
  return invalid_request(message, name, "unsupported_parameter");
}

// A field of an object; nullptr when it is absent or null (clients send null for "not set").
const Json* field(const Json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> get_bool(const Json& object, const char* name) {
  const Json* v = field(object, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> get_number(const Json& object, const char* name) {
  const Json* v = field(object, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name, "a number", *v);
  return v->get<double>();
}

std::optional<int64_t> get_int(const Json& object, const char* name, int64_t min, int64_t max) {
  const Json* v = field(object, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type(name, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max))
    throw bad_value(name, fmt::format("at most {} is allowed", max));
  const int64_t i = v->get<int64_t>();
  if (i < min || i > max) throw bad_value(name, fmt::format("{} is outside [{}, {}]", i, min, max));
  return i;
}

// Text that goes into a C string (the ChatML formatter): no NUL inside.
std::string get_text(const Json& v, const std::string& name) {
  if (!v.is_string()) throw wrong_type(name, "a string", v);
  std::string s = v.get<std::string>();
  if (s.find('\0') != std::string::npos) throw bad_value(name, "the text holds a NUL character");
  return s;
}

// A message's content: a string, null, or an array of text parts.
std::string message_content(const Json& message, const std::string& name) {
  const Json* content = field(message, "content");
  if (!content) return "";
  if (content->is_string()) return get_text(*content, name);
  if (!content->is_array()) throw wrong_type(name, "a string or an array of content parts", *content);
  std::string text;
  for (size_t j = 0; j < content->size(); ++j) {
    const Json& part = (*content)[j];
    const std::string part_name = fmt::format("{}[{}]", name, j);
    if (!part.is_object()) throw wrong_type(part_name, "an object", part);
    const Json* type = field(part, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "text")
      throw unsupported(part_name + ".type", "Only text content parts are supported.");
    const Json* t = field(part, "text");
    if (!t) throw invalid_request(fmt::format("Missing required parameter: '{}.text'.", part_name),
                                  part_name + ".text", "missing_required_parameter");
    text += get_text(*t, part_name + ".text");
  }
  return text;
}

void read_messages(const Json& body, Request& r) {
  const Json* messages = field(body, "messages");
  if (!messages)
    throw invalid_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (!messages->is_array()) throw wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw bad_value("messages", "at least one message is needed");
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    const std::string name = fmt::format("messages[{}]", i);
    if (!m.is_object()) throw wrong_type(name, "an object", m);
    const Json* role = field(m, "role");
    if (!role)
      throw invalid_request(fmt::format("Missing required parameter: '{}.role'.", name), name + ".role",
                            "missing_required_parameter");
    std::string role_text = get_text(*role, name + ".role");
    if (role_text.empty()) throw bad_value(name + ".role", "the role is empty");
    r.messages.push_back({std::move(role_text), message_content(m, name + ".content")});
  }
}

std::vector<int32_t> token_ids(const Json& array, const std::string& name) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < array.size(); ++i) {
    const Json& t = array[i];
    const std::string id_name = fmt::format("{}[{}]", name, i);
    if (!t.is_number_integer()) throw wrong_type(id_name, "an integer token id", t);
    // Non-negative integers parse as unsigned, negative ones as signed.
    const bool fits = t.is_number_unsigned() ? t.get<uint64_t>() <= std::numeric_limits<int32_t>::max()
                                             : t.get<int64_t>() >= 0;
    if (!fits) throw bad_value(id_name, "not a token id");
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return ids;
}

// A completion's prompt: a string, a token-id array, or a batch of one of either.
void read_prompt(const Json& body, Request& r) {
  const Json* prompt = field(body, "prompt");
  if (!prompt) throw invalid_request("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  if (prompt->is_string()) {
    r.prompt_text = prompt->get<std::string>();
    return;
  }
  if (!prompt->is_array()) throw wrong_type("prompt", "a string or an array", *prompt);
  if (prompt->empty()) throw bad_value("prompt", "the prompt is empty");
  const Json& first = prompt->front();
  if (first.is_number_integer()) {
    r.prompt_tokens = token_ids(*prompt, "prompt");
    return;
  }
  if (prompt->size() != 1) throw unsupported("prompt", "A batch of prompts is not supported: send one prompt per request.");
  if (first.is_string()) r.prompt_text = first.get<std::string>();
  else if (first.is_array()) r.prompt_tokens = token_ids(first, "prompt[0]");
  else throw wrong_type("prompt[0]", "a string or an array of token ids", first);
}

void read_stop(const Json& body, Request& r) {
  const Json* stop = field(body, "stop");
  if (!stop) return;
  if (stop->is_string()) {
    r.stop.push_back(stop->get<std::string>());
    return;
  }
  if (!stop->is_array()) throw wrong_type("stop", "a string or an array of strings", *stop);
  if (stop->size() > kMaxStops) throw bad_value("stop", fmt::format("at most {} stop sequences are allowed", kMaxStops));
  for (size_t i = 0; i < stop->size(); ++i) {
    const Json& s = (*stop)[i];
    if (!s.is_string()) throw wrong_type(fmt::format("stop[{}]", i), "a string", s);
    r.stop.push_back(s.get<std::string>());
  }
}

// Options this server does not implement are refused rather than ignored,
// so that a client never reads an answer to a question it did not ask.
void refuse_unsupported(const Json& body, Endpoint endpoint) {
  if (const auto n = get_int(body, "n", 1, std::numeric_limits<int32_t>::max()); n && *n != 1)
    throw unsupported("n", "Only n=1 is supported: one choice per request.");
  if (const Json* lp = field(body, "logprobs"); lp && *lp != false && *lp != 0)
    throw unsupported("logprobs", "'logprobs' is not supported: this server returns no log-probabilities.");
  if (const Json* tools = field(body, "tools"); tools && !(tools->is_array() && tools->empty()))
    throw unsupported("tools", "'tools' is not supported: this server makes no tool calls.");
  if (endpoint == Endpoint::Completion && get_bool(body, "echo").value_or(false))
    throw unsupported("echo", "'echo' is not supported: the answer does not repeat the prompt.");
}

void read_sampling(const Json& body, Endpoint endpoint, Request& r) {
  const auto max_tokens = get_int(body, "max_tokens", 1, std::numeric_limits<int32_t>::max());
  const auto max_completion = endpoint == Endpoint::Chat
                                  ? get_int(body, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max())
                                  : std::nullopt;
  if (max_completion) r.max_tokens = static_cast<int32_t>(*max_completion);
  else if (max_tokens) r.max_tokens = static_cast<int32_t>(*max_tokens);
  if (const auto t = get_number(body, "temperature")) {
    if (*t < 0 || *t > 2) throw bad_value("temperature", fmt::format("{} is outside [0, 2]", *t));
    r.temperature = static_cast<float>(*t);
  }
  if (const auto p = get_number(body, "top_p")) {
    if (*p < 0 || *p > 1) throw bad_value("top_p", fmt::format("{} is outside [0, 1]", *p));
    // top_p 0 keeps only the most likely token: greedy.
    if (*p == 0) r.temperature = 0;
    else r.top_p = static_cast<float>(*p);
  }
  if (const Json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) throw wrong_type("seed", "an integer", *seed);
    r.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  read_stop(body, r);
}

Json parse_body(std::string_view body) {
  // Depth is bounded while parsing, so a deeply nested body cannot exhaust
  // the stack of a later recursive walk.
  const Json::parser_callback_t limit_depth = [](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxDepth) throw invalid_request(fmt::format("The JSON body nests deeper than {} levels.", kMaxDepth));
    return true;
  };
  try {
    return Json::parse(body.begin(), body.end(), limit_depth);
  } catch (const Json::exception& e) {
    throw invalid_request(fmt::format("We could not parse the JSON body of your request: {}", e.what()));
  }
}

const char* finish_reason(const Outcome& o) { return o.finish == Finish::Length ? "length" : "stop"; }

Json usage(const Outcome& o) {
  return {{"prompt_tokens", o.prompt_tokens},
          {"completion_tokens", o.completion_tokens},
          {"total_tokens", o.prompt_tokens + o.completion_tokens}};
}

Json head(const Reply& reply, bool chunk) {
  const char* object = reply.endpoint == Endpoint::Completion ? "text_completion"
                       : chunk                                ? "chat.completion.chunk"
                                                              : "chat.completion";
  return {{"id", reply.id}, {"object", object}, {"created", reply.created}, {"model", reply.model}};
}

Json null_or(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

ApiError invalid_request(const std::string& message, std::string param, std::string code) {
  return ApiError(400, "invalid_request_error", message, std::move(param), std::move(code));
}

Request parse_request(Endpoint endpoint, std::string_view body) {
  const Json doc = parse_body(body);
  if (!doc.is_object()) throw wrong_type("body", "a JSON object", doc);
  Request r;
  r.endpoint = endpoint;
  if (const Json* model = field(doc, "model")) r.model = get_text(*model, "model");
  r.stream = get_bool(doc, "stream").value_or(false);
  if (const Json* opts = field(doc, "stream_options")) {
    if (!opts->is_object()) throw wrong_type("stream_options", "an object", *opts);
    r.include_usage = get_bool(*opts, "include_usage").value_or(false);
  }
  refuse_unsupported(doc, endpoint);
  read_sampling(doc, endpoint, r);
  if (endpoint == Endpoint::Chat) read_messages(doc, r);
  else read_prompt(doc, r);
  return r;
}

Json full_response(const Reply& reply, const std::string& text, const Outcome& outcome) {
  Json doc = head(reply, false);
  Json choice = {{"index", 0}};
  if (reply.endpoint == Endpoint::Chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason(outcome);
  doc["choices"] = Json::array({choice});
  doc["usage"] = usage(outcome);
  return doc;
}

Json chunk(const Reply& reply, const std::string& text, bool first, const Outcome* finish) {
  Json doc = head(reply, true);
  Json choice = {{"index", 0}};
  if (reply.endpoint == Endpoint::Chat) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && !finish)) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish ? Json(finish_reason(*finish)) : Json(nullptr);
  doc["choices"] = Json::array({choice});
  return doc;
}

Json usage_chunk(const Reply& reply, const Outcome& outcome) {
  Json doc = head(reply, true);
  doc["choices"] = Json::array();
  doc["usage"] = usage(outcome);
  return doc;
}

Json error_body(const ApiError& e) {
  return {{"error",
           {{"message", e.what()}, {"type", e.type}, {"param", null_or(e.param)}, {"code", null_or(e.code)}}}};
}

Json model_object(const std::string& name, int64_t created) {
  return {{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "libstrata"}};
}

Json model_list(const std::string& name, int64_t created) {
  return {{"object", "list"}, {"data", Json::array({model_object(name, created)})}};
}

std::string to_text(const Json& document) { return document.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace server
