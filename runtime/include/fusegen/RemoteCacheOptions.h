// The remote kernel cache: a Redis store shared by a fleet of processes,
// behind the memory and disk caches (docs/jit-api.md, "The remote cache").
// Every field left at its default is taken from the environment:
//
//   FUSEGEN_REMOTE_CACHE               redis://[[user]:password@]host:port[/db]
//   FUSEGEN_CACHE_KEY_FILE             the fleet's HMAC key (a file only its owner can read)
//   FUSEGEN_REMOTE_CACHE_TIMEOUT_MS    connect, read and write timeout
//   FUSEGEN_REMOTE_CACHE_MAX_BYTES     the largest value read or written
//   FUSEGEN_REMOTE_CACHE_LEASE_MS      how long a compiling process holds a key
//   FUSEGEN_REMOTE_CACHE_WAIT_MS       how long others wait for its entry
//   FUSEGEN_REMOTE_CACHE_RETRY_MS      how long a failed store is left alone
//
// Without a URL, or without a usable key, there is no remote tier.
#pragma once

#include <cstdint>
#include <string>

namespace fusegen {

struct RemoteCacheOptions {
  std::string url;      // empty: $FUSEGEN_REMOTE_CACHE; "off": none, whatever the environment says
  std::string key_file; // empty: $FUSEGEN_CACHE_KEY_FILE
  // 0: the environment's value, else the default in brackets.
  int timeout_ms = 0;           // [25] each connect, and each read or write on the socket
  uint64_t max_value_bytes = 0; // [16 MiB] larger values are neither read nor written
  int lease_ms = 0;             // [20000] a compiling process's claim on a key; expires if it dies
  int wait_ms = 0;              // [30000] how long a process waits for another's compile
  int retry_ms = 0;             // [30000] after a failure, the store is not asked again for this long
};

} // namespace fusegen
