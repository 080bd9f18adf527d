// The remote tier of the kernel cache: signed disk-cache entries in a Redis
// store shared by a fleet (EntrySignature.h), behind the memory and disk
// caches. Keys are the disk cache's key (CacheKey.h) hashed, under a
// versioned prefix:
//
//   fusegen:v1:entry:<sha256 of key material>   signed entry
//   fusegen:v1:lock:<sha256 of key material>    single-flight lease (SingleFlight.h)
//
// Never worse than compiling locally: every operation is bounded by the
// connection's timeouts (RedisConnection.h); the first failure (down, slow,
// full, garbage) is one warning, and the store is then left alone for the
// retry interval, doubling while it keeps failing (at most 8 intervals), so
// that later calls do not pay the timeout again. The connection is opened on
// first use: a process whose disk cache has everything never connects.
// Thread-safe: one connection, one operation at a time.
#pragma once

#include "CacheEntry.h"
#include "CacheKey.h"
#include "RedisConnection.h"
#include "RemoteCacheSettings.h"
#include "Warnings.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace fusegen::runtime {

inline constexpr std::string_view kRemoteEntryPrefix = "fusegen:v1:entry:";
inline constexpr std::string_view kRemoteLockPrefix = "fusegen:v1:lock:";

class RemoteCache {
public:
  // `warnings` must outlive the cache.
  RemoteCache(RemoteCacheSettings settings, Warnings& warnings);

  enum class Lookup { Hit, Miss, Bad, Unavailable };
  struct Fetched {
    Lookup status = Lookup::Miss;
    CacheEntry entry;    // for Hit: signature, format and key checked
    std::string problem; // for Bad
  };
  Fetched fetch(const CacheKey& key);
  // Signs and stores `entry`; false if the store did not take it (too large,
  // unavailable: the reason was warned about once).
  bool publish(const CacheKey& key, const CacheEntry& entry);
  // Whether the store holds a value under the key (not checked); false when
  // unavailable.
  bool contains(const CacheKey& key);

  enum class Claim { Won, Held, Unavailable };
  // SET lock NX PX lease with a fresh random token.
  Claim claim(const CacheKey& key, std::string& token);
  // Deletes the lock only if it still holds `token` (one atomic script).
  void release(const CacheKey& key, const std::string& token);

  // Raw access for tools and tests: the signed value under the key's name.
  bool put_raw(const std::string& name, const std::string& value);

  const RemoteCacheSettings& settings() const { return settings_; }
  std::string describe() const { return settings_.address.text(); }
  uint64_t failures() const { return failures_.load(); }

  static std::string name_of(const CacheKey& key); // sha256 of the key material
  // Verifies a signed value stored under `name` and decodes it for `key`.
  static Fetched check_value(const FleetKey& fleet_key, const CacheKey& key, std::string_view value);

private:
  // Runs `operation` on the connection unless the store is resting after a
  // failure; false (and the store rests) when it fails.
  bool with_store(const std::function<Status(RedisConnection&)>& operation);
  bool resting(); // after a failure, for the retry interval
  void fail(const std::string& why);

  const RemoteCacheSettings settings_;
  Warnings& warnings_;
  std::mutex mutex_;
  std::unique_ptr<RedisConnection> connection_;
  std::chrono::steady_clock::time_point resting_until_{};
  std::chrono::milliseconds rest_;
  bool warned_ = false;
  std::atomic<uint64_t> failures_{0};
};

// The remote cache for these options, or null when there is none; why not
// (a URL given without a usable key, a bad URL) is a warning.
std::shared_ptr<RemoteCache> open_remote_cache(const RemoteCacheOptions& options, Warnings& warnings);

} // namespace fusegen::runtime
