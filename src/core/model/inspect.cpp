// `strata inspect`: a readable report of what a GGUF file holds.
#include "core/model/inspect.h"

#include <fmt/format.h>

#include <map>

#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/model/arch.h"
#include "core/quant/quant.h"
#include "core/text/unicode.h"
#include "core/text/vocab_gguf.h"

namespace strata::core {
namespace {

std::string gb(uint64_t bytes) { return fmt::format("{:.3f} GB", bytes / 1e9); }

void append_config(std::string& out, const GgufFile& file) {
  try {
    const ModelConfig c = read_model_config(file);
    const RopeSpec& rope = c.layer(0).attention.rope;
    fmt::format_to(std::back_inserter(out),
                   "architecture: {}{}\n"
                   "  layers {}  embedding {}  heads {} (kv {})  head dim {}/{}  rope dims {}\n"
                   "  experts {} (top-{})  expert FFN {}  context {}  rms eps {:g}  rope base {:g}\n",
                   printable(c.arch_name), c.name.empty() ? "" : fmt::format(" ('{}')", printable(c.name)), c.n_layer,
                   c.n_embd, c.n_head, c.n_head_kv, c.head_dim_k, c.head_dim_v, rope.n_rot, c.n_expert, c.n_expert_used,
                   c.n_ff_exp, c.n_ctx_train, c.rms_eps, rope.freq_base);
  } catch (const Error& e) {
    fmt::format_to(std::back_inserter(out), "architecture: {} (not runnable: {})\n",
                   printable(file.get_string_or("general.architecture", "?")), printable(e.what()));
  }
}

void append_tensors(std::string& out, const GgufFile& file) {
  struct PerType {
    size_t count = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, PerType> by_type;
  std::map<int, uint64_t> expert_bytes_by_layer;
  uint64_t total = 0, experts = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    const TypeTraits* traits = find_type_traits(t.type);
    PerType& p = by_type[traits ? traits->name : fmt::format("type {}", t.type)];
    p.count += 1;
    p.bytes += t.n_bytes;
    total += t.n_bytes;
    int layer = -1;
    if (t.name.find("_exps.") != std::string::npos && std::sscanf(t.name.c_str(), "blk.%d.", &layer) == 1) {
      expert_bytes_by_layer[layer] += t.n_bytes;
      experts += t.n_bytes;
    }
  }
  fmt::format_to(std::back_inserter(out), "tensors: {} in {} (GGUF v{}, alignment {})\n", file.tensors().size(),
                 gb(total), file.version(), file.alignment());
  for (const auto& [name, p] : by_type)
    fmt::format_to(std::back_inserter(out), "  {:<6} {:>5} tensors  {}\n", name, p.count, gb(p.bytes));
  fmt::format_to(std::back_inserter(out), "routed experts: {}, dense: {}\n", gb(experts), gb(total - experts));
  if (!expert_bytes_by_layer.empty()) {
    const auto [lo, hi] = std::minmax_element(expert_bytes_by_layer.begin(), expert_bytes_by_layer.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
    fmt::format_to(std::back_inserter(out), "  per layer: {} layers, {} to {} of experts each\n",
                   expert_bytes_by_layer.size(), gb(lo->second), gb(hi->second));
  }
}

void append_tokenizer(std::string& out, const GgufFile& file) {
  if (!file.has("tokenizer.ggml.tokens")) {
    out += "tokenizer: none\n";
    return;
  }
  try {
    const Vocab v = vocab_from_gguf(file);
    size_t control = 0;
    for (int32_t t : v.token_types) control += t == 3;
    auto piece = [&](int32_t id) { return id >= 0 && id < static_cast<int32_t>(v.tokens.size()) ? v.tokens[id] : "-"; };
    fmt::format_to(std::back_inserter(out),
                   "tokenizer: {} / pre {}: {} tokens ({} control), {} merges; bos {} eos {} ({}) pad {} ({})\n",
                   printable(v.model), printable(v.pre), v.tokens.size(), control, v.merges.size(), v.bos_id, v.eos_id,
                   printable(piece(v.eos_id)), v.pad_id, printable(piece(v.pad_id)));
  } catch (const Error& e) {
    fmt::format_to(std::back_inserter(out), "tokenizer: unreadable ({})\n", printable(e.what()));
  }
}

}  // namespace

std::string inspect_file(const std::string& path) {
  const GgufFile file = GgufFile::open(path);
  // Strings from the file are printable(): the report goes to terminals.
  std::string out = fmt::format("file: {} ({})\n", printable(path), gb(file.bytes().size()));
  append_config(out, file);
  append_tensors(out, file);
  append_tokenizer(out, file);
  return out;
}

}  // namespace strata::core
