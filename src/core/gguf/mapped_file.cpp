// POSIX implementation of MappedFile: open/fstat/mmap, and fallocate for new files.
#include "core/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "core/base/error.h"

namespace strata::core {
namespace {

[[noreturn]] void fail_errno(const char* what, const std::string& path, int err) {
  fail(STRATA_ERR_IO, "{} '{}': {}", what, path, std::strerror(err));
}

// Closes a descriptor unless released; keeps the error paths of open_read and
// create free of manual cleanup.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

MappedFile MappedFile::open_read(const std::string& path) {
  FdGuard fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail_errno("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) fail(STRATA_ERR_IO, "cannot map '{}': not a regular file", path);
  if (static_cast<uint64_t>(st.st_size) > std::numeric_limits<size_t>::max()) {
    fail(STRATA_ERR_IO, "cannot map '{}': {} bytes exceed the address space", path, st.st_size);
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) fail_errno("cannot mmap", path, errno);
    f.data_ = static_cast<uint8_t*>(p);
  }
  f.fd_ = fd.release();
  return f;
}

MappedFile MappedFile::create(const std::string& path, uint64_t size) {
  if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    fail(STRATA_ERR_IO, "cannot create '{}': size {} is too large", path, size);
  }
  FdGuard fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail_errno("cannot create", path, errno);
  if (size > 0) {
    // fallocate reserves the blocks now, so running out of space is reported
    // here; filesystems without it get a sparse file from ftruncate.
    if (::fallocate(fd.get(), 0, 0, static_cast<off_t>(size)) != 0) {
      const int err = errno;
      if (err != EOPNOTSUPP && err != ENOSYS) fail_errno("cannot allocate space for", path, err);
      if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) fail_errno("cannot size", path, errno);
    }
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(size);
  f.writable_ = true;
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) fail_errno("cannot mmap", path, errno);
    f.data_ = static_cast<uint8_t*>(p);
  }
  f.fd_ = fd.release();
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      writable_(std::exchange(other.writable_, false)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
    writable_ = std::exchange(other.writable_, false);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
  writable_ = false;
}

void MappedFile::close() {
  // Take the resources first so that a failure below still leaves this
  // object empty and the destructor has nothing left to do.
  uint8_t* data = std::exchange(data_, nullptr);
  const size_t size = std::exchange(size_, 0);
  const int fd = std::exchange(fd_, -1);
  writable_ = false;
  int err = 0;
  const char* what = nullptr;
  if (data != nullptr && ::munmap(data, size) != 0) {
    err = errno;
    what = "cannot unmap";
  }
  if (fd >= 0 && ::close(fd) != 0 && err == 0) {
    err = errno;
    what = "cannot close";
  }
  if (err != 0) fail_errno(what, path_, err);
}

}  // namespace strata::core
