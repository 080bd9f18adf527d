// SHA-256 (FIPS 180-4), used for fingerprints and cache keys. Not a secret
// anywhere: a plain, dependency-free implementation.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace fusegen {

class Sha256 {
public:
  Sha256();
  void update(std::string_view data);
  std::array<uint8_t, 32> finish();

private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  uint8_t buffer_[64];
  uint64_t length_ = 0;
  size_t buffered_ = 0;
};

std::string sha256_hex(std::string_view data);

} // namespace fusegen
