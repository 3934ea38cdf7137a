// The tensors of a layer by role, their kinds, and a layer's tensor list.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace strata::core {

// An architecture gives each layer's list (GGUF name, shape, optional). Binding reads the list; everything that
// walks a layer's weights afterwards (the stage partition, expert placement, each backend's upload) walks the
// roles bound from it, by kind.

// Named as llama.cpp's GGUF tensors are: role AttnQ is blk.N.attn_q.weight.
enum class TensorRole : uint8_t {
  AttnNorm,
  AttnQ,
  AttnK,
  AttnV,
  AttnOut,
  AttnQNorm,
  AttnKNorm,
  FfnNorm,
  FfnGateInp,
  FfnGateExps,
  FfnUpExps,
  FfnDownExps,
  Count
};

inline constexpr size_t kTensorRoles = static_cast<size_t>(TensorRole::Count);

enum class TensorKind : uint8_t {
  Vector,   // a norm weight or a bias: F32, F16 or BF16 in the file, F32 on every backend
  Matrix,   // a dense linear map [n_in, n_out]
  Router,   // the router's map [n_embd, n_expert]: dense, its logits kept in F32
  // A stack of routed experts [n_in, n_out, n_expert]: placed, streamed and lent one expert at a time. An
  // expert's blob (core/plan/expert_store) holds the gate, up and down stacks; another role of this kind needs
  // its place there.
  Experts,
};

TensorKind kind_of(TensorRole role);

// One tensor of a layer's list: blk.<layer>.<name>.
struct TensorSpec {
  TensorRole role = TensorRole::AttnNorm;
  std::string name;                    // "attn_q.weight"
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // the shape it must have, ne[0] the row length
  bool optional = false;               // bound when the file has it, left empty otherwise
};

// A layer's tensors in file order; an architecture's row builds it per layer, leaving out what the layer lacks.
class TensorList {
 public:
  void add(TensorRole role, std::string name, std::initializer_list<int64_t> ne, bool optional = false);
  const std::vector<TensorSpec>& specs() const { return specs_; }

 private:
  std::vector<TensorSpec> specs_;
};

}  // namespace strata::core
