// Synthetic qwen3moe GGUF models: real layout and metadata, random weights.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/text/tokenizer.h"

namespace strata::core {

struct SynthParams {
  std::string shape = "tiny";  // "tiny", "qwen3-30b-a3b", "qwen3-235b-a22b"
  int n_layer = 0;             // 0 = the shape's own
  std::string quant = "q4_k";  // any type of make-model's list (parse_type_name's names)
  // Per-tensor types over `quant`, as llama-quantize's --tensor-type: "PATTERN=TYPE,..." where PATTERN is an
  // ECMAScript regex searched in the tensor name; the first rule that matches a weight matrix (token_embd,
  // attention, experts, output) sets its type. Norms and routers stay F32. Empty = none.
  std::string quant_mix;
  std::string vocab = "small"; // "small", "qwen3" or a path to a tokenizer.json(.gz)
  uint64_t seed = 1;
  float router_skew = 1.0f;    // Zipf exponent of expert popularity; 0 = uniform
  int n_threads = 0;           // 0 = all hardware threads
  // Called from the calling thread with tensor bytes written so far; return
  // false to stop (the call then throws Error(STRATA_ABORTED), file removed).
  std::function<bool(uint64_t done, uint64_t total)> progress;
};

// Hyperparameters of a named shape (the qwen3moe metadata a real file carries).
struct SynthShape {
  std::string name;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;  // expert FFN width
  int64_t n_ff = 0;      // dense FFN width (metadata only: qwen3moe has no dense FFN)
  int64_t n_layer = 0;
  int64_t n_ctx = 0;
  float rope_base = 0;
  float rms_eps = 0;
};

// Throws Error(STRATA_ERR_INVALID_ARGUMENT) naming the known shapes.
SynthShape synth_shape(std::string_view name);

// The weight scales of a synthetic model (see the comment atop synth.cpp).
// Element standard deviations unless said otherwise.
struct SynthScales {
  float embd_rms;      // token_embd rows: RMS of a row
  float embd_shared;   // fraction c of each embedding along the shared direction (c^2 of its energy)
  float q_std, k_std, v_std, o_std;
  float gate_std, up_std, down_std;
  float router_noise;  // std of the token-dependent part of a router logit
  float output_std;
  float norm_jitter;   // norm weights are 1 + norm_jitter * N(0,1)-like noise
};
SynthScales synth_scales(const SynthShape& shape);

// Expected share of all expert assignments taken by the popularity rank k
// (0 = hottest) expert: proportional to (k+1)^-skew, capped at 1/n_used (an
// expert can be picked at most once per token), summing to 1.
std::vector<double> synth_target_shares(int64_t n_expert, int64_t n_used, float skew);

// Everything write_synthetic_model writes, row by row: the tensor list and
// the float value of every row before quantization, so tests can check
// scales and routing without writing (or reading back) a file. Immutable
// after construction; row() is safe from many threads.
class SynthModel {
 public:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;  // ne0 (row length) first
    uint32_t type;              // GGUF type id (GgmlType)
    int64_t n_rows;             // product of dims[1..]
  };

  // Validates the params and loads the vocabulary. Errors as for
  // write_synthetic_model, minus IO on the output.
  explicit SynthModel(const SynthParams& params);
  ~SynthModel();
  SynthModel(SynthModel&&) noexcept;
  SynthModel& operator=(SynthModel&&) noexcept;

  const SynthShape& shape() const;
  const Vocab& vocab() const;
  const std::vector<Tensor>& tensors() const;
  // Index of a tensor by name; Error(STRATA_ERR_INVALID_ARGUMENT) if absent.
  size_t tensor_index(std::string_view name) const;
  // Writes tensors()[tensor].dims[0] floats: row `row` before quantization.
  void row(size_t tensor, int64_t row, float* out) const;
  // Bytes of tensor data in the file (sum over tensors).
  uint64_t data_bytes() const;
  // Writes the GGUF file (to path.partial, then renamed; removed on failure).
  void write(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SynthModel(params).write(path). Errors: INVALID_ARGUMENT (shape, quant,
// n_layer, skew, threads), IO, FORMAT/IO from a vocabulary file, ABORTED.
void write_synthetic_model(const SynthParams& params, const std::string& path);

// Finds <data dir>/rel in: $STRATA_DATA_DIR, STRATA_BUILD_DATA_DIR,
// STRATA_INSTALL_DATA_DIR. Throws Error(STRATA_ERR_IO) listing the paths tried.
std::string find_data_file(const std::string& rel);

}  // namespace strata::core
