// The C++ API over the C ABI: same results as the C loop bit for bit, sessions on several threads, errors as exceptions.
#include <cstring>
#include <filesystem>
#include <thread>
#include <unistd.h>

#include "catch.hpp"
#include "strata/strata.hpp"

namespace {

// A model file of this process (ctest runs test cases as parallel processes), removed at exit.
struct TempModel {
  std::string path;
  TempModel() {
    path = (std::filesystem::temp_directory_path() / ("strata-cpp-api-tiny-" + std::to_string(::getpid()) + ".gguf"))
               .string();
    strata_synth_params sp;
    strata_synth_params_init(&sp);
    sp.n_layer = 2;
    sp.seed = 5;
    strata::detail::check(strata_synth_write(&sp, path.c_str()));
  }
  ~TempModel() { std::filesystem::remove(path); }
};

const std::string& tiny_model() {
  static const TempModel model;
  return model.path;
}

struct Trace {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // every step's logits, concatenated
};

// Greedy generation through the raw C functions.
Trace generate_c(const std::vector<int32_t>& prompt, int n) {
  Trace t;
  strata_model_params mp;
  strata_model_params_init(&mp);
  mp.devices = "cpu";
  strata_model* m = nullptr;
  REQUIRE(strata_model_load(tiny_model().c_str(), &mp, &m) == STRATA_OK);
  strata_session_params sp;
  strata_session_params_init(&sp);
  sp.n_ctx = 128;
  strata_session* s = nullptr;
  REQUIRE(strata_session_new(m, &sp, &s) == STRATA_OK);
  strata_sampler* g = nullptr;
  REQUIRE(strata_sampler_new(nullptr, &g) == STRATA_OK);
  REQUIRE(strata_session_prompt(s, prompt.data(), prompt.size()) == STRATA_OK);
  for (int i = 0; i < n; ++i) {
    const float* l = nullptr;
    int32_t nv = 0;
    REQUIRE(strata_session_logits(s, &l, &nv) == STRATA_OK);
    t.logits.insert(t.logits.end(), l, l + nv);
    int32_t tok = -1;
    REQUIRE(strata_session_sample(s, g, &tok) == STRATA_OK);
    t.tokens.push_back(tok);
    REQUIRE(strata_session_decode(s, tok, nullptr) == STRATA_OK);
  }
  strata_sampler_free(g);
  strata_session_free(s);
  strata_model_free(m);
  return t;
}

Trace generate_cpp(const strata::Model& model, const std::vector<int32_t>& prompt, int n, const strata::SamplerParams& sp = {}) {
  Trace t;
  auto session = model.new_session({.n_ctx = 128});
  strata::Sampler sampler(sp);
  session.prompt(prompt);
  for (int i = 0; i < n; ++i) {
    const auto l = session.logits();
    t.logits.insert(t.logits.end(), l.begin(), l.end());
    const int32_t tok = session.sample(sampler);
    t.tokens.push_back(tok);
    session.decode(tok);
  }
  return t;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("C ABI loop and C++ loop give bit-identical logits and tokens") {
  const auto model = strata::Model::load(tiny_model(), {.devices = "cpu"});
  const std::vector<int32_t> prompt = model.tokenize("The quick brown fox jumps over the lazy dog.");
  const Trace c = generate_c(prompt, 12);
  const Trace cpp = generate_cpp(model, prompt, 12);
  CHECK(c.tokens == cpp.tokens);
  CHECK(bit_equal(c.logits, cpp.logits));
}

TEST_CASE("4 sessions on 2 threads each equal their single-threaded result") {
  const auto model = strata::Model::load(tiny_model(), {.devices = "cpu", .n_threads = 1});
  const std::vector<std::string> texts = {"One fish, two fish.", "Red fish, blue fish!", "In a galaxy far away",
                                          "def main():\n    return 0\n"};
  const strata::SamplerParams sampling{.temperature = 0.8f, .top_k = 40, .seed = 3};
  std::vector<Trace> alone;
  for (const auto& t : texts) alone.push_back(generate_cpp(model, model.tokenize(t), 10, sampling));

  std::vector<Trace> threaded(texts.size());
  std::vector<std::thread> threads;
  for (int th = 0; th < 2; ++th)
    threads.emplace_back([&, th] {
      for (size_t i = th; i < texts.size(); i += 2) threaded[i] = generate_cpp(model, model.tokenize(texts[i]), 10, sampling);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO("session " << i);
    CHECK(alone[i].tokens == threaded[i].tokens);
    CHECK(bit_equal(alone[i].logits, threaded[i].logits));
  }
}

TEST_CASE("errors become strata::Error with the status and message") {
  try {
    strata::Model::load("/nonexistent/model.gguf", {.devices = "cpu"});
    FAIL("no exception");
  } catch (const strata::Error& e) {
    CHECK(e.status() == STRATA_ERR_IO);
    CHECK(std::string(e.what()).find("/nonexistent/model.gguf") != std::string::npos);
  }
  const auto model = strata::Model::load(tiny_model(), {.devices = "cpu"});
  auto session = model.new_session({.n_ctx = 8});
  const std::vector<int32_t> too_long(9, 1);
  try {
    session.prompt(too_long);
    FAIL("no exception");
  } catch (const strata::Error& e) {
    CHECK(e.status() == STRATA_ERR_CONTEXT_FULL);
  }
  CHECK(session.n_past() == 0);
}

TEST_CASE("cancel from the progress callback stops a prompt between chunks") {
  const auto model = strata::Model::load(tiny_model(), {.devices = "cpu"});
  int calls = 0;
  auto session = model.new_session({.n_ctx = 64, .chunk_size = 8, .progress = [&](uint64_t, uint64_t) {
                                      return ++calls < 2;
                                    }});
  const std::vector<int32_t> prompt(32, 7);
  try {
    session.prompt(prompt);
    FAIL("no exception");
  } catch (const strata::Error& e) {
    CHECK(e.status() == STRATA_ABORTED);
  }
  CHECK(session.n_past() == 16);  // two finished chunks stay
  session.decode(3);              // the session is still usable
  CHECK(session.n_past() == 17);
}
