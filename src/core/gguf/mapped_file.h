// RAII memory mapping of a whole file: read-only for loading, writable for creating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace strata::core {

// Owns a file descriptor and its mapping; unmaps and closes on destruction.
// Move-only. An empty file is valid and maps to an empty span.
class MappedFile {
 public:
  // Maps an existing regular file read-only (shared, so pages come from the
  // page cache and cost no copy). Throws Error(STRATA_ERR_IO) naming the path.
  static MappedFile open_read(const std::string& path);

  // Creates (or truncates) `path` with exactly `size` bytes, all zero, with
  // the disk space reserved up front, and maps it writable. Reserving the
  // space is what turns "disk full" into an error here instead of a SIGBUS
  // when a page is first written. Throws Error(STRATA_ERR_IO) naming the path.
  static MappedFile create(const std::string& path, uint64_t size);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Only for a file made by create(); empty otherwise.
  std::span<uint8_t> writable_bytes() { return writable_ ? std::span<uint8_t>{data_, size_} : std::span<uint8_t>{}; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Unmaps and closes now, reporting failures (a writer wants to know that
  // its file was closed cleanly). Written pages already belong to the file's
  // page cache; the kernel writes them back. The destructor does the same
  // but cannot report.
  void close();

 private:
  void release() noexcept;

  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  bool writable_ = false;
};

}  // namespace strata::core
