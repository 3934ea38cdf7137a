// Model files whose parts disagree are refused at load, naming what disagrees, rather than failing mid-generation.
#include <algorithm>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "catch.hpp"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/model/model.h"
#include "core/model/synth.h"
#include "error_checks.h"

using namespace strata::core;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf")).string();
}

// A copy of the GGUF at `from` whose tensors named in `grow` have `extra` more rows (copies of their first row).
void write_with_extra_rows(const std::string& from, const std::string& to, const std::vector<std::string>& grow,
                           int64_t extra) {
  const GgufFile f = GgufFile::open(from);
  GgufWriter w(f.version());
  for (const GgufKv& kv : f.metadata()) w.set(kv.key, kv.value);
  for (const GgufTensorInfo& t : f.tensors()) {
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (std::find(grow.begin(), grow.end(), t.name) != grow.end()) {
      const uint64_t row = t.n_bytes / static_cast<uint64_t>(t.ne[1]);
      for (int64_t r = 0; r < extra; ++r) bytes.insert(bytes.end(), t.data, t.data + row);
      dims[1] += extra;
    }
    w.add_tensor(t.name, dims, t.type, std::move(bytes));
  }
  w.write(to);
}

}  // namespace

TEST_CASE("model: an embedding and output head with more rows than the vocabulary are refused at load") {
  const std::string synth = temp_path("strata-model-checks");
  const std::string grown = temp_path("strata-model-checks-grown");
  SynthParams sp;
  sp.n_layer = 1;
  write_synthetic_model(sp, synth);
  ModelOptions mo;
  mo.devices = "cpu";
  const int32_t n_vocab = Model::load(synth, mo)->config().n_vocab;
  write_with_extra_rows(synth, grown, {"token_embd.weight", "output.weight"}, 64);
  CHECK_FAILS_WITH(Model::load(grown, mo), STRATA_ERR_FORMAT,
                   fmt::format("the vocabulary has {} tokens but token_embd.weight and the output head have {} rows",
                               n_vocab, n_vocab + 64));
  // The head alone: its shape no longer matches the embedding's.
  write_with_extra_rows(synth, grown, {"output.weight"}, 64);
  CHECK_FAILS_WITH(Model::load(grown, mo), STRATA_ERR_FORMAT, "output.weight");
  std::filesystem::remove(synth);
  std::filesystem::remove(grown);
}
