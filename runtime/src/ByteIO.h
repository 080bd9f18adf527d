// Little-endian binary writing and bounds-checked reading, for the disk cache
// entry format. A reader never reads past its end: a short or garbled input
// is an error, not undefined behaviour.
#pragma once

#include "fusegen/Result.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fusegen::runtime {

class ByteWriter {
public:
  void u8(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void u32(uint32_t value);
  void u64(uint64_t value);
  void i64(int64_t value) { u64(static_cast<uint64_t>(value)); }
  // u32 length, then the bytes.
  void str(std::string_view text);
  void raw(std::string_view bytes) { out_.append(bytes); }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class ByteReader {
public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  // Each returns false (and leaves the reader failed) when the bytes run out.
  bool u8(uint8_t& value);
  bool u32(uint32_t& value);
  bool u64(uint64_t& value);
  bool i64(int64_t& value);
  bool str(std::string& text);
  bool raw(size_t count, std::string_view& bytes);

  size_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  size_t position() const { return pos_; }

private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

} // namespace fusegen::runtime
