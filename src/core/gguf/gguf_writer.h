// GgufWriter: builds GGUF v2/v3 files, with tensor data filled in parallel into an mmap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf.h"

namespace strata::core {

// Collects metadata and tensor descriptions, then lays out and writes a file
// that GgufFile (and llama.cpp) read: header, metadata, tensor infos, padding
// to the alignment, then each tensor at an aligned offset, in the order added.
// The alignment is `general.alignment` when set, else 32. Not thread-safe;
// write() itself runs `fill` on several threads.
class GgufWriter {
 public:
  // Fills the bytes of tensor `tensor_index` (as returned by add_tensor);
  // `dst` is exactly the tensor's size. Called at most once per tensor, from
  // several threads at once for different tensors. May throw; write() then
  // removes the partial file and rethrows.
  using FillFn = std::function<void(size_t tensor_index, std::span<uint8_t> dst)>;

  // Where everything goes; computed from what was added.
  struct Layout {
    std::vector<uint8_t> header;     // magic .. last tensor info, unpadded
    uint64_t data_offset = 0;        // header size aligned up
    std::vector<uint64_t> offsets;   // each tensor's offset within the data section
    uint64_t file_size = 0;          // data section padded to the alignment
  };

  // `version` is 3 (current) or 2 (same layout; still common in the wild).
  explicit GgufWriter(uint32_t version = 3);

  // Sets a metadata entry. A key set again keeps its first position and takes
  // the new value. Error(STRATA_ERR_INVALID_ARGUMENT) for an empty key.
  void set(std::string key, GgufValue value);
  const std::vector<GgufKv>& metadata() const { return metadata_; }

  // Adds a tensor whose bytes are held here (small tensors, tests). `dims`
  // are ne[0] (row length) first, 1 to 4 of them, each > 0; `type` is a GGUF
  // type id; `bytes` must be exactly the tensor's size. Returns its index.
  // Error(STRATA_ERR_INVALID_ARGUMENT) naming the tensor for any violation.
  size_t add_tensor(std::string name, const std::vector<int64_t>& dims, uint32_t type, std::vector<uint8_t> bytes);
  // Adds a tensor whose bytes come from write()'s `fill` callback.
  size_t add_tensor(std::string name, const std::vector<int64_t>& dims, uint32_t type);

  size_t tensor_count() const { return tensors_.size(); }
  uint64_t tensor_size(size_t index) const { return tensors_.at(index).n_bytes; }
  uint64_t alignment() const;
  Layout layout() const;

  // Writes the file: creates `path`.partial at its final size (space reserved,
  // so a full disk fails here), maps it, writes header and held tensors,
  // calls `fill` for the other tensors on `threads` threads (largest first),
  // then renames it to `path`. On any failure the partial file is removed.
  // Errors: STRATA_ERR_IO naming the path (create, space, rename),
  // STRATA_ERR_INVALID_ARGUMENT (a tensor without bytes and no `fill`),
  // or whatever `fill` threw.
  void write(const std::string& path, const FillFn& fill = {}, unsigned threads = 1) const;
  // The file write(path) writes before renaming it to `path`.
  static std::string partial_path(const std::string& path) { return path + ".partial"; }

  // The whole file in memory. Every tensor must hold its bytes.
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    uint32_t n_dims = 0;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    uint32_t type = 0;
    uint64_t n_bytes = 0;
    std::optional<std::vector<uint8_t>> bytes;
  };

  size_t add(std::string name, const std::vector<int64_t>& dims, uint32_t type,
             std::optional<std::vector<uint8_t>> bytes);

  uint32_t version_;
  std::vector<GgufKv> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace strata::core
