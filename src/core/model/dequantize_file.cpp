// write_dequantized: copies metadata and tensors through GgufWriter, dequantizing row by row into the mapped output.
#include "core/model/dequantize_file.h"

#include <algorithm>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/gguf/gguf.h"
#include "core/gguf/gguf_writer.h"
#include "core/quant/quant.h"

namespace strata::core {

namespace {

// Types copied unchanged: F32 itself, F64 and the integer types (no dequantizer needed).
bool kept_as_is(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::F32:
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64:
    case GgmlType::F64:
      return true;
    default:
      return false;
  }
}

}  // namespace

void write_dequantized(const std::string& in, const std::string& out, unsigned threads) {
  // Writing over the input (or over the name the writer gives its partial
  // file) would truncate the mapped file under the reader.
  std::error_code ec;
  for (const std::string& target : {out, GgufWriter::partial_path(out)}) {
    if (std::filesystem::equivalent(in, target, ec)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "dequantize: the output {} is the input file {}", target, in);
    }
  }
  const GgufFile src = GgufFile::open(in);
  const auto& tensors = src.tensors();
  for (const GgufTensorInfo& t : tensors) {
    const TypeTraits& traits = type_traits(static_cast<GgmlType>(t.type));
    if (!kept_as_is(t.type) && !traits.computable) {
      fail(STRATA_ERR_UNSUPPORTED, "dequantize: tensor {} of {} has type {}, which has no dequantizer here", t.name,
           in, traits.name);
    }
  }

  GgufWriter w(src.version());
  for (const GgufKv& kv : src.metadata()) w.set(kv.key, kv.value);
  w.set("general.file_type", GgufValue::u32(0));  // LLAMA_FTYPE_ALL_F32
  for (const GgufTensorInfo& t : tensors) {
    const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    w.add_tensor(t.name, dims, kept_as_is(t.type) ? t.type : static_cast<uint32_t>(GgmlType::F32));
  }

  const auto fill = [&](size_t index, std::span<uint8_t> dst) {
    const GgufTensorInfo& t = tensors[index];
    if (kept_as_is(t.type)) {
      std::copy(t.data, t.data + t.n_bytes, dst.begin());
      return;
    }
    const auto type = static_cast<GgmlType>(t.type);
    const size_t row_bytes = row_size(type, t.ne[0]);
    auto* y = reinterpret_cast<float*>(dst.data());
    for (int64_t r = 0; r < t.n_rows(); ++r) {
      dequantize_row(type, t.data + static_cast<size_t>(r) * row_bytes, y + r * t.ne[0], t.ne[0]);
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  w.write(out, fill, threads);
}

}  // namespace strata::core
