// strata bench: prefill and decode speed per prompt length, with per-phase times.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string_view>
#include <unistd.h>

#include "common.h"

namespace cli {
namespace {

struct BenchOptions {
  std::string model, make, prompts = "512,2048";
  int32_t gen = 32, repeat = 3;
  bool json = false;
  EngineOptions engine;
};

struct Run {
  double prefill_tps = 0, decode_tps = 0;
  strata::Stats stats{};  // after the prompt and the decode steps
};

std::vector<int32_t> parse_list(const std::string& s) {
  std::vector<int32_t> out;
  for (size_t pos = 0; pos <= s.size();) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    out.push_back(parse_positive(std::string_view(s).substr(pos, comma - pos), "--prompt"));
    pos = comma + 1;
  }
  return out;
}

// "--make qwen3-30b-a3b:8:q4_k" writes a synthetic model into a temporary folder.
std::string make_temp_model(const std::string& spec) {
  std::string shape = spec, layers = "0", quant = "q4_k";
  if (const size_t a = spec.find(':'); a != std::string::npos) {
    shape = spec.substr(0, a);
    const size_t b = spec.find(':', a + 1);
    layers = spec.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
    if (b != std::string::npos) quant = spec.substr(b + 1);
  }
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("strata-bench-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.gguf").string();
  strata_synth_params p;
  strata_synth_params_init(&p);
  p.shape = shape.c_str();
  p.n_layer = layers == "0" ? 0 : parse_positive(layers, "--make LAYERS");
  p.quant = quant.c_str();
  p.router_skew = 0.0f;  // uniform routing: every expert busy, the honest case for streaming
  p.progress = [](uint64_t d, uint64_t t, void*) { return progress_bar("making", d, t) ? 0 : 1; };
  strata::detail::check(strata_synth_write(&p, path.c_str()));
  return path;
}

Run run_once(const strata::Model& model, const BenchOptions& o, int32_t n_prompt, uint32_t seed) {
  strata::SessionParams sp = o.engine.session_params(false);
  sp.n_ctx = n_prompt + o.gen;
  auto session = model.new_session(sp);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, model.info().n_vocab - 1);
  std::vector<int32_t> tokens(n_prompt);
  for (int32_t& t : tokens) t = pick(rng);
  Run r;
  session.prompt(tokens);
  r.prefill_tps = n_prompt / (session.stats().prompt_ms / 1000.0);
  strata::Sampler greedy;
  int32_t tok = session.sample(greedy);
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < o.gen; ++i) {
    session.decode(tok);
    tok = session.sample(greedy);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.decode_tps = o.gen > 0 ? o.gen / s : 0.0;
  r.stats = session.stats();
  return r;
}

void bench(const BenchOptions& o) {
  if (o.model.empty() == o.make.empty()) throw std::invalid_argument("give exactly one of -m/--model and --make");
  const std::vector<int32_t> prompts = parse_list(o.prompts);
  const std::string path = o.make.empty() ? o.model : make_temp_model(o.make);
  const auto model = strata::Model::load(path, o.engine.model_params(!o.json));
  const auto& info = model.info();
  if (!o.json)
    fmt::print("model: {} ({} layers, {} experts top-{}, {:.2f} GB experts, {:.2f} GB dense), backend {}\n",
               path, info.n_layer, info.n_expert, info.n_expert_used, info.expert_bytes / 1e9, info.dense_bytes / 1e9,
               info.backend);
  if (!o.json && info.n_experts_streamed > 0)
    fmt::print("experts: {} resident, {} streamed ({:.2f} GB), pinned host-to-device link {:.1f} GB/s\n",
               info.n_experts_resident, info.n_experts_streamed, info.streamed_bytes / 1e9, info.link_gbps);
  std::string json = "[";
  for (int32_t n : prompts) {
    run_once(model, o, std::min(n, 64), 7);  // warm-up: page-in, allocations
    std::vector<Run> runs;
    for (int32_t i = 0; i < o.repeat; ++i) runs.push_back(run_once(model, o, n, 100 + i));
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.prefill_tps < b.prefill_tps; });
    const Run& med = runs[runs.size() / 2];
    std::vector<double> dec;
    for (const Run& r : runs) dec.push_back(r.decode_tps);
    std::sort(dec.begin(), dec.end());
    const strata::Stats& s = med.stats;
    // Decode phases per step (all zero when the steps replay one CUDA graph).
    const double steps = std::max<int64_t>(1, s.decode_tokens);
    const double d_att = s.decode_attention_ms / steps, d_route = s.decode_routing_ms / steps,
                 d_group = s.decode_grouping_ms / steps, d_wait = s.decode_stream_wait_ms / steps,
                 d_exp = s.decode_expert_ms / steps, d_comb = s.decode_combine_ms / steps;
    // The link floor: the prompt cannot take less than its streamed bytes over the measured link.
    const double floor_ms = info.link_gbps > 0 ? s.bytes_streamed / (info.link_gbps * 1e6) : 0.0;
    const double of_floor = floor_ms > 0 ? floor_ms / s.prompt_ms : 0.0;
    if (o.json) {
      json += fmt::format(
          "{}{{\"prompt\":{},\"gen\":{},\"prefill_tps\":{:.2f},\"decode_tps\":{:.2f},\"prompt_ms\":{:.3f},"
          "\"attention_ms\":{:.3f},\"routing_ms\":{:.3f},\"grouping_ms\":{:.3f},\"stream_wait_ms\":{:.3f},"
          "\"expert_ms\":{:.3f},\"combine_ms\":{:.3f},\"transfer_ms\":{:.3f},\"other_ms\":{:.3f},\"bytes_streamed\":{},"
          "\"link_floor_ms\":{:.3f},\"of_floor\":{:.4f},\"vram_bytes\":{},\"peer_share\":{:.4f},"
          "\"peer_predicted_alone_ms\":{:.3f},\"peer_predicted_ms\":{:.3f},\"decode_step_attention_ms\":{:.4f},"
          "\"decode_step_routing_ms\":{:.4f},\"decode_step_grouping_ms\":{:.4f},\"decode_step_stream_wait_ms\":{:.4f},"
          "\"decode_step_expert_ms\":{:.4f},\"decode_step_combine_ms\":{:.4f},\"decode_step_bytes_streamed\":{:.0f}}}",
          json.size() > 1 ? "," : "", n, o.gen, med.prefill_tps, dec[dec.size() / 2], s.prompt_ms, s.attention_ms,
          s.routing_ms, s.grouping_ms, s.stream_wait_ms, s.expert_ms, s.combine_ms, s.transfer_ms, s.other_ms,
          s.bytes_streamed, floor_ms, of_floor, info.device_bytes + s.device_bytes, s.peer_share,
          s.peer_predicted_alone_ms, s.peer_predicted_ms, d_att, d_route, d_group, d_wait, d_exp, d_comb,
          s.decode_bytes_streamed / steps);
    } else {
      fmt::print("prompt {:>6}: prefill {:>9.1f} tok/s   decode {:>7.2f} tok/s   (median of {})   VRAM {:.2f} GiB\n", n,
                 med.prefill_tps, dec[dec.size() / 2], o.repeat, (info.device_bytes + s.device_bytes) / 1073741824.0);
      fmt::print("    phases ms: attention {:.1f}  routing {:.1f}  grouping {:.1f}  stream-wait {:.1f}  experts {:.1f}  "
                 "combine {:.1f}  transfer {:.1f}  other {:.1f}\n",
                 s.attention_ms, s.routing_ms, s.grouping_ms, s.stream_wait_ms, s.expert_ms, s.combine_ms,
                 s.transfer_ms, s.other_ms);
      if (d_att + d_route + d_group + d_wait + d_exp + d_comb > 0)
        fmt::print("    decode step ms: attention {:.3f}  routing {:.3f}  grouping {:.3f}  stream-wait {:.3f}  "
                   "experts {:.3f}  combine {:.3f}  streamed {:.1f} MB\n",
                   d_att, d_route, d_group, d_wait, d_exp, d_comb, s.decode_bytes_streamed / steps / 1e6);
      if (floor_ms > 0)
        fmt::print("    streamed {:.2f} GB: link floor {:.1f} ms, achieved {:.0f}% of the floor\n", s.bytes_streamed / 1e9,
                   floor_ms, 100 * of_floor);
      if (s.peer_share > 0)
        fmt::print("    shared with a peer (share up to {:.2f}): the cost model predicts {:.1f} ms alone, {:.1f} ms "
                   "with a second card ({:+.0f}%)\n",
                   s.peer_share, s.peer_predicted_alone_ms, s.peer_predicted_ms,
                   100 * (s.peer_predicted_alone_ms / s.peer_predicted_ms - 1));
    }
  }
  if (o.json) fmt::print("{}]\n", json);
  if (!o.make.empty()) std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace

void add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode speed");
  cmd->add_option("-m,--model", o->model, "GGUF model file");
  cmd->add_option("--make", o->make, "Make a synthetic model first: SHAPE:LAYERS:QUANT, e.g. tiny:4:q4_k");
  cmd->add_option("--prompt", o->prompts, "Prompt lengths, comma-separated");
  cmd->add_option("--gen", o->gen, "Tokens to decode after each prompt")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--repeat", o->repeat, "Timed runs per length (median reported)")->check(CLI::Range(1, 100));
  cmd->add_flag("--json", o->json, "Print JSON");
  o->engine.add_to(*cmd);
  cmd->callback([o] { bench(*o); });
}

}  // namespace cli
