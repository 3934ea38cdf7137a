// Shared pieces of the strata CLI (engine options, size parsing, progress bar), also used by strata-server.
#include "common.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace cli {

void EngineOptions::add_to(CLI::App& app) {
  app.add_option("--devices", devices, "Logical devices: cpu, 0, 0,1, 0,0 (default: GPU 0 if present, else cpu)");
  app.add_option("--layer-split", layer_split, "Layer split over the devices: auto or counts like 24,24");
  app.add_option("--vram-budget", vram_budget, "VRAM budget per device, e.g. 12GiB (default: free memory minus a reserve)");
  app.add_option("--peer-device", peer_device, "Index of a peer device that takes a share of the streamed experts");
  app.add_option("-t,--threads", threads, "CPU threads (default: all)");
  app.add_option("--expert-profile", expert_profile,
                 "File of routed-row counts per (layer, expert), whitespace-separated (inspect --save-profile)");
  app.add_option("--adapt-swaps", adapt_swaps,
                 "Streamed experts swapped into VRAM per prompt by usage (adaptive residency; 0 disables)");
  app.add_option("--kv", kv, "KV cache type: f16 or int8")->check(CLI::IsMember({"f16", "int8"}));
  app.add_option("--chunk", chunk, "Prompt chunk size in tokens (default: the model's, 8192 or 2048, at most the context)");
  app.add_flag("--no-pipeline", no_pipeline, "With several stages, run one chunk at a time through all of them");
  app.add_option("--decode-cpu-share", decode_cpu_share,
                 "GPU decode with streamed experts: share computed on the CPU (default: from measured rates)");
  app.add_option("--peer-share", peer_share,
                 "With --peer-device: the peer's share of a chunk's streamed experts (default: cost model)");
  app.add_flag("--peer-f32", peer_f32, "With --peer-device: activations and sums cross as F32 (default FP16)");
  app.add_option("--peer-pieces", peer_pieces,
                 "With --peer-device: host-route transfers in K pieces (0 off, 1 = 8; STRATA_PF_PEER_PIECES)");
  app.add_flag("--no-helper", no_helper,
               "Layer split: idle stages do not help with one-chunk prompts (STRATA_PREFILL_HELP=0)");
  app.add_option("--helper-share", helper_share,
                 "Layer split: the helper's share (default min(0.45, 0.5 - T/16384), off below 0.3)");
  app.add_flag("--helper-exact", helper_exact, "Layer split: helped output equals unhelped bit for bit");
  app.add_option("-c,--ctx", ctx, "Context length (default: min(model, 4096))");
}

strata::ModelParams EngineOptions::model_params(bool bar) const {
  strata::ModelParams p;
  p.devices = devices;
  p.layer_split = layer_split;
  p.vram_budget = vram_budget.empty() ? 0 : strata::parse_size(vram_budget);
  p.peer_device = peer_device;
  p.adapt_swaps = adapt_swaps;
  if (!expert_profile.empty()) {
    std::istringstream in(read_file(expert_profile));
    uint64_t v = 0;
    while (in >> v) p.expert_profile.push_back(v);
    if (!in.eof()) throw std::runtime_error(fmt::format("'{}': not a list of counts", expert_profile));
  }
  p.n_threads = threads;
  if (bar) p.progress = [](uint64_t d, uint64_t t) { return progress_bar("loading", d, t); };
  return p;
}

strata::SessionParams EngineOptions::session_params(bool bar) const {
  strata::SessionParams p;
  p.n_ctx = ctx;
  p.kv = kv == "int8" ? strata::KvType::Int8 : strata::KvType::F16;
  p.chunk_size = chunk;
  p.pipeline = !no_pipeline;
  p.decode_cpu_share = decode_cpu_share;
  p.peer_share = peer_share;
  p.peer_f32 = peer_f32;
  p.peer_pieces = peer_pieces;
  p.helper = !no_helper;
  p.helper_share = helper_share;
  p.helper_exact = helper_exact;
  if (bar) p.progress = [](uint64_t d, uint64_t t) { return t < 4096 || progress_bar("prompt", d, t); };
  return p;
}

int32_t parse_positive(std::string_view text, const char* what) {
  int32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == text.data() + text.size() && value <= 0))
    throw std::invalid_argument(fmt::format("{}: '{}' is not in [1, {}]", what, text, INT32_MAX));
  if (ec != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(fmt::format("{}: '{}' is not a whole number", what, text));
  return value;
}

bool progress_bar(const char* label, uint64_t done, uint64_t total) {
  if (!isatty(STDERR_FILENO) || total == 0) return true;
  const int width = 40;
  const int filled = static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total));
  fmt::print(stderr, "\r{:>8} [{:<{}}] {:3.0f}%", label, std::string(filled, '#'), width, 100.0 * done / total);
  if (done >= total) fmt::print(stderr, "\r{:{}}\r", "", width + 20);
  std::fflush(stderr);
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot open '{}'", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cli
