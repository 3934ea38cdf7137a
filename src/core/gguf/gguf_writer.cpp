// GgufWriter: header serialization, layout, and the parallel mmap file writer.
#include "core/gguf/gguf_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/gguf/mapped_file.h"
#include "core/quant/quant.h"

namespace strata::core {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;

// Appends little-endian fields; the host is little-endian (checked in gguf.cpp).
class Sink {
 public:
  explicit Sink(std::vector<uint8_t>& out) : out_(out) {}

  template <typename T>
  void put(T v) {
    put_bytes(&v, sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    // resize + memcpy rather than insert: GCC 12 misreports small inserts
    // as overflows (-Wstringop-overflow).
    const size_t at = out_.size();
    out_.resize(at + n);
    if (n > 0) std::memcpy(out_.data() + at, p, n);
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }

  void put_value(const GgufValue& value) {
    std::visit([&](const auto& v) { put_payload(v); }, value.payload());
  }

 private:
  template <typename V>
  void put_payload(const V& v) {
    if constexpr (std::is_same_v<V, std::string>) put_string(v);
    else if constexpr (std::is_same_v<V, GgufArray>) put_array(v);
    else if constexpr (std::is_same_v<V, bool>) put<uint8_t>(v ? 1 : 0);
    else put<V>(v);
  }

  void put_array(const GgufArray& a) {
    put<uint32_t>(static_cast<uint32_t>(a.index()));
    std::visit(
        [&](const auto& elems) {
          using E = typename std::decay_t<decltype(elems)>::value_type;
          put<uint64_t>(elems.size());
          if constexpr (std::is_same_v<E, GgufValue>) {
            for (const GgufValue& e : elems) put_value(e);
          } else if constexpr (std::is_same_v<E, std::string>) {
            for (const std::string& e : elems) put_string(e);
          } else if constexpr (std::is_same_v<E, bool>) {
            for (const bool e : elems) put<uint8_t>(e ? 1 : 0);
          } else {
            put_bytes(elems.data(), elems.size() * sizeof(E));
          }
        },
        a);
  }

  std::vector<uint8_t>& out_;
};

uint64_t align_up(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

// Removes the partial file unless the write got to the end.
class PartialFile {
 public:
  explicit PartialFile(std::string path) : path_(std::move(path)) {}
  ~PartialFile() {
    if (!done_) ::unlink(path_.c_str());
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  const std::string& path() const { return path_; }
  void done() { done_ = true; }

 private:
  std::string path_;
  bool done_ = false;
};

}  // namespace

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: version {} is not supported (2 or 3)", version);
  }
}

void GgufWriter::set(std::string key, GgufValue value) {
  if (key.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: empty metadata key");
  for (GgufKv& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  metadata_.push_back(GgufKv{std::move(key), std::move(value)});
}

size_t GgufWriter::add_tensor(std::string name, const std::vector<int64_t>& dims, uint32_t type,
                              std::vector<uint8_t> bytes) {
  return add(std::move(name), dims, type, std::move(bytes));
}

size_t GgufWriter::add_tensor(std::string name, const std::vector<int64_t>& dims, uint32_t type) {
  return add(std::move(name), dims, type, std::nullopt);
}

size_t GgufWriter::add(std::string name, const std::vector<int64_t>& dims, uint32_t type,
                       std::optional<std::vector<uint8_t>> bytes) {
  if (name.empty()) fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: empty tensor name");
  for (const Tensor& t : tensors_) {
    if (t.name == name) fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' added twice", name);
  }
  if (dims.empty() || dims.size() > 4) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' has {} dims, expected 1..4", name, dims.size());
  }
  const TypeTraits* info = find_type_traits(type);
  if (info == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' has unknown type {}", name, type);
  Tensor t;
  t.n_dims = static_cast<uint32_t>(dims.size());
  uint64_t n_elements = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] <= 0) fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' ne[{}] = {}", name, d, dims[d]);
    if (__builtin_mul_overflow(n_elements, static_cast<uint64_t>(dims[d]), &n_elements) ||
        n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' element count overflows", name);
    }
    t.ne[d] = dims[d];
  }
  if (t.ne[0] % info->block_size != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' ne[0] = {} is not a multiple of the {} block size {}",
         name, t.ne[0], info->name, info->block_size);
  }
  const uint64_t rows = n_elements / static_cast<uint64_t>(t.ne[0]);
  if (__builtin_mul_overflow(static_cast<uint64_t>(t.ne[0] / info->block_size) * info->type_size, rows, &t.n_bytes)) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' byte size overflows", name);
  }
  if (bytes && bytes->size() != t.n_bytes) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' ({} {}) needs {} bytes, got {}", name, n_elements,
         info->name, t.n_bytes, bytes->size());
  }
  t.name = std::move(name);
  t.type = type;
  t.bytes = std::move(bytes);
  tensors_.push_back(std::move(t));
  return tensors_.size() - 1;
}

uint64_t GgufWriter::alignment() const {
  for (const GgufKv& kv : metadata_) {
    if (kv.key != "general.alignment") continue;
    const std::optional<uint32_t> a = kv.value.to_int<uint32_t>();
    if (!a || *a == 0 || !std::has_single_bit(*a)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: general.alignment = {} is not a nonzero power of two u32",
           kv.value.to_string());
    }
    return *a;
  }
  return kDefaultAlignment;
}

GgufWriter::Layout GgufWriter::layout() const {
  const uint64_t align = alignment();
  Layout l;
  Sink s(l.header);
  s.put<uint32_t>(kMagic);
  s.put<uint32_t>(version_);
  s.put<uint64_t>(tensors_.size());
  s.put<uint64_t>(metadata_.size());
  for (const GgufKv& kv : metadata_) {
    s.put_string(kv.key);
    s.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    s.put_value(kv.value);
  }
  uint64_t offset = 0;
  l.offsets.reserve(tensors_.size());
  for (const Tensor& t : tensors_) {
    s.put_string(t.name);
    s.put<uint32_t>(t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; ++d) s.put<uint64_t>(static_cast<uint64_t>(t.ne[d]));
    s.put<uint32_t>(t.type);
    s.put<uint64_t>(offset);
    l.offsets.push_back(offset);
    if (offset + t.n_bytes < offset || offset + t.n_bytes > std::numeric_limits<uint64_t>::max() - align) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: the data section overflows at tensor '{}'", t.name);
    }
    offset = align_up(offset + t.n_bytes, align);
  }
  l.data_offset = align_up(l.header.size(), align);
  l.file_size = l.data_offset + offset;
  return l;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  const Layout l = layout();
  std::vector<uint8_t> out(static_cast<size_t>(l.file_size), 0);
  std::memcpy(out.data(), l.header.data(), l.header.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    if (!t.bytes) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: to_bytes() needs the data of tensor '{}', added without bytes",
           t.name);
    }
    if (!t.bytes->empty()) std::memcpy(out.data() + l.data_offset + l.offsets[i], t.bytes->data(), t.bytes->size());
  }
  return out;
}

void GgufWriter::write(const std::string& path, const FillFn& fill, unsigned threads) const {
  const Layout l = layout();
  std::vector<size_t> pending;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensors_[i].bytes) pending.push_back(i);
  }
  if (!pending.empty() && !fill) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf writer: tensor '{}' has no data and no fill callback was given",
         tensors_[pending[0]].name);
  }
  // Largest first, so the last tensors handed out are small and threads finish together.
  std::stable_sort(pending.begin(), pending.end(),
                   [&](size_t a, size_t b) { return tensors_[a].n_bytes > tensors_[b].n_bytes; });

  PartialFile partial(partial_path(path));
  MappedFile file = MappedFile::create(partial.path(), l.file_size);
  const std::span<uint8_t> out = file.writable_bytes();
  std::memcpy(out.data(), l.header.data(), l.header.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    if (t.bytes && !t.bytes->empty()) {
      std::memcpy(out.data() + l.data_offset + l.offsets[i], t.bytes->data(), t.bytes->size());
    }
  }

  if (!pending.empty()) {
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex error_mutex;
    std::exception_ptr error;
    auto worker = [&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const size_t k = next.fetch_add(1);
        if (k >= pending.size()) return;
        const size_t i = pending[k];
        try {
          fill(i, out.subspan(static_cast<size_t>(l.data_offset + l.offsets[i]), static_cast<size_t>(tensors_[i].n_bytes)));
        } catch (...) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          stop = true;
        }
      }
    };
    const size_t n_threads = std::clamp<size_t>(threads, 1, pending.size());
    {
      std::vector<std::jthread> pool;
      pool.reserve(n_threads - 1);
      for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
      worker();
    }  // joins
    if (error) std::rethrow_exception(error);
  }

  file.close();
  if (std::rename(partial.path().c_str(), path.c_str()) != 0) {
    fail(STRATA_ERR_IO, "cannot rename '{}' to '{}': {}", partial.path(), path, std::strerror(errno));
  }
  partial.done();
}

}  // namespace strata::core
