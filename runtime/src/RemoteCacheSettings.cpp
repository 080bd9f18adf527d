#include "RemoteCacheSettings.h"

#include <charconv>
#include <cstdlib>

namespace fusegen::runtime {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The option if set, else the environment variable if it is a number in
// [low, high], else the default (an unusable value is noted).
template <class T> T pick(T option, const char* variable, T fallback, T low, T high, std::vector<std::string>& notes) {
  if (option > 0)
    return std::min(std::max(option, low), high);
  const std::string text = env(variable);
  if (text.empty())
    return fallback;
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    notes.push_back("ignoring " + std::string(variable) + "='" + text + "' (expected a number from " +
                    std::to_string(low) + " to " + std::to_string(high) + ")");
    return fallback;
  }
  return value;
}

std::chrono::milliseconds pick_ms(int option, const char* variable, std::chrono::milliseconds fallback, int low,
                                  int high, std::vector<std::string>& notes) {
  return std::chrono::milliseconds(pick<int>(option, variable, static_cast<int>(fallback.count()), low, high, notes));
}

} // namespace

ResolvedRemoteCache resolve_remote_cache(const RemoteCacheOptions& options) {
  ResolvedRemoteCache resolved;
  const std::string url = options.url.empty() ? env("FUSEGEN_REMOTE_CACHE") : options.url;
  if (url.empty() || url == "off")
    return resolved;
  Result<RedisAddress> address = parse_redis_url(url);
  if (!address) {
    resolved.problem = address.error();
    return resolved;
  }
  const std::string key_file = options.key_file.empty() ? env("FUSEGEN_CACHE_KEY_FILE") : options.key_file;
  if (key_file.empty()) {
    resolved.problem = "no fleet key to sign and check entries with (FUSEGEN_CACHE_KEY_FILE names a file only you "
                       "can read); unsigned entries are never loaded, so the remote cache " +
                       address.value().text() + " is off";
    return resolved;
  }
  Result<FleetKey> key = FleetKey::load(key_file);
  if (!key) {
    resolved.problem = key.error() + "; the remote cache " + address.value().text() + " is off";
    return resolved;
  }
  RemoteCacheSettings settings;
  settings.address = std::move(address.value());
  settings.key = std::move(key.value());
  std::vector<std::string>& notes = resolved.notes;
  settings.timeout =
      pick_ms(options.timeout_ms, "FUSEGEN_REMOTE_CACHE_TIMEOUT_MS", kDefaultRemoteTimeout, 1, 60000, notes);
  settings.max_value_bytes = pick<uint64_t>(options.max_value_bytes, "FUSEGEN_REMOTE_CACHE_MAX_BYTES",
                                            kDefaultRemoteMaxValueBytes, 1024, uint64_t{512} << 20, notes);
  settings.lease = pick_ms(options.lease_ms, "FUSEGEN_REMOTE_CACHE_LEASE_MS", kDefaultRemoteLease, 10, 3600000, notes);
  settings.wait = pick_ms(options.wait_ms, "FUSEGEN_REMOTE_CACHE_WAIT_MS", kDefaultRemoteWait, 0, 3600000, notes);
  settings.retry = pick_ms(options.retry_ms, "FUSEGEN_REMOTE_CACHE_RETRY_MS", kDefaultRemoteRetry, 1, 3600000, notes);
  resolved.settings = std::move(settings);
  return resolved;
}

} // namespace fusegen::runtime
