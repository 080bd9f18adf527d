// SHA-256 (cache keys, entry checksums, fingerprints): the FIPS 180-2
// examples, and any split of the input into update() calls gives the same
// digest as one call.
#include "fusegen/Sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace fusegen {
namespace {

std::string hex(const std::array<uint8_t, 32>& digest) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, AnySplitGivesTheSameDigest) {
  std::string data;
  for (int i = 0; i < 1000; ++i)
    data += static_cast<char>((i * 37 + i / 7) & 0xff);
  const std::string whole = sha256_hex(data);
  for (size_t first : {0, 1, 55, 56, 63, 64, 65, 127, 128, 500}) {
    for (size_t step : {1, 3, 63, 64, 65, 200}) {
      Sha256 hash;
      hash.update(std::string_view(data).substr(0, first));
      for (size_t at = first; at < data.size(); at += step)
        hash.update(std::string_view(data).substr(at, step));
      EXPECT_EQ(hex(hash.finish()), whole) << "first " << first << ", step " << step;
    }
  }
}

} // namespace
} // namespace fusegen
