// The small test vocabulary: byte tokens plus BPE merges learned from a fixed text.
#include "core/text/small_vocab.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "core/base/error.h"
#include "core/text/pretokenize.h"
#include "core/text/unicode.h"

namespace strata::core {

const char* const kSmallVocabText =
    "The library runs large mixture-of-experts language models on graphics cards whose memory is far "
    "smaller than the model. The dense weights stay on the card, and the experts live in host memory; "
    "they are streamed over the PCIe link while the card computes, so the time of a long prompt is set "
    "by the bandwidth of the link and not by the size of the memory.\n\n"
    "When a prompt arrives, it is split into chunks of a few thousand tokens. For every layer the router "
    "picks eight of the one hundred and twenty-eight experts for each token, the tokens are grouped by "
    "expert, and the experts that the chunk needs are copied into a ring of slots on the card. While one "
    "slot is being computed, the next ones are being filled. If two cards are present, the second card "
    "can take a share of the experts and fetch them over its own link, which makes the whole prompt "
    "faster. The results are added back together in the order they would have had on one card, so the "
    "output doesn't change.\n\n"
    "Tests compare every path with a simple reference that runs on the processor: the same tokens must "
    "come out, and the logits must agree within a small bound. We've written the reference with plain "
    "loops and it's slow, but it's easy to read and easy to trust. A test that needs a model builds a "
    "synthetic one in a second or two: random weights with the real layout, 4 or 48 layers, 8 or 128 "
    "experts, and a vocabulary of 512 tokens, like this one.\n\n"
    "Numbers: 1, 2, 3, 10, 42, 100, 2048, 4096, 32768; 55 GB/s over PCIe Gen5 x16, 4.2 TB/s in HBM. "
    "Questions? Answers! (Parentheses), [brackets], {braces}, \"quotes\", 'single quotes', and "
    "so on... I'm sure you'll find they're all here; we'd like it if you've read this far.\n"
    "user\nWhat is the capital of France?\nassistant\n"
    "The capital of France is Paris. It has been the capital for a very long time, and it is known for "
    "its museums, its food and its river.\n";

namespace {

constexpr int kVocabSize = 512;
constexpr int kNormalTokens = 509;

// GPT-2's byte-to-unicode alphabet: printable Latin-1 bytes stand for
// themselves, the others map to U+0100.. in byte order.
std::vector<std::pair<int, uint32_t>> byte_alphabet() {
  std::vector<std::pair<int, uint32_t>> printable, other;
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool p = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    (p ? printable : other).emplace_back(b, p ? uint32_t(b) : next++);
  }
  printable.insert(printable.end(), other.begin(), other.end());  // GPT-2's id order
  return printable;
}

Vocab train_small_vocab() {
  Vocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  std::string byte_sym[256];
  for (const auto& [b, cp] : byte_alphabet()) {
    utf8_append(byte_sym[b], cp);
    v.tokens.push_back(byte_sym[b]);
  }

  // Words of the training text (pre-tokenized as the tokenizer will), each a
  // sequence of symbols with its count.
  std::vector<std::string_view> pieces;
  pretokenize_qwen2(kSmallVocabText, pieces);
  std::map<std::vector<std::string>, int64_t> word_count;
  for (std::string_view piece : pieces) {
    std::vector<std::string> syms;
    for (unsigned char c : piece) syms.push_back(byte_sym[c]);
    ++word_count[syms];
  }
  std::vector<std::pair<std::vector<std::string>, int64_t>> words(word_count.begin(), word_count.end());
  std::set<std::string> known(v.tokens.begin(), v.tokens.end());

  // BPE: merge the most frequent adjacent pair; ties go to the smallest pair
  // (std::map order), so the result is fixed.
  while (int(v.tokens.size()) < kNormalTokens) {
    std::map<std::pair<std::string, std::string>, int64_t> pair_count;
    for (const auto& [syms, count] : words)
      for (size_t i = 0; i + 1 < syms.size(); ++i) pair_count[{syms[i], syms[i + 1]}] += count;
    if (pair_count.empty()) fail(STRATA_ERR_INTERNAL, "small vocabulary: training text too short");
    auto best = pair_count.begin();
    for (auto it = pair_count.begin(); it != pair_count.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [left, right] = best->first;
    const std::string joined = left + right;
    v.merges.push_back(left + " " + right);
    if (known.insert(joined).second) v.tokens.push_back(joined);  // two pairs may spell one token
    for (auto& [syms, count] : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == left && syms[i + 1] == right) {
          out.push_back(joined);
          ++i;
        } else {
          out.push_back(syms[i]);
        }
      }
      syms = std::move(out);
    }
  }

  v.token_types.assign(v.tokens.size(), kTokenNormal);
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    v.tokens.emplace_back(special);
    v.token_types.push_back(kTokenControl);
  }
  v.bos_id = v.pad_id = kNormalTokens;  // <|endoftext|>
  v.eos_id = kNormalTokens + 2;         // <|im_end|>
  v.add_bos = false;
  static_assert(kNormalTokens + 3 == kVocabSize);
  return v;
}

}  // namespace

Vocab small_vocab() {
  static const Vocab trained = train_small_vocab();  // thread-safe, once per process
  return trained;
}

}  // namespace strata::core
