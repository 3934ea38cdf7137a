// Layer split on the CPU backend: logical devices cpu,cpu,..., the pipeline, and split == unsplit bit for bit.
#include <cstring>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/model/model.h"
#include "core/model/synth.h"
#include "core/plan/stages.h"
#include "core/runtime/session.h"
#include "engine_fixtures.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

constexpr int kLayers = 4;

const std::string& model_path() {
  static const strata::test::TempModel model("stages", kLayers, 7);
  return model.path;
}

std::shared_ptr<const Model> load(const std::string& devices, const std::string& split) {
  ModelOptions o;
  o.devices = devices;
  o.layer_split = split;
  o.n_threads = 2;
  return Model::load(model_path(), o);
}

std::vector<int32_t> tokens_for(const Model& m, int n) { return strata::test::lcg_tokens(m.config().n_vocab, n, 777); }

struct Run {
  std::vector<float> logits;  // every prompt position, then each decoded step
  std::vector<uint64_t> counts;
};

// A prompt in chunks (logits of every position), then three decode steps.
Run run(std::shared_ptr<const Model> m, const std::vector<int32_t>& tokens, int chunk, bool pipeline) {
  SessionOptions o;
  o.n_ctx = 128;
  o.chunk_size = chunk;
  o.pipeline = pipeline;
  Session s(m, o);
  Run r;
  s.prompt(tokens, [&](int32_t pos, std::span<const float> l) {
    CHECK(static_cast<size_t>(pos) * l.size() == r.logits.size());
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    return true;
  });
  for (int32_t t : {3, 1, 4}) {
    const auto l = s.decode(t);
    r.logits.insert(r.logits.end(), l.begin(), l.end());
  }
  CHECK(s.n_past() == static_cast<int32_t>(tokens.size()) + 3);
  r.counts = s.expert_counts();
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("stages cover the layers in order, the first embeds, the last holds the head") {
  const auto m = load("cpu,cpu,cpu", "auto");
  const auto& st = m->stages();
  REQUIRE(st.size() == 3);
  int32_t next = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    CHECK(st[i].plan.first_layer == next);
    CHECK(st[i].plan.n_layers >= 1);
    CHECK(st[i].plan.has_embd == (i == 0));
    CHECK(st[i].plan.has_head == (i + 1 == st.size()));
    CHECK(st[i].device.is_cpu());
    next = st[i].plan.end_layer();
  }
  CHECK(next == kLayers);
  const auto counts = load("cpu,cpu", "1,3");
  CHECK(counts->stages()[0].plan.n_layers == 1);
  CHECK(counts->stages()[1].plan.first_layer == 1);
  // Without a split, extra devices add no stage.
  CHECK(load("cpu,cpu", "")->stages().size() == 1);
}

TEST_CASE("split equals unsplit bit for bit: 2, 3 and 4 stages, chunk sizes, with and without pipelining") {
  const auto whole = load("cpu", "");
  const auto tokens = tokens_for(*whole, 37);
  for (int chunk : {1, 5, 16, 37}) {
    const Run ref = run(whole, tokens, chunk, true);
    for (const auto& [devices, split] : std::vector<std::pair<std::string, std::string>>{
             {"cpu,cpu", "auto"}, {"cpu,cpu", "3,1"}, {"cpu,cpu,cpu", "auto"}, {"cpu,cpu,cpu,cpu", "auto"}}) {
      const auto m = load(devices, split);
      for (bool pipeline : {false, true}) {
        INFO("devices " << devices << " split " << split << " chunk " << chunk << " pipeline " << pipeline);
        const Run got = run(m, tokens, chunk, pipeline);
        CHECK(same_bits(got.logits, ref.logits));
        CHECK(got.counts == ref.counts);
      }
    }
  }
}

TEST_CASE("a prompt stopped in the pipeline keeps the delivered chunks and resumes exactly") {
  const auto m = load("cpu,cpu,cpu,cpu", "auto");
  const auto tokens = tokens_for(*m, 30);
  const Run ref = run(load("cpu", ""), tokens, 4, true);
  const size_t n_vocab = static_cast<size_t>(m->config().n_vocab);

  SessionOptions o;
  o.n_ctx = 128;
  o.chunk_size = 4;
  Session s(m, o);
  // Stops inside chunk 2 (positions 8..11): chunks 0..2 count as done.
  const auto status = status_of([&] { s.prompt(tokens, [](int32_t pos, std::span<const float>) { return pos < 10; }); });
  CHECK(status == STRATA_ABORTED);
  REQUIRE(s.n_past() == 12);
  std::vector<float> rest;
  s.prompt(std::span<const int32_t>(tokens).subspan(12), [&](int32_t pos, std::span<const float> l) {
    CHECK(static_cast<size_t>(pos - 12) * n_vocab == rest.size());
    rest.insert(rest.end(), l.begin(), l.end());
    return true;
  });
  const std::vector<float> want(ref.logits.begin() + 12 * n_vocab, ref.logits.begin() + 30 * n_vocab);
  CHECK(same_bits(rest, want));
}

TEST_CASE("a bad layer split is refused with a clear error") {
  CHECK(status_of([] { load("cpu,cpu,cpu", "2,2"); }) == STRATA_ERR_INVALID_ARGUMENT);  // 2 counts for 3 devices
  CHECK(status_of([] { load("cpu,cpu", "2,3"); }) == STRATA_ERR_INVALID_ARGUMENT);      // sums to 5 of 4 layers
  CHECK(status_of([] { load("cpu,cpu", "0,4"); }) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(status_of([] { load("cpu,cpu,cpu,cpu,cpu", "auto"); }) == STRATA_ERR_INVALID_ARGUMENT);  // 5 stages, 4 layers
  CHECK(status_of([] { load("cpu,cpu", "half"); }) == STRATA_ERR_INVALID_ARGUMENT);
}

TEST_CASE("stage budgets: the set budget, or a GPU's free memory shared by its logical devices") {
  const LogicalDevice cpu{}, gpu0{LogicalDevice::Kind::Cuda, 0}, gpu1{LogicalDevice::Kind::Cuda, 1};
  const uint64_t GiB = uint64_t(1) << 30;
  const auto b = stage_devices({gpu0, gpu0, gpu1, cpu}, 0, {20 * GiB, 8 * GiB}, 64 * GiB);
  REQUIRE(b.size() == 4);
  CHECK(b[0].budget == 9 * GiB);  // 20 / 2 less the 1 GiB reserve
  CHECK(b[1].budget == 9 * GiB);
  CHECK(b[2].budget == 7 * GiB);
  CHECK(b[3].budget == 64 * GiB);
  const auto set = stage_devices({gpu0, gpu0}, 12 * GiB, {20 * GiB}, 64 * GiB);
  CHECK(set[0].budget == 12 * GiB);
  CHECK(set[1].budget == 12 * GiB);
  CHECK(stage_devices({gpu0}, 0, {GiB / 2}, 0)[0].budget == 0);
}

TEST_CASE("partition input accounts every weight byte once, plus the KV per layer") {
  const auto m = load("cpu", "");
  const ModelConfig& c = m->config();
  const PartitionInput in = partition_input(c, m->weights());
  REQUIRE(in.layer_bytes.size() == kLayers);
  REQUIRE(in.layer_expert_bytes.size() == kLayers);
  const uint64_t kv = uint64_t(2) * std::min(c.n_ctx_train, kPlanContext) * c.n_head_kv * (c.head_dim_k + c.head_dim_v);
  uint64_t dense = in.embd_bytes + in.head_bytes, experts = 0;
  for (int l = 0; l < kLayers; ++l) {
    CHECK(in.layer_bytes[l] > kv);
    dense += in.layer_bytes[l] - kv;
    experts += in.layer_expert_bytes[l];
  }
  REQUIRE(m->weights().output.data != m->weights().token_embd.data);  // untied: each counted once
  CHECK(dense == m->weights().dense_bytes);
  CHECK(experts == m->weights().expert_bytes);
}
