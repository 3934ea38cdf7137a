// strata tokenize / detokenize: text on stdin to ids as JSON, and back.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <iterator>
#include <memory>

#include "common.h"

namespace cli {
namespace {

struct TokenizeOptions {
  std::string model;
  bool special = false;
  EngineOptions engine;
};

std::string read_stdin() { return std::string(std::istreambuf_iterator<char>(std::cin), {}); }

void tokenize(const TokenizeOptions& o) {
  strata::ModelParams mp = o.engine.model_params(false);
  const auto model = strata::Model::load(o.model, mp);
  const std::vector<int32_t> ids = model.tokenize(read_stdin(), o.special);
  fmt::print("[{}]\n", fmt::join(ids, ","));
}

// Reads a JSON array of integers (whitespace and commas between them).
std::vector<int32_t> parse_id_array(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = s.find('[');
  if (i == std::string::npos || s.find(']') == std::string::npos)
    throw std::invalid_argument("expected a JSON array of token ids such as [1,2,3]");
  for (++i; i < s.size() && s[i] != ']';) {
    if (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ',') { ++i; continue; }
    size_t used = 0;
    const long v = std::stol(s.substr(i), &used);
    ids.push_back(static_cast<int32_t>(v));
    i += used;
  }
  return ids;
}

void detokenize(const TokenizeOptions& o) {
  const auto model = strata::Model::load(o.model, o.engine.model_params(false));
  const std::string text = model.detokenize(parse_id_array(read_stdin()));
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* t = app.add_subcommand("tokenize", "Read UTF-8 text on stdin, print token ids as a JSON array");
  t->add_option("-m,--model", o->model, "GGUF model file")->required();
  t->add_flag("--special", o->special, "Match control tokens such as <|im_start|>");
  o->engine.add_to(*t);
  t->callback([o] { tokenize(*o); });

  auto d = std::make_shared<TokenizeOptions>();
  CLI::App* dt = app.add_subcommand("detokenize", "Read a JSON array of ids on stdin, print the text");
  dt->add_option("-m,--model", d->model, "GGUF model file")->required();
  d->engine.add_to(*dt);
  dt->callback([d] { detokenize(*d); });
}

}  // namespace cli
