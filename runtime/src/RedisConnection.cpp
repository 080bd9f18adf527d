#include "RedisConnection.h"

#include <hiredis/hiredis.h>

#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cstring>

namespace fusegen::runtime {
namespace {

using Clock = std::chrono::steady_clock;

timeval to_timeval(std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  return tv;
}

// hiredis writes to the socket with write(2): a server that closed the
// connection would raise SIGPIPE, whose default action ends the process.
// SIGPIPE is blocked on this thread around each command, and one it raised
// is taken off the pending set before the mask is restored.
class SigpipeBlocked {
public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    already_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    sigset_t pending;
    sigemptyset(&pending);
    if (!already_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      timespec zero{};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool already_pending_ = false;
};

bool parse_number(std::string_view text, int& value, int low, int high) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && value >= low && value <= high;
}

RedisReply convert(const redisReply& reply) {
  RedisReply out;
  switch (reply.type) {
  case REDIS_REPLY_NIL:
    out.kind = RedisReply::Kind::Nil;
    break;
  case REDIS_REPLY_STRING:
    out.kind = RedisReply::Kind::String;
    out.text.assign(reply.str, reply.len);
    break;
  case REDIS_REPLY_STATUS:
    out.kind = RedisReply::Kind::Status;
    out.text.assign(reply.str, reply.len);
    break;
  case REDIS_REPLY_ERROR:
    out.kind = RedisReply::Kind::Error;
    out.text.assign(reply.str, reply.len);
    break;
  case REDIS_REPLY_INTEGER:
    out.kind = RedisReply::Kind::Integer;
    out.integer = reply.integer;
    break;
  default:
    out.kind = RedisReply::Kind::Other;
    break;
  }
  return out;
}

} // namespace

std::string RedisAddress::text() const {
  std::string auth = password.empty() ? "" : user + ":***@";
  return "redis://" + auth + host + ":" + std::to_string(port) + (db ? "/" + std::to_string(db) : "");
}

Result<RedisAddress> parse_redis_url(const std::string& url) {
  const std::string_view scheme = "redis://";
  auto bad = [&](const std::string& why) {
    return Error{"bad remote cache URL '" + url + "': " + why + " (expected redis://host:port[/db])"};
  };
  if (!std::string_view(url).starts_with(scheme))
    return bad("not a redis:// URL");
  std::string_view rest = std::string_view(url).substr(scheme.size());
  RedisAddress address;
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos)
      return bad("credentials must be user:password or :password");
    address.user = std::string(userinfo.substr(0, colon));
    address.password = std::string(userinfo.substr(colon + 1));
  }
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty() && !parse_number(db, address.db, 0, 1 << 20))
      return bad("the database must be a number");
  }
  std::string_view host = rest;
  if (!host.empty() && host.front() == '[') { // [::1]:6379
    size_t close = host.find(']');
    if (close == std::string_view::npos)
      return bad("unclosed [");
    address.host = std::string(host.substr(1, close - 1));
    rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !parse_number(rest.substr(1), address.port, 1, 65535)))
      return bad("the port must be a number from 1 to 65535");
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    address.host = std::string(host.substr(0, colon));
    if (!parse_number(host.substr(colon + 1), address.port, 1, 65535))
      return bad("the port must be a number from 1 to 65535");
  } else {
    address.host = std::string(host);
  }
  if (address.host.empty())
    return bad("no host");
  return address;
}

RedisConnection::RedisConnection(redisContext* context, std::chrono::milliseconds timeout, uint64_t max_reply_bytes)
    : context_(context), timeout_(timeout), max_reply_bytes_(max_reply_bytes) {}

RedisConnection::~RedisConnection() {
  if (context_)
    redisFree(context_);
}

Result<std::unique_ptr<RedisConnection>>
RedisConnection::open(const RedisAddress& address, std::chrono::milliseconds timeout, uint64_t max_reply_bytes) {
  // Host names are resolved by getaddrinfo inside hiredis, which no timeout
  // bounds: fleets should name the store by address (docs/reliability.md).
  redisContext* context = redisConnectWithTimeout(address.host.c_str(), address.port, to_timeval(timeout));
  if (!context)
    return Error{"cannot connect to " + address.text() + ": out of memory"};
  if (context->err) {
    std::string why = context->errstr;
    redisFree(context);
    return Error{"cannot connect to " + address.text() + ": " + why};
  }
  if (redisSetTimeout(context, to_timeval(timeout)) != REDIS_OK) {
    std::string why = context->errstr;
    redisFree(context);
    return Error{"cannot set timeouts on the connection to " + address.text() + ": " + why};
  }
  std::unique_ptr<RedisConnection> connection(new RedisConnection(context, timeout, max_reply_bytes));
  auto setup = [&](const std::vector<std::string_view>& args, const char* what) -> Status {
    Result<RedisReply> reply = connection->command(args);
    if (!reply)
      return Error{reply.error()};
    if (reply.value().kind == RedisReply::Kind::Error)
      return Error{std::string(what) + " refused by " + address.text() + ": " + reply.value().text};
    return Status::success();
  };
  if (!address.password.empty()) {
    Status auth = address.user.empty() ? setup({"AUTH", address.password}, "AUTH")
                                       : setup({"AUTH", address.user, address.password}, "AUTH");
    if (!auth)
      return Error{auth.error()};
  }
  if (address.db != 0) {
    const std::string db = std::to_string(address.db);
    if (Status selected = setup({"SELECT", db}, "SELECT"); !selected)
      return Error{selected.error()};
  }
  return connection;
}

Error RedisConnection::failure(const std::string& what) {
  broken_ = true;
  return Error{what};
}

Result<RedisReply> RedisConnection::command(const std::vector<std::string_view>& args) {
  if (broken_)
    return Error{"the connection failed before"};
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  SigpipeBlocked no_sigpipe;
  const Clock::time_point deadline = Clock::now() + 4 * timeout_;
  if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK)
    return failure(std::string("cannot queue a command: ") + context_->errstr);
  for (int done = 0; !done;) {
    if (redisBufferWrite(context_, &done) != REDIS_OK)
      return failure(std::string("write failed: ") + context_->errstr);
    if (!done && Clock::now() > deadline)
      return failure("timed out writing a command");
  }
  void* raw = nullptr;
  while (true) {
    if (redisReaderGetReply(context_->reader, &raw) != REDIS_OK)
      return failure(std::string("not a Redis reply: ") + context_->reader->errstr);
    if (raw)
      break;
    // What is buffered and not yet parsed: a reply growing past the bound
    // is refused before more of it is read.
    if (context_->reader->len > max_reply_bytes_ + 4096)
      return failure("a reply larger than " + std::to_string(max_reply_bytes_) + " bytes");
    if (Clock::now() > deadline)
      return failure("timed out reading a reply");
    if (redisBufferRead(context_) != REDIS_OK)
      return failure(std::string("read failed: ") + context_->errstr);
  }
  redisReply* reply = static_cast<redisReply*>(raw);
  RedisReply out = convert(*reply);
  freeReplyObject(reply);
  return out;
}

} // namespace fusegen::runtime
