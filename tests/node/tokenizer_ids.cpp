// Test helper: token ids of texts read as JSON on stdin, or (--bench) encode speed.
//   tokenizer_ids TOKENIZER_JSON < [{"text": "...", "parse_special": false}, ...]
//     prints [[ids...], ...] as JSON, one array per input text.
//   tokenizer_ids TOKENIZER_JSON --bench TEXT_FILE [REPEATS]
//     prints load time and encode throughput.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/text/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int bench(const strata::core::Tokenizer& tok, const char* file, int repeats) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", file);
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t n_tokens = 0;
  // CPU time too: on a shared machine wall time mostly measures the neighbours.
  const std::clock_t c0 = std::clock();
  const auto t0 = Clock::now();
  for (int i = 0; i < repeats; ++i) n_tokens = tok.encode(text, false).size();
  const double s = seconds_since(t0);
  const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  const double mb = double(text.size()) * repeats / 1e6;
  std::printf("encode: %.2f MB, %zu tokens per pass: wall %.3f s = %.1f MB/s, cpu %.3f s = %.1f MB/s\n", mb,
              n_tokens, s, mb / s, cpu, mb / cpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON [--bench TEXT_FILE [REPEATS]] < texts.json\n", argv[0]);
    return 2;
  }
  try {
    const auto t0 = Clock::now();
    const strata::core::Tokenizer tok(strata::core::load_hf_tokenizer(argv[1]));
    const double load_s = seconds_since(t0);
    if (argc >= 4 && std::string(argv[2]) == "--bench") {
      std::printf("load: %.3f s (%d tokens)\n", load_s, tok.n_vocab());
      return bench(tok, argv[3], argc >= 5 ? std::atoi(argv[4]) : 5);
    }
    std::stringstream ss;
    ss << std::cin.rdbuf();
    const strata::core::Json input = strata::core::parse_json(ss.str());
    std::string out = "[";
    bool first = true;
    for (const auto& item : input.as_array()) {
      const auto ids = tok.encode(item.at("text").as_string(), item.at("parse_special").as_bool());
      out += first ? "\n[" : ",\n[";
      first = false;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(ids[i]);
      }
      out += ']';
    }
    out += "\n]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_ids: %s\n", e.what());
    return 1;
  }
}
