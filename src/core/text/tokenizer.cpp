// Byte-level BPE tokenizer (GPT-2 scheme, Qwen2 pre-tokenizer) and the
// Hugging Face tokenizer.json importer.
#include "core/text/tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#if defined(STRATA_HAVE_ZLIB)
#include <zlib.h>
#endif

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/text/pretokenize.h"
#include "core/text/unicode.h"

namespace strata::core {

namespace {

// GPT-2's reversible byte <-> code point mapping: printable Latin-1 bytes
// map to themselves, the other 68 bytes to U+0100.. in byte order, so that
// every token is printable text with no spaces.
struct ByteAlphabet {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<int16_t, 324> cp_to_byte{};  // -1: not in the alphabet

  ByteAlphabet() {
    cp_to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_to_cp[b] = printable ? uint32_t(b) : next++;
      cp_to_byte[byte_to_cp[b]] = int16_t(b);
    }
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet a;
  return a;
}

// The bytes a byte-level token stands for. A character outside the
// alphabet (not produced by real byte-level vocabularies) is kept as its
// own UTF-8, so decoding never fails.
std::string byte_level_to_bytes(std::string_view piece) {
  const ByteAlphabet& a = byte_alphabet();
  std::string out;
  out.reserve(piece.size());
  for (std::size_t pos = 0; pos < piece.size();) {
    const Utf8Char c = utf8_decode(piece, pos);
    if (c.cp < a.cp_to_byte.size() && a.cp_to_byte[c.cp] >= 0) {
      out.push_back(char(a.cp_to_byte[c.cp]));
    } else {
      out.append(piece.substr(pos, c.len));
    }
    pos += c.len;
  }
  return out;
}

// Merge ranks keyed by the (left id, right id) pair: open addressing with
// linear probing, sized to at most half full.
class MergeTable {
 public:
  struct Entry {
    uint64_t key;
    int32_t rank;   // -1: empty slot
    int32_t result;
  };

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    slots_.assign(cap, Entry{0, -1, -1});
    mask_ = cap - 1;
  }

  // Keeps the first (lowest-rank) entry of a pair listed twice.
  void insert(int32_t left, int32_t right, int32_t rank, int32_t result) {
    const uint64_t key = make_key(left, right);
    for (std::size_t i = hash(key);; i = (i + 1) & mask_) {
      Entry& e = slots_[i];
      if (e.rank < 0) { e = {key, rank, result}; return; }
      if (e.key == key) return;
    }
  }

  const Entry* find(int32_t left, int32_t right) const {
    const uint64_t key = make_key(left, right);
    for (std::size_t i = hash(key);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.rank < 0) return nullptr;
      if (e.key == key) return &e;
    }
  }

 private:
  static uint64_t make_key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  std::size_t hash(uint64_t key) const { return std::size_t((key * 0x9E3779B97F4A7C15ull) >> 17) & mask_; }

  std::vector<Entry> slots_;
  std::size_t mask_ = 0;
};

struct SpecialToken {
  std::string text;
  int32_t id;
  bool control;
};

// Per-word BPE results, shared by all threads: words repeat a lot in real
// text, and a lookup is far cheaper than the merge loop. Sharded to keep
// lock contention low; a full shard is simply cleared.
class WordCache {
 public:
  static constexpr std::size_t kMaxWordBytes = 48;

  bool get(std::string_view word, std::vector<int32_t>& out) const {
    Shard& s = shard(word);
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto it = s.map.find(word);
    if (it == s.map.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void put(std::string_view word, std::span<const int32_t> ids) const {
    Shard& s = shard(word);
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.map.size() >= kShardCapacity) s.map.clear();
    s.map.emplace(std::string(word), std::vector<int32_t>(ids.begin(), ids.end()));
  }

 private:
  static constexpr std::size_t kShards = 16;
  static constexpr std::size_t kShardCapacity = 4096;

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map;
  };

  Shard& shard(std::string_view word) const { return shards_[Hash{}(word) % kShards]; }

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace

struct Tokenizer::Impl {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> bytes;  // token_bytes() of each id
  std::unordered_map<std::string_view, int32_t> by_piece;  // views into `tokens`
  std::array<int32_t, 256> byte_ids{};
  MergeTable merges;
  std::vector<SpecialToken> specials;
  std::array<std::vector<uint32_t>, 256> specials_by_first_byte;  // longest first
  int32_t bos = -1, eos = -1, pad = -1;
  bool add_bos = false;
  std::size_t longest_bpe = 1;  // bytes of the longest token BPE can make
  WordCache cache;

  void bpe(std::string_view word, std::vector<int32_t>& out) const;
  // Appends the ids of text; stops once out holds more than `limit` (see encode()).
  void encode_plain(std::string_view text, std::vector<int32_t>& out, std::size_t limit) const;
  // Ids of text, or limit + 1 ids of no meaning once it needs more than
  // `limit`; control_ok(pos, len) says whether a control token may be matched
  // at [pos, pos + len).
  template <class ControlOk>
  std::vector<int32_t> encode(std::string_view text, ControlOk control_ok, std::size_t limit) const;
  void check_id(int32_t id) const {
    if (id < 0 || std::size_t(id) >= tokens.size()) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "token id {} out of range [0, {})", id, tokens.size());
    }
  }
};

Tokenizer::Tokenizer(Vocab vocab) : impl_(std::make_unique<Impl>()) {
  if (vocab.model != "gpt2") {
    fail(STRATA_ERR_UNSUPPORTED, "tokenizer model \"{}\" not supported (only \"gpt2\" byte-level BPE)", vocab.model);
  }
  if (vocab.pre != "qwen2") {
    fail(STRATA_ERR_UNSUPPORTED, "pre-tokenizer \"{}\" not supported (only \"qwen2\")", vocab.pre);
  }
  Impl& m = *impl_;
  const std::size_t n = vocab.tokens.size();
  if (n == 0 || n > std::size_t(INT32_MAX)) fail(STRATA_ERR_FORMAT, "tokenizer: vocabulary size {} invalid", n);
  if (vocab.token_types.empty()) vocab.token_types.assign(n, kTokenNormal);
  if (vocab.token_types.size() != n) {
    fail(STRATA_ERR_FORMAT, "tokenizer: {} token types for {} tokens", vocab.token_types.size(), n);
  }
  for (const auto& [name, id] : {std::pair{"bos", vocab.bos_id}, std::pair{"eos", vocab.eos_id},
                                 std::pair{"pad", vocab.pad_id}, std::pair{"unk", vocab.unk_id}}) {
    if (id < -1 || id >= int64_t(n)) fail(STRATA_ERR_FORMAT, "tokenizer: {} id {} out of range", name, id);
  }
  m.tokens = std::move(vocab.tokens);
  m.types = std::move(vocab.token_types);
  m.bos = vocab.bos_id;
  m.eos = vocab.eos_id;
  m.pad = vocab.pad_id;
  m.add_bos = vocab.add_bos;

  m.bytes.resize(n);
  m.by_piece.reserve(n);
  for (std::size_t id = 0; id < n; ++id) {
    const int32_t type = m.types[id];
    if (type < kTokenNormal || type > kTokenByte) fail(STRATA_ERR_FORMAT, "tokenizer: token {} has type {}", id, type);
    const bool literal = type == kTokenControl || type == kTokenUserDefined || type == kTokenUnused;
    m.bytes[id] = literal ? m.tokens[id] : byte_level_to_bytes(m.tokens[id]);
    if (!literal) m.longest_bpe = std::max(m.longest_bpe, m.bytes[id].size());
    m.by_piece.emplace(m.tokens[id], int32_t(id));  // keeps the lowest id
    if ((type == kTokenControl || type == kTokenUserDefined) && !m.tokens[id].empty()) {
      m.specials.push_back({m.tokens[id], int32_t(id), type == kTokenControl});
    }
  }

  const ByteAlphabet& alphabet = byte_alphabet();
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8_append(ch, alphabet.byte_to_cp[b]);
    const auto it = m.by_piece.find(ch);
    if (it == m.by_piece.end()) fail(STRATA_ERR_FORMAT, "tokenizer: no token for byte 0x{:02X} (\"{}\")", b, ch);
    m.byte_ids[b] = it->second;
  }

  m.merges.reserve(vocab.merges.size());
  std::string joined;
  for (std::size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& merge = vocab.merges[rank];
    const std::size_t space = merge.find(' ');
    if (space == std::string::npos || merge.find(' ', space + 1) != std::string::npos) {
      fail(STRATA_ERR_FORMAT, "tokenizer: merge {} \"{}\" is not two tokens separated by one space", rank, merge);
    }
    const std::string_view left = std::string_view(merge).substr(0, space);
    const std::string_view right = std::string_view(merge).substr(space + 1);
    joined.assign(left).append(right);
    const auto l = m.by_piece.find(left), r = m.by_piece.find(right), j = m.by_piece.find(joined);
    if (l == m.by_piece.end() || r == m.by_piece.end() || j == m.by_piece.end()) {
      fail(STRATA_ERR_FORMAT, "tokenizer: merge {} \"{}\" names a token missing from the vocabulary", rank, merge);
    }
    m.merges.insert(l->second, r->second, int32_t(rank), j->second);
  }

  for (uint32_t i = 0; i < m.specials.size(); ++i) {
    m.specials_by_first_byte[static_cast<unsigned char>(m.specials[i].text[0])].push_back(i);
  }
  for (auto& list : m.specials_by_first_byte) {
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return m.specials[a].text.size() > m.specials[b].text.size(); });
  }
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

// Merges the lowest-ranked adjacent pair until none is left, ties going to
// the leftmost pair: the order of Hugging Face's BPE, whose result equals
// GPT-2's. A min-heap of candidate pairs keeps long words O(n log n); stale
// entries are recognized by their rank no longer matching the pair.
void Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>& out) const {
  const std::size_t n = word.size();
  if (n == 1) {
    out.push_back(byte_ids[static_cast<unsigned char>(word[0])]);
    return;
  }
  const bool cacheable = n <= WordCache::kMaxWordBytes;
  if (cacheable && cache.get(word, out)) return;

  struct Candidate {
    int32_t rank;
    int32_t pos;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<int32_t> ids, next, prev;
  thread_local std::vector<Candidate> heap;
  ids.resize(n);
  next.resize(n);
  prev.resize(n);
  heap.clear();
  for (std::size_t i = 0; i < n; ++i) {
    ids[i] = byte_ids[static_cast<unsigned char>(word[i])];
    next[i] = i + 1 < n ? int32_t(i + 1) : -1;
    prev[i] = int32_t(i) - 1;
  }
  auto push = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const MergeTable::Entry* e = merges.find(ids[pos], ids[next[pos]])) {
      heap.push_back({e->rank, pos});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  };
  for (std::size_t i = 0; i + 1 < n; ++i) push(int32_t(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Candidate c = heap.back();
    heap.pop_back();
    if (ids[c.pos] < 0 || next[c.pos] < 0) continue;
    const int32_t right = next[c.pos];
    const MergeTable::Entry* e = merges.find(ids[c.pos], ids[right]);
    if (!e || e->rank != c.rank) continue;  // the pair changed since it was queued
    ids[c.pos] = e->result;
    ids[right] = -1;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }

  const std::size_t first = out.size();
  for (int32_t i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
  if (cacheable) cache.put(word, std::span<const int32_t>(out).subspan(first));
  // A huge word (a megabyte without a space) should not pin its scratch
  // memory in every thread that ever saw one.
  if (n > (1u << 16)) {
    ids = {};
    next = {};
    prev = {};
    heap = {};
  }
}

void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& out, std::size_t limit) const {
  for (std::size_t pos = 0; pos < text.size() && out.size() <= limit;) {
    const std::size_t end = qwen2_match_end(text, pos);
    // A word needs at least this many tokens: one too long for the limit is not merged at all.
    const std::size_t at_least = (end - pos + longest_bpe - 1) / longest_bpe;
    if (limit != SIZE_MAX && at_least > limit - out.size()) {
      out.resize(limit + 1);
      return;
    }
    bpe(text.substr(pos, end - pos), out);
    pos = end;
  }
}

// Ids of text; control_ok(pos, len) says whether a control token may be
// matched at [pos, pos + len). Added tokens are cut out of the raw text
// first, so the pre-tokenizer regex never sees them.
template <class ControlOk>
std::vector<int32_t> Tokenizer::Impl::encode(std::string_view text, ControlOk control_ok, std::size_t limit) const {
  std::vector<int32_t> out;
  out.reserve(std::min(text.size() / 3, limit) + 4);
  std::size_t plain_start = 0;
  for (std::size_t pos = 0; pos < text.size() && out.size() <= limit;) {
    const SpecialToken* hit = nullptr;
    for (const uint32_t i : specials_by_first_byte[static_cast<unsigned char>(text[pos])]) {
      const SpecialToken& s = specials[i];
      if ((!s.control || control_ok(pos, s.text.size())) && text.substr(pos, s.text.size()) == s.text) {
        hit = &s;
        break;
      }
    }
    if (!hit) {
      ++pos;
      continue;
    }
    encode_plain(text.substr(plain_start, pos - plain_start), out, limit);
    if (out.size() > limit) break;
    out.push_back(hit->id);
    pos += hit->text.size();
    plain_start = pos;
  }
  if (out.size() <= limit) encode_plain(text.substr(plain_start), out, limit);
  if (out.size() > limit) out.resize(limit + 1);
  return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special, std::size_t max_tokens) const {
  return impl_->encode(text, [parse_special](std::size_t, std::size_t) { return parse_special; }, max_tokens);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, std::span<const TextRange> control,
                                       std::size_t max_tokens) const {
  for (std::size_t i = 0; i < control.size(); ++i) {
    const TextRange& r = control[i];
    if (r.begin > r.end || r.end > text.size() || (i > 0 && r.begin < control[i - 1].end)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "control range {} [{}, {}) is out of order or past the text's {} bytes", i,
           r.begin, r.end, text.size());
    }
  }
  // Positions only grow, so one cursor walks the ranges.
  std::size_t next = 0;
  return impl_->encode(text, [&](std::size_t pos, std::size_t len) {
    while (next < control.size() && control[next].end <= pos) ++next;
    return next < control.size() && control[next].begin <= pos && pos + len <= control[next].end;
  }, max_tokens);
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (const int32_t id : ids) {
    impl_->check_id(id);
    out += impl_->bytes[id];
  }
  return out;
}

std::string_view Tokenizer::piece(int32_t id) const {
  impl_->check_id(id);
  return impl_->tokens[id];
}

std::string Tokenizer::token_bytes(int32_t id) const {
  impl_->check_id(id);
  return impl_->bytes[id];
}

int32_t Tokenizer::n_vocab() const { return int32_t(impl_->tokens.size()); }

int32_t Tokenizer::token_type(int32_t id) const {
  impl_->check_id(id);
  return impl_->types[id];
}

bool Tokenizer::is_control(int32_t id) const { return token_type(id) == kTokenControl; }
int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
int32_t Tokenizer::pad() const { return impl_->pad; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }

std::optional<int32_t> Tokenizer::find(std::string_view piece) const {
  const auto it = impl_->by_piece.find(piece);
  if (it == impl_->by_piece.end()) return std::nullopt;
  return it->second;
}

// ---------------------------------------------------------------------------
// Hugging Face tokenizer.json importer.

namespace {

std::string read_file(const std::string& path) {
  const bool gz = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
#if defined(STRATA_HAVE_ZLIB)
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) fail(STRATA_ERR_IO, "cannot open {}", path);
    std::string out;
    std::array<char, 1 << 16> buf;
    for (;;) {
      const int got = gzread(f, buf.data(), unsigned(buf.size()));
      if (got < 0) {
        int code = 0;
        const std::string why = gzerror(f, &code);
        gzclose(f);
        fail(STRATA_ERR_IO, "cannot decompress {}: {}", path, why);
      }
      if (got == 0) break;
      out.append(buf.data(), std::size_t(got));
    }
    gzclose(f);
    return out;
#else
    fail(STRATA_ERR_UNSUPPORTED, "cannot read {}: built without zlib, decompress it first", path);
#endif
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(STRATA_ERR_IO, "cannot open {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(STRATA_ERR_IO, "cannot read {}", path);
  return std::move(ss).str();
}

std::string_view type_of(const Json& j) {
  const Json* t = j.find("type");
  return t && t->is_string() ? std::string_view(t->as_string()) : std::string_view();
}

bool flag(const Json& j, std::string_view key, bool fallback) {
  const Json* v = j.find(key);
  return v && v->is_bool() ? v->as_bool() : fallback;
}

// The pre-tokenizer must be Qwen2's: Split(regex, Isolated) then ByteLevel
// without its own regex, in a Sequence.
void check_pre_tokenizer(const Json& pre, const std::string& path) {
  auto unsupported = [&](std::string_view why) {
    fail(STRATA_ERR_UNSUPPORTED, "{}: pre_tokenizer not supported ({}); only the Qwen2 Split + ByteLevel is", path, why);
  };
  if (type_of(pre) != "Sequence") unsupported("not a Sequence");
  const Json::Array& steps = pre.at("pretokenizers").as_array();
  if (steps.size() != 2 || type_of(steps[0]) != "Split" || type_of(steps[1]) != "ByteLevel") {
    unsupported("expected [Split, ByteLevel]");
  }
  const Json* regex = steps[0].at("pattern").find("Regex");
  if (!regex || !regex->is_string() || regex->as_string() != kQwen2Pattern) unsupported("split regex is not Qwen2's");
  const Json* behavior = steps[0].find("behavior");
  if (!behavior || !behavior->is_string() || behavior->as_string() != "Isolated" || flag(steps[0], "invert", false)) {
    unsupported("split must be Isolated, not inverted");
  }
  if (flag(steps[1], "add_prefix_space", false) || flag(steps[1], "use_regex", true)) {
    unsupported("ByteLevel must have add_prefix_space=false, use_regex=false");
  }
}

void check_model(const Json& model, const std::string& path) {
  if (type_of(model) != "BPE") fail(STRATA_ERR_UNSUPPORTED, "{}: model type \"{}\" not supported (only BPE)", path, type_of(model));
  if (flag(model, "byte_fallback", false)) fail(STRATA_ERR_UNSUPPORTED, "{}: BPE byte_fallback not supported", path);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* v = model.find(key);
    if (v && v->is_string() && !v->as_string().empty()) fail(STRATA_ERR_UNSUPPORTED, "{}: BPE {} not supported", path, key);
  }
}

// Id of a token named in tokenizer_config.json: a string, {"content": ...} or null.
int32_t config_token_id(const Json& config, const char* key, const std::vector<std::string>& tokens,
                        const std::string& path) {
  const Json* v = config.find(key);
  if (!v || v->is_null()) return -1;
  const std::string& text = v->is_object() ? v->at("content").as_string() : v->as_string();
  // Search from the end: special tokens are the added ones at the top.
  for (std::size_t i = tokens.size(); i-- > 0;) {
    if (tokens[i] == text) return int32_t(i);
  }
  fail(STRATA_ERR_FORMAT, "{}: {} \"{}\" is not a token", path, key, text);
}

}  // namespace

Vocab load_hf_tokenizer(const std::string& path) {
  const Json root = parse_json(read_file(path));
  const Json& model = root.at("model");
  check_model(model, path);
  check_pre_tokenizer(root.at("pre_tokenizer"), path);
  if (const Json* norm = root.find("normalizer"); norm && !norm->is_null() && type_of(*norm) != "NFC") {
    // NFC is accepted but deliberately not applied (see Tokenizer).
    fail(STRATA_ERR_UNSUPPORTED, "{}: normalizer \"{}\" not supported", path, type_of(*norm));
  }
  if (const Json* dec = root.find("decoder"); dec && !dec->is_null() && type_of(*dec) != "ByteLevel") {
    fail(STRATA_ERR_UNSUPPORTED, "{}: decoder \"{}\" not supported (only ByteLevel)", path, type_of(*dec));
  }

  // Ids beyond this are treated as corrupt rather than allocated.
  constexpr int64_t kMaxId = 1 << 24;
  struct Entry { const std::string* text; int32_t type; };
  std::vector<Entry> slots;
  auto place = [&](int64_t id, const std::string& text, int32_t type) {
    if (id < 0 || id >= kMaxId) fail(STRATA_ERR_FORMAT, "{}: token id {} out of range", path, id);
    if (std::size_t(id) >= slots.size()) slots.resize(std::size_t(id) + 1, Entry{nullptr, kTokenUnused});
    slots[std::size_t(id)] = {&text, type};
  };
  const Json::Object& vocab = model.at("vocab").as_object();
  for (const Json::Member& e : vocab) {
    const int64_t id = e.value.as_int();
    if (std::size_t(id) < slots.size() && slots[std::size_t(id)].text) {
      fail(STRATA_ERR_FORMAT, "{}: token id {} used twice in model.vocab", path, id);
    }
    place(id, e.key, kTokenNormal);
  }
  // Added tokens may repeat a vocabulary id; their own text and type win.
  if (const Json* added = root.find("added_tokens")) {
    for (const Json& t : added->as_array()) {
      // GGUF has no field for these, so a file that needs them cannot be honoured.
      for (const char* key : {"lstrip", "rstrip", "single_word"}) {
        if (flag(t, key, false)) {
          fail(STRATA_ERR_UNSUPPORTED, "{}: added token \"{}\" uses {}, not supported", path,
               t.at("content").as_string(), key);
        }
      }
      place(t.at("id").as_int(), t.at("content").as_string(),
            flag(t, "special", false) ? kTokenControl : kTokenUserDefined);
    }
  }

  Vocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  v.tokens.reserve(slots.size());
  v.token_types.reserve(slots.size());
  for (std::size_t id = 0; id < slots.size(); ++id) {
    v.tokens.push_back(slots[id].text ? *slots[id].text : fmt::format("[PAD{}]", id));
    v.token_types.push_back(slots[id].type);
  }

  // Merges come as "a b" strings (older files) or [a, b] pairs (tokenizers >= 0.20).
  const Json::Array& merges = model.at("merges").as_array();
  v.merges.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const Json& mj = merges[i];
    if (mj.is_string()) {
      v.merges.push_back(mj.as_string());
      continue;
    }
    const Json::Array& pair = mj.as_array();
    if (pair.size() != 2) fail(STRATA_ERR_FORMAT, "{}: merge {} is not a pair", path, i);
    const std::string& a = pair[0].as_string();
    const std::string& b = pair[1].as_string();
    // GGUF joins the pair with a space, so a space inside one cannot be stored.
    if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos) {
      fail(STRATA_ERR_FORMAT, "{}: merge {} has a token containing a space", path, i);
    }
    v.merges.push_back(a + ' ' + b);
  }

  if (const Json* unk = model.find("unk_token"); unk && unk->is_string()) {
    if (const Json* id = model.at("vocab").find(unk->as_string())) v.unk_id = int32_t(id->as_int());
  }

  const std::filesystem::path config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) {
    const std::string cpath = config_path.string();
    const Json config = parse_json(read_file(cpath));
    v.eos_id = config_token_id(config, "eos_token", v.tokens, cpath);
    v.pad_id = config_token_id(config, "pad_token", v.tokens, cpath);
    v.bos_id = config_token_id(config, "bos_token", v.tokens, cpath);
    v.add_bos = flag(config, "add_bos_token", false);
  }
  return v;
}

}  // namespace strata::core
