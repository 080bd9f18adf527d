// The disk cache entry format. One file per key:
//
//   "FUSEGENK"                      8-byte magic
//   u32 schema version              kCacheSchemaVersion
//   fields, in this order, each     u8 label length, label, u64 payload length, payload
//     key         the key material (CacheKey::material)
//     fusion      fusion name
//     buffers     u32 n, n x (u8 role, str name)          what args.buf[i] is
//     dim_symbols u32 n, n x str
//     kernels     u32 n, n x (str name, u8 kind, 3 x i64 grid, u32 block,
//                 i64 shared bytes, u32 fills, fills x (u32 buffer, u32 value bits, i64 count))
//     workspace   u32 n, n x (u32 buffer, i64 offset, i64 bytes), i64 total bytes
//     copies      u32 n, n x (str output, u32 buffer, i64 bytes)
//     image_kind  "cubin" or "ptx"
//     image       the bytes NVRTC produced
//   32 bytes                        SHA-256 of everything before
//
// Integers are little-endian; str is u32 length + bytes. No host code is
// ever stored. Decoding checks every length and count, so any truncation or
// flipped byte is an error, never a crash.
#pragma once

#include "fusegen/LaunchPlan.h"

#include "fusegen/Result.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fusegen::runtime {

inline constexpr std::string_view kCacheMagic = "FUSEGENK";
// Bounds that let a reader refuse a file before reading it: a fusion's
// image is a few hundred KiB (the largest seen, chain 39's, under 2 MiB), and
// the launch metadata a few KiB. Entries beyond these are never written.
inline constexpr uint64_t kMaxImageBytes = uint64_t{64} << 20;
inline constexpr uint64_t kMaxEntryBytes = kMaxImageBytes + (uint64_t{4} << 20);

struct CacheEntry {
  std::string key_material;
  LaunchPlan launch;
  bool ptx = false;
  std::string image;
};

std::string encode_entry(const CacheEntry& entry);
// Errors say what is wrong ("truncated", "checksum mismatch", ...).
Result<CacheEntry> decode_entry(std::string_view bytes);
// What the runtime requires of a decoded entry beyond its format: a launch
// plan for the fusion its key names, fully specialized, and an image of the
// kind the key's target says. The disk cache and `fusegen cache verify`
// both apply it, so verify says "ok" only for what the runtime would load.
Status check_entry_matches_key(const CacheEntry& entry);

} // namespace fusegen::runtime
