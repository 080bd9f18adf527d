// `fusegen cache export|import`: a single file of signed entries for
// air-gapped machines (fusegen/CacheAdmin.h).
//
//   "FUSEGENA"    8-byte magic
//   u32 version   1
//   u32 count
//   count x (u64 length, signed entry)    EntrySignature.h
//
// Each entry is signed over the hash of its key, as in the remote cache, so
// an archive is checked entry by entry on import and a tampered entry is
// refused without refusing the rest.
#include "fusegen/CacheAdmin.h"

#include "ByteIO.h"
#include "CacheDir.h"
#include "CacheEntry.h"
#include "CacheKey.h"
#include "DiskCache.h"
#include "EntrySignature.h"
#include "RemoteCache.h"

#include "fusegen/Sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

namespace fusegen {
namespace {

using runtime::FleetKey;

constexpr std::string_view kArchiveMagic = "FUSEGENA";
constexpr uint32_t kArchiveVersion = 1;
constexpr uint32_t kMaxArchiveEntries = 1u << 20;
constexpr uint64_t kMaxSignedEntryBytes = runtime::kMaxEntryBytes + runtime::kSignedHeaderBytes;

Result<FleetKey> fleet_key(const std::string& key_file) {
  std::string path = key_file;
  if (path.empty())
    if (const char* env = std::getenv("FUSEGEN_CACHE_KEY_FILE"))
      path = env;
  if (path.empty())
    return Error{"no fleet key to sign or check entries with: give --cache-key-file or set FUSEGEN_CACHE_KEY_FILE"};
  return FleetKey::load(path);
}

// The archive is written beside its destination and renamed into place.
Status write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string pattern = path + ".part-XXXXXX";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0)
    return Error{"cannot create " + pattern + ": " + std::strerror(errno)};
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  bool ok = done == bytes.size() && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok && ::rename(temp.data(), path.c_str()) == 0;
  if (!ok) {
    std::string why = std::strerror(errno);
    ::unlink(temp.data());
    return Error{"cannot write " + path + ": " + why};
  }
  return Status::success();
}

} // namespace

Result<ArchiveReport> export_cache(const std::string& dir, const std::string& archive, const std::string& key_file) {
  Result<FleetKey> key = fleet_key(key_file);
  if (!key)
    return Error{key.error()};
  Result<CacheContents> contents = inspect_cache(dir);
  if (!contents)
    return Error{contents.error()};
  ArchiveReport report;
  std::vector<std::string> signed_entries;
  for (const CacheEntryInfo& info : contents.value().entries) {
    if (!info.ok) {
      report.skipped.push_back(info.file + ": " + info.problem);
      continue;
    }
    Result<std::string> bytes = runtime::DiskCache::read_entry_file(dir + "/" + info.file);
    if (!bytes) {
      report.skipped.push_back(info.file + ": " + bytes.error());
      continue;
    }
    const std::string name = info.file.substr(0, info.file.size() - runtime::kEntrySuffix.size());
    signed_entries.push_back(key.value().sign(name, bytes.value()));
  }
  runtime::ByteWriter out;
  out.raw(kArchiveMagic);
  out.u32(kArchiveVersion);
  out.u32(static_cast<uint32_t>(signed_entries.size()));
  for (const std::string& entry : signed_entries) {
    out.u64(entry.size());
    out.raw(entry);
  }
  if (Status written = write_file_atomically(archive, out.bytes()); !written)
    return Error{written.error()};
  report.entries = signed_entries.size();
  return report;
}

Result<ArchiveReport> import_cache(const std::string& archive, const std::string& dir, const std::string& key_file,
                                   const RemoteCacheOptions* remote_options) {
  Result<FleetKey> key = fleet_key(key_file);
  if (!key)
    return Error{key.error()};
  if (Status usable = runtime::prepare_cache_dir(dir, true); !usable)
    return Error{"cannot use the cache directory: " + usable.error()};
  std::ifstream in(archive, std::ios::binary);
  if (!in)
    return Error{"cannot open " + archive};
  auto read_exact = [&](std::string& bytes, uint64_t size) {
    bytes.resize(static_cast<size_t>(size));
    return static_cast<bool>(in.read(bytes.data(), static_cast<std::streamsize>(size)));
  };
  std::string header;
  if (!read_exact(header, kArchiveMagic.size() + 8) || !header.starts_with(kArchiveMagic))
    return Error{archive + " is not a fusegen cache archive"};
  runtime::ByteReader head(std::string_view(header).substr(kArchiveMagic.size()));
  uint32_t version = 0, count = 0;
  head.u32(version);
  head.u32(count);
  if (version != kArchiveVersion)
    return Error{archive + " is a cache archive of version " + std::to_string(version) + " (expected " +
                 std::to_string(kArchiveVersion) + ")"};
  if (count > kMaxArchiveEntries)
    return Error{archive + " claims " + std::to_string(count) + " entries"};

  runtime::DiskCache disk(dir);
  runtime::Warnings warnings; // the remote cache's failures, once, on stderr
  std::shared_ptr<runtime::RemoteCache> remote;
  if (remote_options) {
    remote = runtime::open_remote_cache(*remote_options, warnings);
    if (!remote)
      return Error{"no usable remote cache: " + runtime::resolve_remote_cache(*remote_options).problem};
  }
  ArchiveReport report;
  for (uint32_t i = 0; i < count; ++i) {
    std::string size_bytes, value;
    uint64_t size = 0;
    if (!read_exact(size_bytes, 8) || !runtime::ByteReader(size_bytes).u64(size))
      return Error{archive + " is truncated at entry " + std::to_string(i + 1) + " of " + std::to_string(count)};
    if (size > kMaxSignedEntryBytes)
      return Error{archive + ": entry " + std::to_string(i + 1) + " claims " + std::to_string(size) + " bytes"};
    if (!read_exact(value, size))
      return Error{archive + " is truncated at entry " + std::to_string(i + 1) + " of " + std::to_string(count)};
    const std::string where = "entry " + std::to_string(i + 1);
    // The name it was signed under is the hash of the key inside: decoded
    // once to learn the key, then the signature checked over that name.
    if (value.size() < runtime::kSignedHeaderBytes) {
      report.skipped.push_back(where + ": not a signed entry");
      continue;
    }
    Result<runtime::CacheEntry> peek =
        runtime::decode_entry(std::string_view(value).substr(runtime::kSignedHeaderBytes));
    if (!peek) {
      report.skipped.push_back(where + ": " + peek.error());
      continue;
    }
    const std::string name = sha256_hex(peek.value().key_material);
    Result<std::string_view> verified = key.value().verify(name, value);
    if (!verified) {
      report.skipped.push_back(where + " (fusion '" + runtime::key_field(peek.value().key_material, "fusion") +
                               "'): " + verified.error());
      continue;
    }
    if (Status usable = runtime::check_entry_matches_key(peek.value()); !usable) {
      report.skipped.push_back(where + ": " + usable.error());
      continue;
    }
    if (Status stored = disk.store_as(name + std::string(runtime::kEntrySuffix), peek.value()); !stored)
      return Error{stored.error()};
    if (remote && remote->put_raw(name, value))
      ++report.published;
    ++report.entries;
  }
  if (remote)
    report.remote_failures = remote->failures();
  return report;
}

} // namespace fusegen
