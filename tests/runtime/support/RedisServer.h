// A real redis-server for the remote cache tests, on a free localhost port,
// with no persistence (--save '' --appendonly no) in a temporary directory;
// stopped (SIGKILL) when destroyed. Tests kill, pause (SIGSTOP), resume and
// restart it on the same port. Where redis-server is not installed the tests
// skip and say "skipped: no redis-server" (CI installs it:
// scripts/install-deps.sh).
#pragma once

#include "support/TestSupport.h"

#include <sys/types.h>

#include <memory>
#include <string>

namespace fusegen::testing {

// The path of redis-server, or "" when there is none.
std::string redis_server_path();

class RedisServer {
public:
  // Starts a server; `started()` says whether it answers.
  explicit RedisServer(const std::string& extra_args = "");
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool started() const { return pid_ > 0; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  void kill();    // SIGKILL, and reaped
  void pause();   // SIGSTOP: connections are accepted by the kernel, nothing answers
  void resume();  // SIGCONT
  bool restart(); // a fresh, empty server on the same port

  // A command on a fresh connection (redis-cli's reply text), for tests that
  // look at or change the store directly; "" on failure.
  std::string cli(const std::string& args) const;

private:
  bool start();
  TempDir dir_;
  std::string extra_args_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string error_;
};

} // namespace fusegen::testing
