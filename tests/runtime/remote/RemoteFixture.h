// The fixture of the remote cache tests: a redis-server of its own
// (support/RedisServer.h), a fleet key, the small elementwise spec, and ways
// to run `fusegen` against them and to look into the store. Without
// redis-server every test skips, saying "skipped: no redis-server".
#pragma once

#include "support/RedisServer.h"
#include "support/TestSupport.h"

#include "DiskCache.h"
#include "RedisConnection.h"
#include "RemoteCache.h"

#include "fusegen/CacheAdmin.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace fusegen::testing {

using Clock = std::chrono::steady_clock;

inline std::string shell_quoted(const std::string& text) { return "'" + text + "'"; }

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

// The fleet key: a private file (mode 0600).
inline std::string write_key(const TempDir& dir, const std::string& name, const std::string& key) {
  const std::string path = dir.file(name);
  testing::write_text(path, key + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

class RemoteCacheFixture : public ::testing::Test {
protected:
  void SetUp() override {
    if (testing::redis_server_path().empty())
      GTEST_SKIP() << "skipped: no redis-server";
    server_ = std::make_unique<RedisServer>();
    ASSERT_TRUE(server_->started()) << server_->error();
    key_ = write_key(work_, "fleet.key", "0123456789abcdef0123456789abcdef");
    spec_ = work_.file("act.fg");
    testing::write_text(spec_, testing::kElementwiseSpec);
  }

  // `fusegen ARGS` with its own disk cache `cache_dir`, the server and the
  // fleet key in the environment, and `env` ("NAME=value ...") added.
  CommandResult fusegen(const std::string& cache_dir, const std::string& args, const std::string& env = "") {
    return testing::run_command(
        "env -u FUSEGEN_CACHE -u FUSEGEN_REMOTE_CACHE_TIMEOUT_MS FUSEGEN_CACHE_DIR=" + shell_quoted(cache_dir) +
        " FUSEGEN_REMOTE_CACHE=" + server_->url() + " FUSEGEN_CACHE_KEY_FILE=" + shell_quoted(key_) + " " + env +
        " timeout 300 " + shell_quoted(testing::cli_path()) + " " + args);
  }
  CommandResult warmup(const std::string& cache_dir, const std::string& dims, const std::string& env = "") {
    return fusegen(cache_dir, "warmup " + shell_quoted(spec_) + " --dims " + dims, env);
  }

  // A direct connection to the store, to look at or change what it holds.
  std::unique_ptr<runtime::RedisConnection> store() {
    runtime::RedisAddress address;
    address.host = "127.0.0.1";
    address.port = server_->port();
    auto connection = runtime::RedisConnection::open(address, std::chrono::milliseconds(2000), 64 << 20);
    EXPECT_TRUE(connection) << connection.error();
    return connection ? std::move(connection.value()) : nullptr;
  }
  std::vector<std::string> entry_names() {
    // KEYS is fine for a test's handful (RedisConnection has no array replies).
    std::vector<std::string> names;
    std::string listing = server_->cli("--raw KEYS '" + std::string(runtime::kRemoteEntryPrefix) + "*'");
    std::stringstream lines(listing);
    std::string line;
    while (std::getline(lines, line))
      if (!line.empty())
        names.push_back(line);
    std::sort(names.begin(), names.end());
    return names;
  }
  // The N=32 kernel published, then its entry deleted and its key leased to
  // `holder` for `lease_ms`: as a process that claimed the key and is still
  // (or was, until it died) compiling it. The key's hash, or nullopt.
  std::optional<std::string> entry_leased_to(const std::string& holder, int lease_ms) {
    TempDir publisher;
    EXPECT_EQ(warmup(publisher.path(), "N=32").exit_code, 0);
    std::vector<std::string> names = entry_names();
    EXPECT_EQ(names.size(), 1u);
    if (names.size() != 1)
      return std::nullopt;
    std::string hash = names[0].substr(runtime::kRemoteEntryPrefix.size());
    EXPECT_EQ(server_->cli("DEL " + names[0]), "1\n");
    EXPECT_EQ(server_->cli("SET " + std::string(runtime::kRemoteLockPrefix) + hash + " " + holder + " PX " +
                           std::to_string(lease_ms)),
              "OK\n");
    return hash;
  }
  std::string get(const std::string& name) {
    auto connection = store();
    auto reply = connection->command({"GET", name});
    EXPECT_TRUE(reply);
    return reply ? reply.value().text : "";
  }
  void set(const std::string& name, const std::string& value) {
    auto connection = store();
    auto reply = connection->command({"SET", name, value});
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply.value().text, "OK");
  }

  TempDir work_;
  std::unique_ptr<RedisServer> server_;
  std::string key_, spec_;
};

} // namespace fusegen::testing
