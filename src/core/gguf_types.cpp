// The table of GGUF tensor types: id, name, elements per block, bytes per block.
#include "core/gguf_types.h"

#include <array>

namespace strata::core {
namespace {

// Block sizes are the GGUF ones (ggml's block_* structs), so a size computed
// here is the exact number of bytes a tensor occupies in the file.
constexpr int64_t QK_K = 256;
constexpr std::array kTypes = {
    GgufTypeInfo{0, "F32", 1, 4},
    GgufTypeInfo{1, "F16", 1, 2},
    GgufTypeInfo{2, "Q4_0", 32, 2 + 16},
    GgufTypeInfo{3, "Q4_1", 32, 2 + 2 + 16},
    GgufTypeInfo{6, "Q5_0", 32, 2 + 4 + 16},
    GgufTypeInfo{7, "Q5_1", 32, 2 + 2 + 4 + 16},
    GgufTypeInfo{8, "Q8_0", 32, 2 + 32},
    GgufTypeInfo{9, "Q8_1", 32, 2 + 2 + 32},
    GgufTypeInfo{10, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4},
    GgufTypeInfo{11, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12},
    GgufTypeInfo{12, "Q4_K", QK_K, 2 + 2 + 12 + QK_K / 2},
    GgufTypeInfo{13, "Q5_K", QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2},
    GgufTypeInfo{14, "Q6_K", QK_K, 2 + QK_K / 16 + QK_K / 4 + QK_K / 2},
    GgufTypeInfo{15, "Q8_K", QK_K, 4 + QK_K + QK_K / 16 * 2},
    GgufTypeInfo{16, "IQ2_XXS", QK_K, 2 + QK_K / 4},
    GgufTypeInfo{17, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32},
    GgufTypeInfo{18, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8},
    GgufTypeInfo{19, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16},
    GgufTypeInfo{20, "IQ4_NL", 32, 2 + 16},
    GgufTypeInfo{21, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4},
    GgufTypeInfo{22, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16},
    GgufTypeInfo{23, "IQ4_XS", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2},
    GgufTypeInfo{24, "I8", 1, 1},
    GgufTypeInfo{25, "I16", 1, 2},
    GgufTypeInfo{26, "I32", 1, 4},
    GgufTypeInfo{27, "I64", 1, 8},
    GgufTypeInfo{28, "F64", 1, 8},
    GgufTypeInfo{29, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32},
    GgufTypeInfo{30, "BF16", 1, 2},
    GgufTypeInfo{34, "TQ1_0", QK_K, 2 + 4 * 13},
    GgufTypeInfo{35, "TQ2_0", QK_K, 2 + QK_K / 4},
    GgufTypeInfo{39, "MXFP4", 32, 1 + 16},
};

}  // namespace

const GgufTypeInfo* gguf_type_info(uint32_t id) {
  for (const GgufTypeInfo& t : kTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const char* gguf_type_name(uint32_t id) {
  const GgufTypeInfo* t = gguf_type_info(id);
  return t ? t->name : "unknown";
}

}  // namespace strata::core
