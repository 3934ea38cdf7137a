// strata-server's TextStream: UTF-8 repair by the maximal-subpart rule, stop strings, and the same text
// however the bytes are split into tokens.
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "text_stream.h"

using server::TextStream;
using server::Utf8Decoder;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string decode_at_once(const std::string& bytes) {
  Utf8Decoder d;
  std::string out = d.push(bytes);
  return out + d.finish();
}

// The client's text when the bytes come in the given pieces.
std::string stream_text(const std::vector<std::string>& pieces, const std::vector<std::string>& stops, bool* stopped) {
  TextStream s(stops);
  std::string out;
  for (const std::string& p : pieces) {
    const bool stop = s.push(p);
    out += s.take();
    if (stop) break;
  }
  s.finish();
  out += s.take();
  *stopped = s.stopped();
  return out;
}

std::vector<std::string> split_randomly(const std::string& bytes, std::mt19937& rng) {
  std::vector<std::string> pieces;
  std::uniform_int_distribution<size_t> len(1, 4);
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = std::min(len(rng), bytes.size() - i);
    pieces.push_back(bytes.substr(i, n));
    i += n;
  }
  return pieces;
}

}  // namespace

TEST_CASE("valid UTF-8 passes through unchanged", "[server]") {
  const std::string text = "plain, Grüße, 世界, 🎉";
  CHECK(decode_at_once(text) == text);
}

TEST_CASE("ill-formed UTF-8 becomes one U+FFFD per maximal subpart", "[server]") {
  // The examples of Unicode 15 §3.9 (Table 3-8) and what WHATWG decoders (Node, browsers) produce.
  CHECK(decode_at_once("\x80") == kFffd);
  CHECK(decode_at_once("\xC0\xAF") == kFffd + kFffd);              // overlong lead
  CHECK(decode_at_once("\xE0\x80\xAF") == kFffd + kFffd + kFffd);  // E0 needs A0..BF next
  CHECK(decode_at_once("\xED\xA0\x80") == kFffd + kFffd + kFffd);  // surrogate
  CHECK(decode_at_once("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  CHECK(decode_at_once("\xE4\xB8" "A") == kFffd + "A");             // a truncated character is one U+FFFD
  CHECK(decode_at_once("\xF0\x9F\x8E") == kFffd);                   // truncated at the end
  CHECK(decode_at_once("a\xFF" "b") == "a" + kFffd + "b");
}

TEST_CASE("a character split over pushes is held back until complete", "[server]") {
  Utf8Decoder d;
  CHECK(d.push("x\xF0\x9F") == "x");
  CHECK(d.push("\x8E") == "");
  CHECK(d.push("\x89!") == "\xF0\x9F\x8E\x89!");
  CHECK(d.finish() == "");
}

TEST_CASE("stop strings cut the text at their first occurrence", "[server]") {
  bool stopped = false;
  CHECK(stream_text({"Hello", " wor", "ld. More"}, {"world"}, &stopped) == "Hello ");
  CHECK(stopped);
  CHECK(stream_text({"ab", "cd"}, {"x", "cd", "bc"}, &stopped) == "a");  // the earliest match wins
  CHECK(stopped);
  CHECK(stream_text({"no stop ", "here"}, {"zzz"}, &stopped) == "no stop here");
  CHECK_FALSE(stopped);
  CHECK(stream_text({"ends with a partial st"}, {"stop"}, &stopped) == "ends with a partial st");  // released at the end
  CHECK_FALSE(stopped);
  CHECK(stream_text({"empty stops ", "are ignored"}, {""}, &stopped) == "empty stops are ignored");
}

TEST_CASE("text that may begin a stop string is held back, then released", "[server]") {
  TextStream s({"STOP"});
  s.push("abc ST");
  CHECK(s.take() == "abc ");
  s.push("ART");
  CHECK(s.take() == "START");
  CHECK_FALSE(s.stopped());
}

TEST_CASE("the text is the same however the bytes are split", "[server]") {
  std::mt19937 rng(Catch::rngSeed());
  std::uniform_int_distribution<int> byte(0, 255), pick(0, 9);
  const std::vector<std::string> stops = {"\xE4\xB8\x96", "zq", "\xF0\x9F\x8E\x89!"};
  for (int round = 0; round < 500; ++round) {
    // Mostly valid text with stray bytes, partial characters and now and then a stop string.
    std::string bytes;
    for (int i = 0; i < 40; ++i) {
      const int k = pick(rng);
      if (k < 5) bytes += static_cast<char>('a' + byte(rng) % 26);
      else if (k == 5) bytes += "\xE4\xB8\x96";
      else if (k == 6) bytes += static_cast<char>(byte(rng));
      else if (k == 7) bytes += "\xF0\x9F\x8E";
      else if (k == 8) bytes += "\xF0\x9F\x8E\x89";
      else bytes += "z";
    }
    bool whole_stopped = false, split_stopped = false;
    const std::string whole = stream_text({bytes}, stops, &whole_stopped);
    const std::string split = stream_text(split_randomly(bytes, rng), stops, &split_stopped);
    INFO("round " << round);
    CHECK(split == whole);
    CHECK(split_stopped == whole_stopped);
    const std::string decoded = decode_at_once(bytes);
    // Without a stop the text is the whole decoded text; with one, a prefix of it that holds no stop string.
    CHECK(decoded.compare(0, whole.size(), whole) == 0);
    for (const std::string& stop : stops) CHECK(whole.find(stop) == std::string::npos);
    if (!whole_stopped) CHECK(whole == decoded);
  }
}
