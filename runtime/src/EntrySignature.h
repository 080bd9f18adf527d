// The fleet key and the signed form of a cache entry, for the remote cache
// and offline bundles. Whoever can write the shared store could otherwise
// change every kernel the fleet runs, so an entry from there is loaded only
// if it carries an HMAC-SHA256 (OpenSSL) under the fleet's key over the
// name it is stored under and its bytes:
//
//   "FUSEGENS"    8-byte magic
//   u32 version   kSignedEntryVersion
//   32 bytes      HMAC-SHA256(key, "fusegen-signed-entry-v1\0" + name + "\0" + entry)
//   entry         the disk cache entry, byte for byte (CacheEntry.h)
//
// `name` is the SHA-256 of the entry's key material (its disk file name
// without ".fgc"), so a valid entry cannot be replayed under another key.
// What the signature does not stop (an older valid entry replayed under the
// same name, a leaked key) is in docs/reliability.md.
#pragma once

#include "fusegen/Result.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fusegen::runtime {

inline constexpr std::string_view kSignedEntryMagic = "FUSEGENS";
inline constexpr uint32_t kSignedEntryVersion = 1;
inline constexpr size_t kSignatureBytes = 32;
inline constexpr size_t kSignedHeaderBytes = 8 + 4 + kSignatureBytes;
// A key shorter than this is refused (a typo'd or empty file), as is one
// longer than the upper bound (not a key file).
inline constexpr size_t kMinFleetKeyBytes = 16;
inline constexpr size_t kMaxFleetKeyBytes = 4096;

class FleetKey {
public:
  // Reads the key file: a regular file owned by this user that neither its
  // group nor others can read or write, holding 16 to 4096 bytes (trailing
  // whitespace, e.g. the newline of `openssl rand -hex 32 > key`, dropped).
  // The error says why the file cannot be used.
  static Result<FleetKey> load(const std::string& path);
  // For tests.
  static FleetKey from_bytes(std::string bytes) { return FleetKey(std::move(bytes)); }

  // The signed form of `entry` stored under `name`.
  std::string sign(std::string_view name, std::string_view entry) const;
  // The entry inside `signed_value` if its signature is this key's over
  // `name`; the error says what is wrong ("not signed", "bad signature").
  Result<std::string_view> verify(std::string_view name, std::string_view signed_value) const;

private:
  explicit FleetKey(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string mac(std::string_view name, std::string_view entry) const;
  std::string bytes_;
};

} // namespace fusegen::runtime
