// Compiling each kernel once per fleet. A process that misses a key in its
// own caches asks the remote store; on a miss it tries to claim the key's
// lease (SET NX PX). The one that wins looks for the entry once more (the
// previous holder may have published and released since the first look),
// then compiles, publishes the entry and releases the lease (in that order,
// so that a waiter never sees neither);
// the others poll for the entry, and each poll that still finds none tries
// the claim again, so that when a holder dies its lease expires and one
// waiter takes over. A waiter gives up after the wait bound and compiles
// itself: waiting is never unbounded, and a slow or dead holder costs the
// others at most that bound. Two holders can still compile the same key when
// a compile outlasts its lease (the lease is not renewed): the entries are
// the same, so the cost is a compile, not a wrong kernel.
#pragma once

#include "RemoteCache.h"

#include <optional>
#include <string>

namespace fusegen::runtime {

struct FleetAnswer {
  std::optional<CacheEntry> entry; // another process's, verified: load it
  std::string token;               // the lease this process won: compile, publish, release
  bool waited = false;             // polled for another's compile
  std::string problem;             // a bad stored entry (compile locally, then publish over it)
};

// Never throws; an unavailable store answers "compile locally".
FleetAnswer fetch_or_claim(RemoteCache& remote, const CacheKey& key);

// Releases a won lease when destroyed (after the entry was published, or
// when the compile threw, so that the waiters need not wait out the lease).
class LeaseRelease {
public:
  LeaseRelease(RemoteCache* remote, const CacheKey& key, std::string token)
      : remote_(remote), key_(key), token_(std::move(token)) {}
  ~LeaseRelease() {
    if (remote_ && !token_.empty())
      remote_->release(key_, token_);
  }
  LeaseRelease(const LeaseRelease&) = delete;
  LeaseRelease& operator=(const LeaseRelease&) = delete;

private:
  RemoteCache* remote_;
  const CacheKey& key_;
  std::string token_;
};

} // namespace fusegen::runtime
