// The GGUF reader: metadata values, the validating parser, and typed getters.
#include "core/gguf/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/base/error.h"
#include "core/quant/quant.h"

namespace strata::core {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader maps little-endian files directly; a big-endian host needs byte swaps");
static_assert(std::variant_size_v<GgufValue::Payload> == kGgufValueTypeCount);
static_assert(std::variant_size_v<GgufArray> == kGgufValueTypeCount);
static_assert(std::is_same_v<std::variant_alternative_t<9, GgufValue::Payload>, GgufArray>);
static_assert(std::is_same_v<std::variant_alternative_t<9, GgufArray>, std::vector<GgufValue>>);

const char* gguf_value_type_name(GgufValueType type) {
  static constexpr const char* kNames[kGgufValueTypeCount] = {
      "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < kGgufValueTypeCount ? kNames[i] : "unknown";
}

// ---------------------------------------------------------------------------
// GgufValue

GgufValue GgufValue::array_of_arrays(std::vector<GgufValue> elements) {
  for (size_t i = 0; i < elements.size(); ++i) {
    if (!elements[i].is_array()) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gguf: element {} of a nested array is a {}, not an array", i,
           gguf_value_type_name(elements[i].type()));
    }
  }
  return GgufValue(Payload(std::in_place_type<GgufArray>, std::in_place_index<9>, std::move(elements)));
}

namespace {

// An empty GgufArray whose alternative (element type) is `index`.
template <size_t... I>
GgufArray empty_array_of(size_t index, std::index_sequence<I...>) {
  GgufArray out;
  ((index == I ? (out.emplace<I>(), 0) : 0), ...);
  return out;
}

}  // namespace

GgufValue GgufValue::empty_array(GgufValueType element_type) {
  const auto index = static_cast<size_t>(element_type);
  if (index >= kGgufValueTypeCount) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf: unknown array element type {}", index);
  }
  return GgufValue(Payload(std::in_place_type<GgufArray>,
                           empty_array_of(index, std::make_index_sequence<kGgufValueTypeCount>{})));
}

bool GgufValue::is_integer() const {
  switch (type()) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64:
      return true;
    default:
      return false;
  }
}

std::optional<double> GgufValue::to_double() const {
  return std::visit(
      [](const auto& v) -> std::optional<double> {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, bool>) return static_cast<double>(v);
        return std::nullopt;
      },
      payload_);
}

GgufValueType GgufValue::element_type() const {
  const GgufArray* a = array_if();
  if (a == nullptr) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "gguf: element_type() of a {} value", gguf_value_type_name(type()));
  }
  return static_cast<GgufValueType>(a->index());
}

size_t GgufValue::array_size() const {
  const GgufArray* a = array_if();
  return a ? std::visit([](const auto& v) { return v.size(); }, *a) : 0;
}

namespace {

std::string quote(const std::string& s) {
  constexpr size_t kMaxShown = 120;
  if (s.size() <= kMaxShown) return fmt::format("{:?}", s);
  return fmt::format("{:?}...({} bytes)", s.substr(0, kMaxShown), s.size());
}

template <typename V>
std::string scalar_string(const V& v) {
  if constexpr (std::is_same_v<V, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<V, std::string>) return quote(v);
  else if constexpr (std::is_same_v<V, uint8_t> || std::is_same_v<V, int8_t>) return fmt::format("{}", int{v});
  else return fmt::format("{}", v);
}

}  // namespace

std::string GgufValue::to_string(size_t max_elements) const {
  const GgufArray* a = array_if();
  if (a == nullptr) {
    return std::visit(
        [](const auto& v) -> std::string {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, GgufArray>) return {};
          else return scalar_string(v);
        },
        payload_);
  }
  return std::visit(
      [&](const auto& elems) {
        std::string out = fmt::format("[{} x {}", gguf_value_type_name(element_type()), elems.size());
        const size_t shown = std::min(elems.size(), max_elements);
        for (size_t i = 0; i < shown; ++i) {
          out += i == 0 ? ": " : ", ";
          using E = typename std::decay_t<decltype(elems)>::value_type;
          if constexpr (std::is_same_v<E, GgufValue>) out += elems[i].to_string(max_elements);
          else if constexpr (std::is_same_v<E, bool>) out += elems[i] ? "true" : "false";
          else out += scalar_string(elems[i]);
        }
        if (shown < elems.size()) out += ", ...";
        return out + "]";
      },
      *a);
}

// ---------------------------------------------------------------------------
// Parsing

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
// The smallest encodings, used to reject a count that cannot fit in the bytes
// left before anything is allocated for it.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                 // empty key, type, a u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, 1 dim, type, offset
constexpr uint64_t kMinArrayBytes = 4 + 8;                  // element type, count
// Nested arrays recurse; a corrupt file must not be able to exhaust the stack.
constexpr int kMaxArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;

uint64_t min_encoded_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    case GgufValueType::String: return 8;
    case GgufValueType::Array: return kMinArrayBytes;
  }
  return 1;
}

// Reads little-endian fields from a byte span; every read is bounds-checked and
// every failure names the current context (the key or tensor being read), the
// field and its byte offset.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& context() const { return context_; }

  template <typename... Args>
  [[noreturn]] void fail_at(uint64_t offset, strata_status status, fmt::format_string<Args...> format,
                            Args&&... args) const {
    fail(status, "gguf: {}: {} (at offset {})", context_, fmt::format(format, std::forward<Args>(args)...),
         offset);
  }

  void need(uint64_t n, const char* field) const {
    if (n > remaining()) {
      fail_at(pos_, STRATA_ERR_FORMAT, "{} needs {} bytes but the file ends after {} (file size {})", field, n,
              remaining(), size());
    }
  }

  template <typename T>
  T read(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* field) {
    const uint64_t at = pos_;
    const auto len = read<uint64_t>(field);
    if (len > remaining()) {
      fail_at(at, STRATA_ERR_FORMAT, "{} length {} exceeds the {} bytes left in the file", field, len,
              remaining());
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

  // Copies n elements of T; the caller has checked that they fit.
  template <typename T>
  void read_into(std::vector<T>& out, uint64_t n) {
    out.resize(static_cast<size_t>(n));
    if (n > 0) std::memcpy(out.data(), bytes_.data() + pos_, static_cast<size_t>(n) * sizeof(T));
    pos_ += n * sizeof(T);
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  std::string context_ = "header";
};

GgufValueType read_type_code(Cursor& c, const char* field) {
  const uint64_t at = c.pos();
  const auto code = c.read<uint32_t>(field);
  if (code >= kGgufValueTypeCount) c.fail_at(at, STRATA_ERR_FORMAT, "unknown {} {}", field, code);
  return static_cast<GgufValueType>(code);
}

bool read_bool(Cursor& c) {
  const uint64_t at = c.pos();
  const auto b = c.read<uint8_t>("bool value");
  if (b > 1) c.fail_at(at, STRATA_ERR_FORMAT, "bool value {} is neither 0 nor 1", b);
  return b != 0;
}

GgufValue read_value(Cursor& c, GgufValueType type, int depth);

// `depth` counts the arrays enclosing this one, itself included.
GgufArray read_array(Cursor& c, int depth) {
  const uint64_t at = c.pos();
  if (depth > kMaxArrayDepth) c.fail_at(at, STRATA_ERR_FORMAT, "arrays nested deeper than {}", kMaxArrayDepth);
  const GgufValueType elem = read_type_code(c, "array element type");
  const uint64_t count_at = c.pos();
  const auto count = c.read<uint64_t>("array count");
  const uint64_t min_size = min_encoded_size(elem);
  if (count > c.remaining() / min_size) {
    c.fail_at(count_at, STRATA_ERR_FORMAT, "array count {} of {} cannot fit in the {} bytes left", count,
              gguf_value_type_name(elem), c.remaining());
  }
  GgufArray out;
  switch (elem) {
    case GgufValueType::U8: c.read_into(out.emplace<0>(), count); break;
    case GgufValueType::I8: c.read_into(out.emplace<1>(), count); break;
    case GgufValueType::U16: c.read_into(out.emplace<2>(), count); break;
    case GgufValueType::I16: c.read_into(out.emplace<3>(), count); break;
    case GgufValueType::U32: c.read_into(out.emplace<4>(), count); break;
    case GgufValueType::I32: c.read_into(out.emplace<5>(), count); break;
    case GgufValueType::F32: c.read_into(out.emplace<6>(), count); break;
    case GgufValueType::U64: c.read_into(out.emplace<10>(), count); break;
    case GgufValueType::I64: c.read_into(out.emplace<11>(), count); break;
    case GgufValueType::F64: c.read_into(out.emplace<12>(), count); break;
    case GgufValueType::Bool: {
      auto& v = out.emplace<7>();
      v.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) v.push_back(read_bool(c));
      break;
    }
    case GgufValueType::String: {
      auto& v = out.emplace<8>();
      v.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) v.push_back(c.read_string("string element"));
      break;
    }
    case GgufValueType::Array: {
      auto& v = out.emplace<9>();
      v.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) v.push_back(read_value(c, GgufValueType::Array, depth));
      break;
    }
  }
  return out;
}

GgufValue read_value(Cursor& c, GgufValueType type, int depth) {
  using P = GgufValue::Payload;
  switch (type) {
    case GgufValueType::U8: return GgufValue::u8(c.read<uint8_t>("u8 value"));
    case GgufValueType::I8: return GgufValue::i8(c.read<int8_t>("i8 value"));
    case GgufValueType::U16: return GgufValue::u16(c.read<uint16_t>("u16 value"));
    case GgufValueType::I16: return GgufValue::i16(c.read<int16_t>("i16 value"));
    case GgufValueType::U32: return GgufValue::u32(c.read<uint32_t>("u32 value"));
    case GgufValueType::I32: return GgufValue::i32(c.read<int32_t>("i32 value"));
    case GgufValueType::F32: return GgufValue::f32(c.read<float>("f32 value"));
    case GgufValueType::Bool: return GgufValue::boolean(read_bool(c));
    case GgufValueType::String: return GgufValue::string(c.read_string("string value"));
    case GgufValueType::Array: return GgufValue::from_payload(P(std::in_place_index<9>, read_array(c, depth + 1)));
    case GgufValueType::U64: return GgufValue::u64(c.read<uint64_t>("u64 value"));
    case GgufValueType::I64: return GgufValue::i64(c.read<int64_t>("i64 value"));
    case GgufValueType::F64: return GgufValue::f64(c.read<double>("f64 value"));
  }
  c.fail_at(c.pos(), STRATA_ERR_INTERNAL, "unhandled value type {}", static_cast<uint32_t>(type));
}

// A name from the file as shown in a message: a corrupt file may hold a
// megabyte-long "name".
std::string_view shown(std::string_view name) { return name.substr(0, 128); }

bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool checked_add(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }

}  // namespace

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f;
  f.file_ = MappedFile::open_read(path);
  f.path_ = path;
  f.bytes_ = f.file_.bytes();
  try {
    f.parse();
  } catch (const Error& e) {
    // Name the file: the parser's messages only know offsets.
    throw Error(e.status(), fmt::format("{} [{}]", e.what(), path));
  }
  return f;
}

GgufFile GgufFile::from_memory(std::span<const uint8_t> bytes) {
  GgufFile f;
  f.path_ = "<memory>";
  f.bytes_ = bytes;
  f.parse();
  return f;
}

void GgufFile::parse() {
  Cursor c(bytes_);

  // Header.
  const auto magic = c.read<uint32_t>("magic");
  if (magic != kMagic) {
    c.fail_at(0, STRATA_ERR_FORMAT, "bad magic {:02x} {:02x} {:02x} {:02x}, expected 'GGUF': not a GGUF file",
              bytes_[0], bytes_[1], bytes_[2], bytes_[3]);
  }
  version_ = c.read<uint32_t>("version");
  if (version_ == 1) {
    c.fail_at(4, STRATA_ERR_UNSUPPORTED,
              "version 1 (the 2023 draft with 32-bit counts) is not supported; convert the model again");
  }
  if (version_ == 0x02000000u || version_ == 0x03000000u) {
    c.fail_at(4, STRATA_ERR_UNSUPPORTED, "big-endian GGUF files are not supported");
  }
  if (version_ != 2 && version_ != 3) {
    c.fail_at(4, STRATA_ERR_UNSUPPORTED, "version {} is not supported (only 2 and 3)", version_);
  }
  const auto n_tensors = c.read<uint64_t>("tensor count");
  const auto n_kv = c.read<uint64_t>("metadata count");
  if (n_tensors > c.remaining() / kMinTensorInfoBytes) {
    c.fail_at(8, STRATA_ERR_FORMAT, "tensor count {} cannot fit in the {} bytes left", n_tensors, c.remaining());
  }
  if (n_kv > c.remaining() / kMinKvBytes) {
    c.fail_at(16, STRATA_ERR_FORMAT, "metadata count {} cannot fit in the {} bytes left", n_kv, c.remaining());
  }
  // Both bounded by the file size above, so neither product overflows.
  if (n_kv * kMinKvBytes + n_tensors * kMinTensorInfoBytes > c.remaining()) {
    c.fail_at(8, STRATA_ERR_FORMAT, "{} tensors and {} metadata entries cannot fit in the {} bytes left",
              n_tensors, n_kv, c.remaining());
  }

  // Metadata.
  metadata_.reserve(static_cast<size_t>(n_kv));
  key_index_.reserve(static_cast<size_t>(n_kv));
  uint64_t alignment_at = 0;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = c.pos();
    c.set_context(fmt::format("metadata entry {}", i));
    std::string key = c.read_string("key");
    if (key.empty()) c.fail_at(at, STRATA_ERR_FORMAT, "empty key");
    c.set_context(fmt::format("metadata '{}'", shown(key)));
    if (key == "general.alignment") alignment_at = at;
    if (key_index_.contains(key)) c.fail_at(at, STRATA_ERR_FORMAT, "duplicate key");
    const GgufValueType type = read_type_code(c, "value type");
    GgufValue value = read_value(c, type, 0);
    key_index_.emplace(key, metadata_.size());
    metadata_.push_back(GgufKv{std::move(key), std::move(value)});
  }

  if (const GgufValue* a = find("general.alignment")) {
    c.set_context("metadata 'general.alignment'");
    const std::optional<uint32_t> v = a->to_int<uint32_t>();
    if (!v) {
      c.fail_at(alignment_at, STRATA_ERR_FORMAT, "value {} ({}) is not a 32-bit unsigned integer", a->to_string(),
                gguf_value_type_name(a->type()));
    }
    if (*v == 0 || !std::has_single_bit(*v)) {
      c.fail_at(alignment_at, STRATA_ERR_FORMAT, "alignment {} is not a nonzero power of two", *v);
    }
    alignment_ = *v;
  }

  // Tensor infos.
  tensors_.reserve(static_cast<size_t>(n_tensors));
  tensor_index_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.info_offset = c.pos();
    c.set_context(fmt::format("tensor {}", i));
    t.name = c.read_string("name");
    if (t.name.empty()) c.fail_at(t.info_offset, STRATA_ERR_FORMAT, "empty tensor name");
    c.set_context(fmt::format("tensor '{}'", shown(t.name)));
    if (tensor_index_.contains(t.name)) c.fail_at(t.info_offset, STRATA_ERR_FORMAT, "duplicate tensor name");

    const uint64_t dims_at = c.pos();
    t.n_dims = c.read<uint32_t>("n_dims");
    if (t.n_dims == 0 || t.n_dims > kMaxDims) {
      c.fail_at(dims_at, STRATA_ERR_FORMAT, "n_dims {} is outside 1..{}", t.n_dims, kMaxDims);
    }
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t at = c.pos();
      const auto dim = c.read<uint64_t>("dimension");
      if (dim == 0) c.fail_at(at, STRATA_ERR_FORMAT, "dimension ne[{}] is 0", d);
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        c.fail_at(at, STRATA_ERR_FORMAT, "dimension ne[{}] = {} is too large", d, dim);
      }
      if (!checked_mul(n_elements, dim, n_elements) ||
          n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        c.fail_at(dims_at, STRATA_ERR_FORMAT, "element count overflows (dimensions up to ne[{}] = {})", d, dim);
      }
      t.ne[d] = static_cast<int64_t>(dim);
    }
    t.n_elements = static_cast<int64_t>(n_elements);

    const uint64_t type_at = c.pos();
    t.type = c.read<uint32_t>("type");
    const TypeTraits* info = find_type_traits(t.type);
    if (info == nullptr) c.fail_at(type_at, STRATA_ERR_UNSUPPORTED, "unknown tensor type id {}", t.type);
    if (t.ne[0] % info->block_size != 0) {
      c.fail_at(dims_at, STRATA_ERR_FORMAT, "row length ne[0] = {} is not a multiple of the {} block size {}",
                t.ne[0], info->name, info->block_size);
    }
    // n_elements fits in int64, and ne[0] / block_size * type_size is at most
    // ne[0] * type_size / block_size <= ne[0] * 4; still, check every step.
    uint64_t row_bytes = 0;
    if (!checked_mul(static_cast<uint64_t>(t.ne[0] / info->block_size), info->type_size, row_bytes) ||
        !checked_mul(row_bytes, n_elements / static_cast<uint64_t>(t.ne[0]), t.n_bytes)) {
      c.fail_at(dims_at, STRATA_ERR_FORMAT, "byte size of {} {} elements overflows", n_elements, info->name);
    }
    t.offset = c.read<uint64_t>("data offset");
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the end of the header, aligned up.
  const uint64_t header_end = c.pos();
  c.set_context("data section");
  if (!checked_add(header_end, alignment_ - 1, data_offset_)) {
    c.fail_at(header_end, STRATA_ERR_FORMAT, "aligned start overflows");
  }
  data_offset_ -= data_offset_ % alignment_;

  // Every tensor's data: aligned and inside the file.
  for (GgufTensorInfo& t : tensors_) {
    c.set_context(fmt::format("tensor '{}'", shown(t.name)));
    if (t.offset % alignment_ != 0) {
      c.fail_at(t.info_offset, STRATA_ERR_FORMAT, "data offset {} is not a multiple of the alignment {}", t.offset,
                alignment_);
    }
    uint64_t end = 0;
    if (!checked_add(data_offset_, t.offset, t.file_offset) || !checked_add(t.file_offset, t.n_bytes, end)) {
      c.fail_at(t.info_offset, STRATA_ERR_FORMAT,
                "data offset {} ({} bytes) lies past the end of the file (size {}) and overflows", t.offset,
                t.n_bytes, bytes_.size());
    }
    if (end > bytes_.size()) {
      c.fail_at(t.info_offset, STRATA_ERR_FORMAT,
                "data [file offset {}, {} bytes] extends past the end of the file (size {}); offset {} in the data "
                "section at {}",
                t.file_offset, t.n_bytes, bytes_.size(), t.offset, data_offset_);
    }
    t.data = bytes_.data() + t.file_offset;
  }

  // No two tensors share bytes: sorted by offset, each ends before the next starts.
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensorInfo& prev = tensors_[order[i - 1]];
    const GgufTensorInfo& next = tensors_[order[i]];
    if (next.offset < prev.offset + prev.n_bytes) {
      c.set_context(fmt::format("tensor '{}'", shown(next.name)));
      c.fail_at(next.info_offset, STRATA_ERR_FORMAT, "data [offset {}, {} bytes] overlaps tensor '{}' [offset {}, {} bytes]",
                next.offset, next.n_bytes, shown(prev.name), prev.offset, prev.n_bytes);
    }
  }
}

// ---------------------------------------------------------------------------
// Lookups and typed getters

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (t == nullptr) fail(STRATA_ERR_FORMAT, "gguf: tensor '{}' is missing from {}", name, path_);
  return *t;
}

const GgufValue& GgufFile::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' is missing from {}", key, path_);
  return *v;
}

namespace {

[[noreturn]] void wrong_type(std::string_view key, const GgufValue& v, std::string_view wanted) {
  fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' is {} {}, expected {}", key, gguf_value_type_name(v.type()),
       v.to_string(), wanted);
}

template <typename T>
T int_value(std::string_view key, const GgufValue& v, std::string_view wanted) {
  const std::optional<T> out = v.to_int<T>();
  if (!out) wrong_type(key, v, wanted);
  return *out;
}

float float_value(std::string_view key, const GgufValue& v) {
  const std::optional<double> d = v.to_double();
  if (!d) wrong_type(key, v, "a number");
  return static_cast<float>(*d);
}

// The elements of an integer array converted to T, each checked to fit.
template <typename T>
std::vector<T> int_array(std::string_view key, const GgufValue& v, std::string_view wanted) {
  const GgufArray* a = v.array_if();
  if (a == nullptr) wrong_type(key, v, wanted);
  return std::visit(
      [&](const auto& elems) {
        using E = typename std::decay_t<decltype(elems)>::value_type;
        std::vector<T> out;
        if constexpr (std::is_integral_v<E> && !std::is_same_v<E, bool>) {
          out.reserve(elems.size());
          for (size_t i = 0; i < elems.size(); ++i) {
            if (!std::in_range<T>(elems[i])) {
              fail(STRATA_ERR_FORMAT, "gguf: metadata '{}' element {} = {} does not fit in {}", key, i, elems[i],
                   wanted);
            }
            out.push_back(static_cast<T>(elems[i]));
          }
        } else {
          wrong_type(key, v, wanted);
        }
        return out;
      },
      *a);
}

}  // namespace

uint32_t GgufFile::get_u32(std::string_view key) const { return int_value<uint32_t>(key, require(key), "a u32"); }
int32_t GgufFile::get_i32(std::string_view key) const { return int_value<int32_t>(key, require(key), "an i32"); }
uint64_t GgufFile::get_u64(std::string_view key) const { return int_value<uint64_t>(key, require(key), "a u64"); }
int64_t GgufFile::get_i64(std::string_view key) const { return int_value<int64_t>(key, require(key), "an i64"); }
float GgufFile::get_f32(std::string_view key) const { return float_value(key, require(key)); }

uint32_t GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : fallback;
}
int32_t GgufFile::get_i32_or(std::string_view key, int32_t fallback) const {
  return has(key) ? get_i32(key) : fallback;
}
uint64_t GgufFile::get_u64_or(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_u64(key) : fallback;
}
int64_t GgufFile::get_i64_or(std::string_view key, int64_t fallback) const {
  return has(key) ? get_i64(key) : fallback;
}
float GgufFile::get_f32_or(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : fallback;
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = require(key);
  const bool* b = v.get_if<bool>();
  if (b == nullptr) wrong_type(key, v, "a bool");
  return *b;
}
bool GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

const std::string& GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = require(key);
  const std::string* s = v.get_if<std::string>();
  if (s == nullptr) wrong_type(key, v, "a string");
  return *s;
}
std::string GgufFile::get_string_or(std::string_view key, std::string_view fallback) const {
  return has(key) ? get_string(key) : std::string(fallback);
}

const std::vector<std::string>& GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& v = require(key);
  const auto* a = v.array_if<std::string>();
  if (a == nullptr) wrong_type(key, v, "an array of strings");
  return *a;
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  return int_array<int32_t>(key, require(key), "an array of i32");
}
std::vector<uint32_t> GgufFile::get_u32_array(std::string_view key) const {
  return int_array<uint32_t>(key, require(key), "an array of u32");
}
std::vector<int64_t> GgufFile::get_i64_array(std::string_view key) const {
  return int_array<int64_t>(key, require(key), "an array of i64");
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (const auto* f = v.array_if<float>()) return *f;
  const GgufArray* a = v.array_if();
  if (a == nullptr) wrong_type(key, v, "an array of numbers");
  return std::visit(
      [&](const auto& elems) {
        using E = typename std::decay_t<decltype(elems)>::value_type;
        std::vector<float> out;
        if constexpr (std::is_arithmetic_v<E> && !std::is_same_v<E, bool>) {
          out.reserve(elems.size());
          for (const E& e : elems) out.push_back(static_cast<float>(e));
        } else {
          wrong_type(key, v, "an array of numbers");
        }
        return out;
      },
      *a);
}

}  // namespace strata::core
