// Resolving the remote cache's configuration: RemoteCacheOptions fields,
// else the environment (fusegen/RemoteCacheOptions.h lists the variables),
// else the defaults. Without a URL there is no remote tier and nothing is
// said; with a URL but no usable fleet key there is none either, and the
// reason is the error (a remote tier never loads unsigned entries).
#pragma once

#include "EntrySignature.h"
#include "RedisConnection.h"

#include "fusegen/RemoteCacheOptions.h"
#include "fusegen/Result.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fusegen::runtime {

inline constexpr std::chrono::milliseconds kDefaultRemoteTimeout{25};
inline constexpr uint64_t kDefaultRemoteMaxValueBytes = uint64_t{16} << 20;
inline constexpr std::chrono::milliseconds kDefaultRemoteLease{20000};
inline constexpr std::chrono::milliseconds kDefaultRemoteWait{30000};
inline constexpr std::chrono::milliseconds kDefaultRemoteRetry{30000};

struct RemoteCacheSettings {
  RedisAddress address;
  std::optional<FleetKey> key;
  std::chrono::milliseconds timeout = kDefaultRemoteTimeout;
  uint64_t max_value_bytes = kDefaultRemoteMaxValueBytes;
  std::chrono::milliseconds lease = kDefaultRemoteLease;
  std::chrono::milliseconds wait = kDefaultRemoteWait;
  std::chrono::milliseconds retry = kDefaultRemoteRetry;
};

struct ResolvedRemoteCache {
  std::optional<RemoteCacheSettings> settings; // none: no remote tier
  std::string problem;                         // why not, when a URL was given
  std::vector<std::string> notes;              // ignored environment values, for warnings
};
ResolvedRemoteCache resolve_remote_cache(const RemoteCacheOptions& options);

} // namespace fusegen::runtime
