#include "ByteIO.h"

namespace fusegen::runtime {

void ByteWriter::u32(uint32_t value) {
  for (int i = 0; i < 4; ++i)
    u8(static_cast<uint8_t>(value >> (8 * i)));
}

void ByteWriter::u64(uint64_t value) {
  for (int i = 0; i < 8; ++i)
    u8(static_cast<uint8_t>(value >> (8 * i)));
}

void ByteWriter::str(std::string_view text) {
  u32(static_cast<uint32_t>(text.size()));
  raw(text);
}

bool ByteReader::raw(size_t count, std::string_view& bytes) {
  if (count > remaining()) {
    pos_ = bytes_.size();
    return false;
  }
  bytes = bytes_.substr(pos_, count);
  pos_ += count;
  return true;
}

bool ByteReader::u8(uint8_t& value) {
  std::string_view b;
  if (!raw(1, b))
    return false;
  value = static_cast<uint8_t>(b[0]);
  return true;
}

bool ByteReader::u32(uint32_t& value) {
  std::string_view b;
  if (!raw(4, b))
    return false;
  value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(b[i])) << (8 * i);
  return true;
}

bool ByteReader::u64(uint64_t& value) {
  std::string_view b;
  if (!raw(8, b))
    return false;
  value = 0;
  for (int i = 0; i < 8; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
  return true;
}

bool ByteReader::i64(int64_t& value) {
  uint64_t bits = 0;
  if (!u64(bits))
    return false;
  value = static_cast<int64_t>(bits);
  return true;
}

bool ByteReader::str(std::string& text) {
  uint32_t size = 0;
  std::string_view b;
  if (!u32(size) || !raw(size, b))
    return false;
  text.assign(b);
  return true;
}

} // namespace fusegen::runtime
