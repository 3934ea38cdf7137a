// strata eval: teacher-forced run over a text file, writing the top-k log-probabilities of every position.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include "common.h"

namespace cli {
namespace {

struct EvalOptions {
  std::string model, file, logits_out;
  int32_t top = 20;
  bool special = false;
  EngineOptions engine;
};

// Writes the documented binary format (docs/cli.md, "strata eval"):
// header "STRATAEV" u32 version=1, u32 top_k, u32 n_positions, u32 n_vocab;
// then per position: i32 next token (-1 at the end), f32 its log-prob (NaN at
// the end), top_k i32 ids, top_k f32 log-probs (best first, ties by id).
class EvalWriter {
 public:
  EvalWriter(const std::string& path, uint32_t top_k, uint32_t n_pos, uint32_t n_vocab)
      : file_(std::fopen(path.c_str(), "wb"), &std::fclose), top_k_(top_k) {
    if (!file_) throw std::runtime_error(fmt::format("cannot write '{}'", path));
    const uint32_t header[4] = {1, top_k, n_pos, n_vocab};
    write("STRATAEV", 8);
    write(header, sizeof(header));
  }
  void row(int32_t next, float next_lp, const std::vector<int32_t>& ids, const std::vector<float>& lps) {
    write(&next, 4);
    write(&next_lp, 4);
    write(ids.data(), 4 * top_k_);
    write(lps.data(), 4 * top_k_);
  }

 private:
  void write(const void* p, size_t n) {
    if (std::fwrite(p, 1, n, file_.get()) != n) throw std::runtime_error("short write of the logits file");
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
  uint32_t top_k_;
};

void eval(const EvalOptions& o) {
  const auto model = strata::Model::load(o.model, o.engine.model_params(true));
  const std::vector<int32_t> tokens = model.tokenize(read_file(o.file), o.special);
  if (tokens.size() < 2) throw std::invalid_argument("the file has fewer than 2 tokens");
  strata::SessionParams sp = o.engine.session_params(true);
  if (sp.n_ctx == 0) sp.n_ctx = static_cast<int32_t>(std::min<size_t>(tokens.size(), model.info().n_ctx_train));
  auto session = model.new_session(sp);
  const size_t n = std::min<size_t>(tokens.size(), sp.n_ctx);
  const uint32_t k = static_cast<uint32_t>(std::min<int32_t>(o.top, model.info().n_vocab));

  std::unique_ptr<EvalWriter> out;
  if (!o.logits_out.empty())
    out = std::make_unique<EvalWriter>(o.logits_out, k, static_cast<uint32_t>(n), model.info().n_vocab);
  double nll = 0;
  size_t scored = 0, top1 = 0;
  std::vector<int32_t> ids(model.info().n_vocab);
  std::vector<int32_t> best(k);
  std::vector<float> best_lp(k);
  session.prompt_each(std::span<const int32_t>(tokens.data(), n), [&](int32_t pos, std::span<const float> logits) {
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    const double lse = mx + std::log(sum);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (uint32_t i = 0; i < k; ++i) {
      best[i] = ids[i];
      best_lp[i] = static_cast<float>(logits[ids[i]] - lse);
    }
    const bool has_next = static_cast<size_t>(pos) + 1 < n;
    const int32_t next = has_next ? tokens[pos + 1] : -1;
    const float next_lp = has_next ? static_cast<float>(logits[next] - lse) : NAN;
    if (has_next) {
      nll -= next_lp;
      ++scored;
      top1 += best[0] == next;
    }
    if (out) out->row(next, next_lp, best, best_lp);
    return true;
  });
  const auto st = session.stats();
  fmt::print("positions: {}  scored: {}  mean NLL: {:.4f}  perplexity: {:.3f}  top-1 match: {:.2f}%  ({:.1f} tok/s)\n",
             n, scored, nll / scored, std::exp(nll / scored), 100.0 * top1 / scored, n / (st.prompt_ms / 1000.0));
}

}  // namespace

void add_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Teacher-forced top-k log-probabilities of every position of a text");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("-f,--file", o->file, "UTF-8 text file")->required();
  cmd->add_option("--logits-out", o->logits_out, "Binary output file (format in docs/cli.md)");
  cmd->add_option("--top", o->top, "Log-probabilities kept per position")->check(CLI::Range(1, 1000));
  cmd->add_flag("--special", o->special, "Match control tokens in the text");
  o->engine.add_to(*cmd);
  cmd->callback([o] { eval(*o); });
}

}  // namespace cli
