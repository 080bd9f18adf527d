#include "RemoteCache.h"

#include "fusegen/Sha256.h"

#include <unistd.h>

#include <random>

namespace fusegen::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Atomic in Redis (a script runs alone): the lock is deleted only while it
// still holds our token, never a later holder's after our lease expired.
constexpr std::string_view kReleaseScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

std::string random_token() {
  // Unique per claim across a fleet: host-independent randomness plus pid.
  static thread_local std::mt19937_64 engine(std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32));
  return std::to_string(::getpid()) + "-" + std::to_string(engine()) + "-" + std::to_string(engine());
}

Status reply_error(const RedisReply& reply, const char* command) {
  if (reply.kind == RedisReply::Kind::Error)
    return Error{std::string(command) + " refused: " + reply.text};
  return Status::success();
}

} // namespace

RemoteCache::RemoteCache(RemoteCacheSettings settings, Warnings& warnings)
    : settings_(std::move(settings)), warnings_(warnings), rest_(settings_.retry) {}

std::string RemoteCache::name_of(const CacheKey& key) { return sha256_hex(key.material()); }

void RemoteCache::fail(const std::string& why) {
  ++failures_;
  connection_.reset();
  resting_until_ = Clock::now() + rest_;
  if (!warned_) {
    warned_ = true;
    warnings_.warn("the remote kernel cache " + describe() + " is not usable (" + why +
                   "); compiling locally, and not asking it again for " + std::to_string(rest_.count()) + " ms");
  }
  rest_ = std::min(rest_ * 2, settings_.retry * 8);
}

bool RemoteCache::with_store(const std::function<Status(RedisConnection&)>& operation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Clock::now() < resting_until_)
    return false;
  if (!connection_) {
    Result<std::unique_ptr<RedisConnection>> opened =
        RedisConnection::open(settings_.address, settings_.timeout, settings_.max_value_bytes + 1024);
    if (!opened) {
      fail(opened.error());
      return false;
    }
    connection_ = std::move(opened.value());
  }
  if (Status done = operation(*connection_); !done) {
    fail(done.error());
    return false;
  }
  rest_ = settings_.retry; // answered: a later failure rests the first interval again
  return true;
}

RemoteCache::Fetched RemoteCache::check_value(const FleetKey& fleet_key, const CacheKey& key, std::string_view value) {
  Fetched out;
  out.status = Lookup::Bad;
  Result<std::string_view> entry_bytes = fleet_key.verify(name_of(key), value);
  if (!entry_bytes) {
    out.problem = entry_bytes.error();
    return out;
  }
  Result<CacheEntry> entry = decode_entry(entry_bytes.value());
  if (!entry) {
    out.problem = entry.error();
    return out;
  }
  const std::string expected = key.material();
  if (entry.value().key_material != expected) {
    out.problem = "written for another key: " + describe_key_difference(entry.value().key_material, expected);
    return out;
  }
  if (Status usable = check_entry_matches_key(entry.value()); !usable) {
    out.problem = usable.error();
    return out;
  }
  out.status = Lookup::Hit;
  out.entry = std::move(entry.value());
  return out;
}

RemoteCache::Fetched RemoteCache::fetch(const CacheKey& key) {
  const std::string name = std::string(kRemoteEntryPrefix) + name_of(key);
  // At most max + 1 bytes are sent: one more than allowed says "too large"
  // without the rest of the value ever crossing the network.
  const std::string last = std::to_string(settings_.max_value_bytes);
  RedisReply reply;
  bool answered = with_store([&](RedisConnection& connection) -> Status {
    Result<RedisReply> got = connection.command({"GETRANGE", name, "0", last});
    if (!got)
      return Error{got.error()};
    reply = std::move(got.value());
    return Status::success();
  });
  Fetched out;
  if (!answered) {
    out.status = Lookup::Unavailable;
    return out;
  }
  if (reply.kind == RedisReply::Kind::Error) { // e.g. WRONGTYPE: something else sits under the name
    out.status = Lookup::Bad;
    out.problem = "the store refused to read it: " + reply.text;
    return out;
  }
  if (reply.kind != RedisReply::Kind::String || reply.text.empty())
    return out; // Miss (GETRANGE answers "" for a missing key)
  if (reply.text.size() > settings_.max_value_bytes) {
    out.status = Lookup::Bad;
    out.problem = "larger than the limit of " + std::to_string(settings_.max_value_bytes) +
                  " bytes (FUSEGEN_REMOTE_CACHE_MAX_BYTES)";
    return out;
  }
  return check_value(*settings_.key, key, reply.text);
}

bool RemoteCache::resting() {
  std::lock_guard<std::mutex> lock(mutex_);
  return Clock::now() < resting_until_;
}

bool RemoteCache::publish(const CacheKey& key, const CacheEntry& entry) {
  // Encoding and signing an entry hash it twice (a few ms for a large one):
  // not for a store that is resting anyway.
  if (resting())
    return false;
  const std::string name = name_of(key);
  std::string value = settings_.key->sign(name, encode_entry(entry));
  if (value.size() > settings_.max_value_bytes) {
    warnings_.warn("not storing fusion '" + key.fusion + "' at " + dims_text(key.dims) +
                   " in the remote cache: " + std::to_string(value.size()) + " bytes is over its limit of " +
                   std::to_string(settings_.max_value_bytes) + " (FUSEGEN_REMOTE_CACHE_MAX_BYTES)");
    return false;
  }
  return put_raw(name, value);
}

bool RemoteCache::put_raw(const std::string& name, const std::string& value) {
  const std::string entry_name = std::string(kRemoteEntryPrefix) + name;
  return with_store([&](RedisConnection& connection) -> Status {
    Result<RedisReply> reply = connection.command({"SET", entry_name, value});
    if (!reply)
      return Error{reply.error()};
    return reply_error(reply.value(), "SET"); // e.g. OOM from a full store
  });
}

bool RemoteCache::contains(const CacheKey& key) {
  const std::string name = std::string(kRemoteEntryPrefix) + name_of(key);
  bool present = false;
  with_store([&](RedisConnection& connection) -> Status {
    Result<RedisReply> reply = connection.command({"EXISTS", name});
    if (!reply)
      return Error{reply.error()};
    present = reply.value().kind == RedisReply::Kind::Integer && reply.value().integer > 0;
    return reply_error(reply.value(), "EXISTS");
  });
  return present;
}

RemoteCache::Claim RemoteCache::claim(const CacheKey& key, std::string& token) {
  const std::string name = std::string(kRemoteLockPrefix) + name_of(key);
  token = random_token();
  const std::string lease = std::to_string(settings_.lease.count());
  bool won = false;
  bool answered = with_store([&](RedisConnection& connection) -> Status {
    Result<RedisReply> reply = connection.command({"SET", name, token, "NX", "PX", lease});
    if (!reply)
      return Error{reply.error()};
    won = reply.value().kind == RedisReply::Kind::Status; // "OK"; Nil when another holds it
    return reply_error(reply.value(), "SET NX");
  });
  if (!answered)
    return Claim::Unavailable;
  return won ? Claim::Won : Claim::Held;
}

void RemoteCache::release(const CacheKey& key, const std::string& token) {
  const std::string name = std::string(kRemoteLockPrefix) + name_of(key);
  with_store([&](RedisConnection& connection) -> Status {
    Result<RedisReply> reply = connection.command({"EVAL", kReleaseScript, "1", name, token});
    if (!reply)
      return Error{reply.error()};
    return reply_error(reply.value(), "EVAL");
  });
}

std::shared_ptr<RemoteCache> open_remote_cache(const RemoteCacheOptions& options, Warnings& warnings) {
  ResolvedRemoteCache resolved = resolve_remote_cache(options);
  for (const std::string& note : resolved.notes)
    warnings.warn(note);
  if (!resolved.settings) {
    if (!resolved.problem.empty())
      warnings.warn(resolved.problem);
    return nullptr;
  }
  return std::make_shared<RemoteCache>(std::move(*resolved.settings), warnings);
}

} // namespace fusegen::runtime
