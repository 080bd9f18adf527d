// One blocking connection to a Redis server, through hiredis, with every
// wait bounded: the connect, each socket read and write (the timeout), and
// each whole command (four timeouts), so that a server that is down, paused
// or trickling bytes costs at most that. A reply larger than a bound is
// refused while it is being read, and anything but the Redis protocol is a
// protocol error. After any failure the connection is unusable: the caller
// drops it and opens another later.
#pragma once

#include "fusegen/Result.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace fusegen::runtime {

// redis://[[user]:password@]host[:port][/db]
struct RedisAddress {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;     // empty: AUTH with the password alone (or no AUTH)
  std::string password; // empty: no AUTH
  // The URL without the password, for messages.
  std::string text() const;
};
Result<RedisAddress> parse_redis_url(const std::string& url);

// What a command answered.
struct RedisReply {
  enum class Kind { Nil, String, Integer, Status, Error, Other };
  Kind kind = Kind::Nil;
  std::string text; // String, Status, Error
  long long integer = 0;
};

class RedisConnection {
public:
  // Connects, authenticates and selects the database. `max_reply_bytes`
  // bounds what one reply may buffer.
  static Result<std::unique_ptr<RedisConnection>> open(const RedisAddress& address, std::chrono::milliseconds timeout,
                                                       uint64_t max_reply_bytes);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends one command (binary-safe arguments) and reads its reply. An
  // error here (I/O, timeout, protocol) leaves the connection unusable; an
  // error *reply* (e.g. OOM from a full server) is a RedisReply of kind Error.
  Result<RedisReply> command(const std::vector<std::string_view>& args);

private:
  RedisConnection(redisContext* context, std::chrono::milliseconds timeout, uint64_t max_reply_bytes);
  Error failure(const std::string& what);

  redisContext* context_;
  std::chrono::milliseconds timeout_;
  uint64_t max_reply_bytes_;
  bool broken_ = false;
};

} // namespace fusegen::runtime
