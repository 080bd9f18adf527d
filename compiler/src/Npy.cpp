// NumPy .npy reading and writing. The format: the magic "\x93NUMPY", a version
// byte pair, a little-endian header length (2 bytes in 1.0, 4 in 2.0/3.0), a
// Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a '\n', then the raw data in C order.
//
// Files come from users and scripts, so every malformed or truncated input is
// an Error naming the file; nothing here may crash or allocate unboundedly.
#include "fusegen/Npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace fusegen {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreludeV1 = 10; // magic, version, uint16 header length
constexpr size_t kPreludeV2 = 12; // magic, version, uint32 header length
// numpy pads the prelude plus header to a multiple of 64 bytes.
constexpr size_t kAlignment = 64;

Error file_error(const std::string& path, const std::string& message) {
  return Error{path + ": " + message};
}

// ---------------------------------------------------------------------------
// Header dict parsing: a tiny recursive-descent reader for exactly the Python
// literals numpy writes (strings, True/False, tuples of ints). No regex, so a
// hostile header cannot cause pathological backtracking.

struct HeaderFields {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  // Parses the whole dict; the error message (without the file name) on failure.
  Result<HeaderFields> parse() {
    HeaderFields fields;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_space();
    if (!consume('{'))
      return fail("header does not start with '{'");
    while (true) {
      skip_space();
      if (consume('}'))
        break;
      std::optional<std::string> key = parse_string();
      if (!key)
        return fail("expected a quoted key in the header dict");
      skip_space();
      if (!consume(':'))
        return fail("expected ':' after key '" + *key + "'");
      skip_space();
      if (*key == "descr") {
        std::optional<std::string> descr = parse_string();
        if (!descr)
          return fail("'descr' is not a string");
        fields.descr = *descr;
        seen_descr = true;
      } else if (*key == "fortran_order") {
        std::optional<bool> order = parse_bool();
        if (!order)
          return fail("'fortran_order' is not True or False");
        fields.fortran_order = *order;
        seen_order = true;
      } else if (*key == "shape") {
        std::optional<std::vector<int64_t>> shape = parse_shape();
        if (!shape)
          return fail("'shape' is not a tuple of non-negative ints" + detail_);
        fields.shape = std::move(*shape);
        seen_shape = true;
      } else {
        return fail("unexpected key '" + *key + "' in the header dict");
      }
      skip_space();
      if (consume(','))
        continue;
      skip_space();
      if (consume('}'))
        break;
      return fail("expected ',' or '}' in the header dict");
    }
    skip_space();
    if (pos_ != text_.size())
      return fail("unexpected text after the header dict");
    if (!seen_descr || !seen_order || !seen_shape)
      return fail("header dict lacks one of 'descr', 'fortran_order', 'shape'");
    return fields;
  }

private:
  static Error fail(std::string message) { return Error{std::move(message)}; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n'))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  // A '...' or "..." literal without escapes (numpy never writes any).
  std::optional<std::string> parse_string() {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return std::nullopt;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      return std::nullopt;
    std::string value(text_.substr(pos_, end - pos_));
    if (value.find('\\') != std::string::npos)
      return std::nullopt;
    pos_ = end + 1;
    return value;
  }

  std::optional<bool> parse_bool() {
    if (consume_word("True"))
      return true;
    if (consume_word("False"))
      return false;
    return std::nullopt;
  }

  std::optional<int64_t> parse_dim() {
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        detail_ = " (a dim overflows int64)";
        return std::nullopt;
      }
      value = value * 10 + digit;
    }
    // numpy may write 'L' suffixes (Python 2 longs).
    if (pos_ > start)
      consume('L');
    if (pos_ == start)
      return std::nullopt;
    return value;
  }

  // "()", "(n,)" or "(a, b, ...)" with an optional trailing comma.
  std::optional<std::vector<int64_t>> parse_shape() {
    std::vector<int64_t> shape;
    if (!consume('('))
      return std::nullopt;
    skip_space();
    if (consume(')'))
      return shape;
    while (true) {
      skip_space();
      std::optional<int64_t> dim = parse_dim();
      if (!dim)
        return std::nullopt;
      shape.push_back(*dim);
      skip_space();
      bool comma = consume(',');
      skip_space();
      if (consume(')')) {
        // A one-element tuple needs its comma: "(3)" is an int, not a tuple.
        if (shape.size() == 1 && !comma)
          return std::nullopt;
        return shape;
      }
      if (!comma)
        return std::nullopt;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string detail_;
};

// ---------------------------------------------------------------------------
// Element decoding. Bytes are assembled explicitly so the code is correct on
// any host byte order.

struct ElementType {
  size_t size = 0;
  enum class Kind { Float, Int } kind = Kind::Float;
};

std::optional<ElementType> element_type(const std::string& descr) {
  if (descr == "<f4")
    return ElementType{4, ElementType::Kind::Float};
  if (descr == "<f8")
    return ElementType{8, ElementType::Kind::Float};
  if (descr == "<i4")
    return ElementType{4, ElementType::Kind::Int};
  if (descr == "<i8")
    return ElementType{8, ElementType::Kind::Int};
  return std::nullopt;
}

uint64_t load_le(const unsigned char* bytes, size_t size) {
  uint64_t value = 0;
  for (size_t i = size; i-- > 0;)
    value = (value << 8) | bytes[i];
  return value;
}

void store_le(uint64_t value, size_t size, std::string& out) {
  for (size_t i = 0; i < size; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

double decode(const unsigned char* bytes, ElementType type) {
  uint64_t bits = load_le(bytes, type.size);
  if (type.kind == ElementType::Kind::Float) {
    if (type.size == 4)
      return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    return std::bit_cast<double>(bits);
  }
  if (type.size == 4)
    return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
  return static_cast<double>(static_cast<int64_t>(bits));
}

// Element count of `shape`, or nullopt when it overflows.
std::optional<uint64_t> checked_numel(const std::vector<int64_t>& shape) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    uint64_t d = static_cast<uint64_t>(dim);
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / d)
      return std::nullopt;
    count *= d;
  }
  return count;
}

// Regular files only, and no more than `max_bytes`: a FIFO or /dev/zero
// named like a tensor must be an error, not a hang or an unbounded read.
Result<std::string> read_file(const std::string& path, uint64_t max_bytes) {
  // Non-blocking, so that opening a FIFO returns; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Error{std::string("cannot read file: ") + std::strerror(errno)};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    return Error{std::string("cannot read file: ") + std::strerror(errno)};
  if (!S_ISREG(info.st_mode))
    return Error{"not a regular file"};
  if (static_cast<uint64_t>(info.st_size) > max_bytes)
    return Error{"too large: " + std::to_string(info.st_size) + " bytes, where at most " + std::to_string(max_bytes) +
                 " were expected"};
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Error{std::string("cannot read file: ") + std::strerror(errno)};
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

// The header text (the dict) of `bytes`, and where the data starts.
Result<std::pair<std::string_view, size_t>> split_header(std::string_view bytes) {
  if (bytes.size() < kPreludeV1 || bytes.substr(0, kMagic.size()) != kMagic)
    return Error{"not a .npy file (bad magic)"};
  auto major = static_cast<unsigned char>(bytes[6]);
  auto minor = static_cast<unsigned char>(bytes[7]);
  if (minor != 0 || major < 1 || major > 3)
    return Error{"unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor)};
  size_t prelude = major == 1 ? kPreludeV1 : kPreludeV2;
  if (bytes.size() < prelude)
    return Error{"truncated header"};
  const auto* length_bytes = reinterpret_cast<const unsigned char*>(bytes.data() + 8);
  uint64_t header_len = load_le(length_bytes, prelude - 8);
  if (header_len > bytes.size() - prelude)
    return Error{"truncated header (" + std::to_string(header_len) + " bytes declared, " +
                 std::to_string(bytes.size() - prelude) + " present)"};
  std::string_view header = bytes.substr(prelude, static_cast<size_t>(header_len));
  // Version 3.0 allows UTF-8 headers; our keys and values are ASCII either way.
  return std::pair{header, prelude + static_cast<size_t>(header_len)};
}

// The header dict text for `shape` and `descr` as numpy writes it.
std::string header_dict(const std::vector<int64_t>& shape, const char* descr) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    dims += ",";
  return std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
}

} // namespace

Result<HostTensor> read_npy(const std::string& path, uint64_t max_bytes) {
  Result<std::string> bytes = read_file(path, max_bytes);
  if (!bytes)
    return file_error(path, bytes.error());
  auto split = split_header(bytes.value());
  if (!split)
    return file_error(path, split.error());
  auto [header_text, data_offset] = split.value();

  auto fields = HeaderParser(header_text).parse();
  if (!fields)
    return file_error(path, "malformed header: " + fields.error());
  const HeaderFields& header = fields.value();
  std::optional<ElementType> type = element_type(header.descr);
  if (!type)
    return file_error(path, "unsupported dtype '" + header.descr + "' (expected '<f4', '<f8', '<i4' or '<i8')");
  if (header.fortran_order)
    return file_error(path, "fortran_order True is not supported (save a C-contiguous array)");

  std::optional<uint64_t> count = checked_numel(header.shape);
  uint64_t available = bytes.value().size() - data_offset;
  // Compare element counts, not byte counts, so a huge shape cannot overflow.
  if (!count || *count > available / type->size)
    return file_error(path, "truncated data: shape " + shape_str(header.shape) + " needs more than the " +
                                std::to_string(available) + " bytes present");
  if (*count * type->size != available)
    return file_error(path, "data size " + std::to_string(available) + " bytes does not match shape " +
                                shape_str(header.shape) + " of '" + header.descr + "'");

  HostTensor tensor;
  tensor.shape = header.shape;
  tensor.data.resize(static_cast<size_t>(*count));
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.value().data() + data_offset);
  for (size_t i = 0; i < tensor.data.size(); ++i)
    tensor.data[i] = decode(data + i * type->size, *type);
  return tensor;
}

uint64_t npy_max_bytes(const std::vector<int64_t>& shape) {
  // numpy refuses headers over 10,000 bytes by default; allow a version 2
  // prelude and twice that.
  constexpr uint64_t kMaxHeader = kPreludeV2 + 20000;
  constexpr uint64_t kMaxElements = (UINT64_MAX - kMaxHeader) / 8;
  std::optional<uint64_t> elements = checked_numel(shape);
  return !elements || *elements > kMaxElements ? UINT64_MAX : kMaxHeader + *elements * 8;
}

Status write_npy(const std::string& path, const HostTensor& tensor, NpyType type) {
  for (int64_t dim : tensor.shape)
    if (dim < 0)
      return file_error(path, "cannot write a negative dim in shape " + shape_str(tensor.shape));
  std::optional<uint64_t> count = checked_numel(tensor.shape);
  if (!count || *count != tensor.data.size())
    return file_error(path, "shape " + shape_str(tensor.shape) + " does not match " +
                                std::to_string(tensor.data.size()) + " elements");

  const bool f32 = type == NpyType::F32;
  std::string dict = header_dict(tensor.shape, f32 ? "<f4" : "<f8");
  // Pad with spaces so the data starts aligned; the header ends with '\n'.
  size_t unpadded = kPreludeV1 + dict.size() + 1;
  dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  dict.push_back('\n');
  if (dict.size() > std::numeric_limits<uint16_t>::max())
    return file_error(path, "header too long for .npy format 1.0");

  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  store_le(dict.size(), 2, out);
  out += dict;
  out.reserve(out.size() + tensor.data.size() * (f32 ? 4 : 8));
  for (double value : tensor.data) {
    if (f32)
      store_le(std::bit_cast<uint32_t>(static_cast<float>(value)), 4, out);
    else
      store_le(std::bit_cast<uint64_t>(value), 8, out);
  }

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file)
    return file_error(path, "cannot open for writing");
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  file.close();
  if (!file)
    return file_error(path, "write failed");
  return Status::success();
}

} // namespace fusegen
