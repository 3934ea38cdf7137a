// strata make-model, strata inspect and strata dequantize: synthetic models, what is inside a GGUF file, F32 copies.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>

#include "common.h"

namespace cli {
namespace {

struct MakeOptions {
  std::string shape = "tiny", quant = "q4_k", quant_mix, vocab = "small", out;
  int32_t layers = 0, threads = 0;
  uint64_t seed = 1;
  float skew = 1.0f;
};

void make_model(const MakeOptions& o) {
  strata_synth_params p;
  strata_synth_params_init(&p);
  p.shape = o.shape.c_str();
  p.n_layer = o.layers;
  p.quant = o.quant.c_str();
  p.quant_mix = o.quant_mix.c_str();
  p.vocab = o.vocab.c_str();
  p.seed = o.seed;
  p.router_skew = o.skew;
  p.n_threads = o.threads;
  p.progress = [](uint64_t d, uint64_t t, void*) { return progress_bar("writing", d, t) ? 0 : 1; };
  strata::detail::check(strata_synth_write(&p, o.out.c_str()));
  fmt::print(stderr, "wrote {}\n", o.out);
}

struct InspectOptions {
  std::string file;
  int32_t routing = 0;
  std::string save_profile;  // write the routing run's counts here (for --expert-profile)
  EngineOptions engine;
};

// Per layer: how many experts a random prompt of n tokens routes to, and the
// busiest expert's share of the routed slots (routing collapse shows here).
void routing_report(const InspectOptions& o) {
  const auto model = strata::Model::load(o.file, o.engine.model_params(true));
  const auto& info = model.info();
  strata::SessionParams sp = o.engine.session_params(false);
  sp.n_ctx = o.routing;
  auto session = model.new_session(sp);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, info.n_vocab - 1);
  std::vector<int32_t> tokens(o.routing);
  for (int32_t& t : tokens) t = pick(rng);
  session.prompt(tokens);
  const std::vector<uint64_t> counts = session.expert_counts();
  if (!o.save_profile.empty()) {
    std::ofstream out(o.save_profile);
    for (int32_t l = 0; l < info.n_layer; ++l)
      for (int32_t e = 0; e < info.n_expert; ++e)
        out << counts[static_cast<size_t>(l) * info.n_expert + e] << (e + 1 == info.n_expert ? '\n' : ' ');
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", o.save_profile));
  }
  fmt::print("routing of a random {}-token prompt ({} experts, top-{}):\n", o.routing, info.n_expert, info.n_expert_used);
  fmt::print("{:>6} {:>12} {:>14}\n", "layer", "experts used", "busiest share");
  for (int32_t l = 0; l < info.n_layer; ++l) {
    uint64_t used = 0, busiest = 0, total = 0;
    for (int32_t e = 0; e < info.n_expert; ++e) {
      const uint64_t c = counts[static_cast<size_t>(l) * info.n_expert + e];
      used += c > 0;
      busiest = std::max(busiest, c);
      total += c;
    }
    fmt::print("{:>6} {:>12} {:>13.2f}%\n", l, used, total ? 100.0 * busiest / total : 0.0);
  }
}

struct DequantizeOptions {
  std::string in, out;
  int32_t threads = 0;
};

void dequantize(const DequantizeOptions& o) {
  strata::detail::check(strata_dequantize_file(o.in.c_str(), o.out.c_str(), o.threads));
  fmt::print("wrote {}\n", o.out);
}

void inspect(const InspectOptions& o) {
  char* text = nullptr;
  strata::detail::check(strata_inspect_file(o.file.c_str(), &text));
  std::unique_ptr<void, strata::detail::Free> owner(text);
  std::fputs(text, stdout);
  if (o.routing > 0) routing_report(o);
}

}  // namespace

void add_tools(CLI::App& app) {
  auto m = std::make_shared<MakeOptions>();
  CLI::App* mk = app.add_subcommand("make-model", "Write a synthetic qwen3moe GGUF model (random weights)");
  mk->add_option("--shape", m->shape, "tiny, qwen3-30b-a3b or qwen3-235b-a22b");
  mk->add_option("--layers", m->layers, "Number of layers (default: the shape's)");
  mk->add_option("--quant", m->quant,
                 "Type of the big matrices: q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, iq4_nl, iq3_xxs, iq3_s, iq2_xxs, "
                 "iq2_xs, iq2_s, iq1_s, iq1_m, mxfp4, nvfp4, q4_0, q4_1, q5_0, q5_1, q1_0, q2_0, q8_0, f16, bf16, f32");
  mk->add_option("--quant-mix", m->quant_mix,
                 "Per-tensor types over --quant, as llama-quantize's --tensor-type: PATTERN=TYPE,... (PATTERN: a "
                 "regex searched in the tensor name, first match wins; e.g. 'ffn_down_exps=q5_1,attn=q8_0')");
  mk->add_option("--vocab", m->vocab, "small, qwen3, or a path to a tokenizer.json");
  mk->add_option("--seed", m->seed, "Random seed");
  mk->add_option("--router-skew", m->skew, "Zipf exponent of expert popularity (0 = uniform)");
  mk->add_option("-t,--threads", m->threads, "Writer threads (default: all)");
  mk->add_option("-o,--output", m->out, "Output file")->required();
  mk->callback([m] { make_model(*m); });

  auto i = std::make_shared<InspectOptions>();
  CLI::App* in = app.add_subcommand("inspect", "Show what is inside a GGUF file");
  in->add_option("file", i->file, "GGUF file")->required();
  in->add_option("--routing", i->routing, "Also run a random N-token prompt and report expert usage per layer");
  in->add_option("--save-profile", i->save_profile,
                 "With --routing: write its routed rows per (layer, expert) to FILE (for --expert-profile)");
  i->engine.add_to(*in);
  in->callback([i] { inspect(*i); });

  auto d = std::make_shared<DequantizeOptions>();
  CLI::App* dq = app.add_subcommand("dequantize", "Copy a GGUF file with its quantized tensors as F32 (exact)");
  dq->add_option("-m,--model", d->in, "GGUF file")->required();
  dq->add_option("-t,--threads", d->threads, "Writer threads (default: all)");
  dq->add_option("-o,--output", d->out, "Output file")->required();
  dq->callback([d] { dequantize(*d); });
}

}  // namespace cli
