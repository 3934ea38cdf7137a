// strata run: generate text from a prompt, streaming tokens as they come.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "common.h"

namespace cli {
namespace {

struct RunOptions {
  std::string model, prompt, file, system;
  int32_t n_predict = 64;
  bool chat = false;
  bool special = false;
  strata::SamplerParams sampling;
  EngineOptions engine;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run(const RunOptions& o) {
  const auto model = strata::Model::load(o.model, o.engine.model_params(true));
  const std::string text = o.file.empty() ? o.prompt : read_file(o.file);
  std::vector<int32_t> tokens;
  if (o.chat) {
    std::vector<strata::ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", text});
    tokens = model.chat_tokenize(messages, true, o.special);
  } else {
    tokens = model.tokenize(text, o.special);
  }
  if (tokens.empty()) throw std::invalid_argument("the prompt is empty");
  auto session = model.new_session(o.engine.session_params(true));
  strata::Sampler sampler(o.sampling);
  for (int32_t t : tokens) sampler.accept(t);

  const auto t_prompt = std::chrono::steady_clock::now();
  session.prompt(tokens);
  const double prompt_s = seconds_since(t_prompt);

  const int32_t eos = model.eos(), eot = model.eot();
  const auto t_gen = std::chrono::steady_clock::now();
  int32_t generated = 0;
  int32_t tok = session.sample(sampler);
  while (generated < o.n_predict) {
    ++generated;
    if (tok == eos || tok == eot) break;
    const std::string piece = model.detokenize({tok});
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (generated == o.n_predict || session.n_past() >= model.info().n_ctx_train) break;
    session.decode(tok);
    tok = session.sample(sampler);
  }
  const double gen_s = seconds_since(t_gen);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  fmt::print(stderr, "prompt: {} tokens in {:.3f} s ({:.1f} tok/s); generated: {} tokens in {:.3f} s ({:.1f} tok/s)\n",
             tokens.size(), prompt_s, tokens.size() / prompt_s, generated, gen_s,
             generated > 1 ? (generated - 1) / gen_s : 0.0);
}

}  // namespace

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  auto* p = cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
  auto* f = cmd->add_option("-f,--file", o->file, "Read the prompt from a file");
  p->excludes(f);
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate")->check(CLI::Range(1, 1 << 24));
  cmd->add_flag("--chat", o->chat, "Wrap the prompt as a ChatML user turn");
  cmd->add_option("--system", o->system, "System message for --chat");
  cmd->add_flag("--special", o->special,
                "Parse control tokens such as <|im_start|> in the prompt (with --chat: in the messages)");
  cmd->add_option("--temp", o->sampling.temperature, "Temperature (0 = greedy)");
  cmd->add_option("--top-k", o->sampling.top_k, "Top-k (0 = off)");
  cmd->add_option("--top-p", o->sampling.top_p, "Top-p (1 = off)");
  cmd->add_option("--min-p", o->sampling.min_p, "Min-p (0 = off)");
  cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1 = off)");
  cmd->add_option("--repeat-last-n", o->sampling.repeat_last_n, "History the penalty looks at");
  cmd->add_option("-s,--seed", o->sampling.seed, "Random seed");
  o->engine.add_to(*cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace cli
