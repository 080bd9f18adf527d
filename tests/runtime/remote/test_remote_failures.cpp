// The remote cache is never worse than compiling locally: a store that is
// dead, paused (SIGSTOP), killed mid-run or restarted costs one warning and
// a bounded wait, and compiling goes on; a value over the size limit is
// neither loaded nor written; without a usable fleet key there is no remote
// tier at all.
#include "remote/RemoteFixture.h"
#include "support/ChildProcess.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <thread>

namespace fusegen {
namespace {

using namespace fusegen::testing;
using RemoteFailures = RemoteCacheFixture;

// A dead store (nothing listening) costs one warning; the disk cache keeps
// working alone. One failed operation in all: the store then rests.
TEST_F(RemoteFailures, DeadStoreIsOneWarningAndLocalCompiles) {
  TempDir cache;
  server_->kill();
  const Clock::time_point start = Clock::now();
  CommandResult run = warmup(cache.path(), "N=8,16,24");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("3 compiled, 0 already cached, 0 failed"), std::string::npos) << run.output;
  EXPECT_EQ(count_of(run.output, "fusegen: warning"), 1u) << run.output;
  EXPECT_NE(run.output.find("is not usable (cannot connect to"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(", 1 failed operations"), std::string::npos) << run.output;
  EXPECT_LT(seconds_since(start), 120.0);
  CommandResult again = warmup(cache.path(), "N=8,16,24");
  EXPECT_NE(again.output.find("0 compiled, 3 already cached"), std::string::npos) << again.output;
}

// A paused store accepts connections (the kernel does) and never answers:
// one timeout, one warning, then no more waiting on it in that process.
TEST_F(RemoteFailures, PausedStoreCostsOneTimeoutThenResumesForNewProcesses) {
  TempDir paused_cache, resumed_cache, later_cache;
  server_->pause();
  const Clock::time_point start = Clock::now();
  CommandResult run = warmup(paused_cache.path(), "N=8,16,24,32", "FUSEGEN_REMOTE_CACHE_TIMEOUT_MS=50");
  const double took = seconds_since(start);
  server_->resume();
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("4 compiled"), std::string::npos) << run.output;
  EXPECT_EQ(count_of(run.output, "fusegen: warning"), 1u) << run.output;
  EXPECT_NE(run.output.find(", 1 failed operations"), std::string::npos) << run.output;
  EXPECT_LT(took, 120.0);

  // Resumed: a new process uses the store again.
  CommandResult after = warmup(resumed_cache.path(), "N=8,16,24,32");
  ASSERT_EQ(after.exit_code, 0) << after.output;
  EXPECT_NE(after.output.find(": 0 fetched, 4 published"), std::string::npos) << after.output;
  CommandResult later = warmup(later_cache.path(), "N=8,16,24,32");
  EXPECT_NE(later.output.find(": 4 fetched"), std::string::npos) << later.output;
}

// Within one process, a store that comes back is used again once the retry
// interval has passed.
TEST_F(RemoteFailures, OneProcessUsesTheStoreAgainAfterTheRetryInterval) {
  TempDir cache, other;
  server_->pause();
  // The client asks for 16 values of N (well over a second of compiling);
  // a short retry interval, and the store resumed while it compiles.
  Child client({FUSEGEN_CACHE_CLIENT_PATH, "--dir", cache.path(), "--dims",
                "8,16,24,32,40,48,56,64,72,80,88,96,104,112,120,128", "--remote", server_->url(), "--key-file", key_},
               {"FUSEGEN_REMOTE_CACHE_TIMEOUT_MS=50", "FUSEGEN_REMOTE_CACHE_RETRY_MS=100"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server_->resume();
  ChildResult result = client.wait();
  ASSERT_EQ(result.exit_code, 0) << result.describe();
  EXPECT_NE(result.output.find("compiled=16"), std::string::npos) << result.output;
  EXPECT_EQ(count_of(result.output, "fusegen: warning"), 1u) << result.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(result.output, m, std::regex("remote: loads=0 writes=(\\d+)"))) << result.output;
  EXPECT_GE(std::stoi(m[1]), 1) << "never used the store again: " << result.output;
}

// Killed in the middle of a fleet's run (once the store holds 3 of 24
// entries): every process finishes with the same kernels, each warned once;
// a restarted (empty) store is filled again.
TEST_F(RemoteFailures, StoreKilledMidRunAndRestarted) {
  std::string dims;
  for (int n = 8; n <= 192; n += 8)
    dims += (dims.empty() ? "" : ",") + std::to_string(n);
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < 4; ++i) {
    dirs.push_back(std::make_unique<TempDir>());
    children.push_back(std::make_unique<Child>(
        std::vector<std::string>{FUSEGEN_CACHE_CLIENT_PATH, "--dir", dirs.back()->path(), "--dims", dims, "--seed",
                                 std::to_string(i * 6), "--remote", server_->url(), "--key-file", key_},
        std::vector<std::string>{"FUSEGEN_REMOTE_CACHE_WAIT_MS=60000"}));
  }
  const Clock::time_point start = Clock::now();
  while (entry_names().size() < 3 && seconds_since(start) < 120)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server_->kill();
  std::map<std::string, std::string> images; // "N=..." -> the image every process must agree on
  static const std::regex image("image (N=\\d+) ([0-9a-f]{64})");
  for (auto& child : children) {
    ChildResult result = child->wait();
    ASSERT_EQ(result.exit_code, 0) << result.describe();
    EXPECT_EQ(count_of(result.output, "fusegen: warning"), 1u) << result.output;
    EXPECT_NE(result.output.find("is not usable"), std::string::npos) << result.output;
    for (auto it = std::sregex_iterator(result.output.begin(), result.output.end(), image);
         it != std::sregex_iterator(); ++it) {
      auto [known, first] = images.emplace((*it)[1], (*it)[2]);
      EXPECT_EQ(known->second, (*it)[2].str()) << (*it)[1];
    }
  }
  EXPECT_EQ(images.size(), 24u);

  ASSERT_TRUE(server_->restart()) << server_->error();
  TempDir first, second;
  CommandResult refill = warmup(first.path(), "N=8,16");
  ASSERT_EQ(refill.exit_code, 0) << refill.output;
  EXPECT_NE(refill.output.find(": 0 fetched, 2 published"), std::string::npos) << refill.output;
  CommandResult take = warmup(second.path(), "N=8,16");
  EXPECT_NE(take.output.find(": 2 fetched"), std::string::npos) << take.output;
}

// Values over FUSEGEN_REMOTE_CACHE_MAX_BYTES are refused on read (without
// reading past the limit) and not written.
TEST_F(RemoteFailures, ValueLargerThanAllowedIsNeitherLoadedNorWritten) {
  TempDir writer, reader, small_writer;
  ASSERT_EQ(warmup(writer.path(), "N=40").exit_code, 0);
  ASSERT_EQ(entry_names().size(), 1u);
  CommandResult read = warmup(reader.path(), "N=40", "FUSEGEN_REMOTE_CACHE_MAX_BYTES=1024");
  ASSERT_EQ(read.exit_code, 0) << read.output;
  EXPECT_NE(read.output.find("is unusable (larger than the limit of 1024 bytes"), std::string::npos) << read.output;
  EXPECT_NE(read.output.find("1 compiled"), std::string::npos) << read.output;
  EXPECT_NE(read.output.find("0 fetched, 0 published"), std::string::npos) << read.output;

  ASSERT_EQ(server_->cli("FLUSHALL"), "OK\n");
  CommandResult write = warmup(small_writer.path(), "N=40", "FUSEGEN_REMOTE_CACHE_MAX_BYTES=1024");
  ASSERT_EQ(write.exit_code, 0) << write.output;
  EXPECT_NE(write.output.find("is over its limit of 1024"), std::string::npos) << write.output;
  EXPECT_TRUE(entry_names().empty());
}

// Without a key there is no remote tier: not read, not written, and said once.
TEST_F(RemoteFailures, NoKeyMeansNoRemoteTier) {
  TempDir cache;
  CommandResult run = warmup(cache.path(), "N=8", "FUSEGEN_CACHE_KEY_FILE=");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(count_of(run.output, "fusegen: warning"), 1u) << run.output;
  EXPECT_NE(run.output.find("no fleet key"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(" fetched, "), std::string::npos) << run.output; // no remote summary line
  EXPECT_TRUE(entry_names().empty());
}

// A key file its group or others can read is refused, with the reason.
TEST_F(RemoteFailures, KeyFileReadableByOthersIsRefused) {
  TempDir cache;
  ::chmod(key_.c_str(), 0644);
  CommandResult run = warmup(cache.path(), "N=8");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("its group or others can read or write it (mode 0644); use chmod 600"), std::string::npos)
      << run.output;
  EXPECT_TRUE(entry_names().empty());
}

// A store that answers garbage (not the Redis protocol) is a failed store.
TEST_F(RemoteFailures, GarbageAnsweringStoreIsOneWarning) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  std::thread garbage([&] {
    for (int i = 0; i < 2; ++i) { // the warm-up makes one connection; a spare
      int client = ::accept(listener, nullptr, nullptr);
      if (client < 0)
        return;
      char buffer[256];
      (void)!::read(client, buffer, sizeof buffer);
      const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
      (void)!::write(client, reply, sizeof reply - 1);
      ::close(client);
    }
  });
  TempDir cache;
  CommandResult run =
      fusegen(cache.path(), "warmup " + shell_quoted(spec_) + " --dims N=8,16 --remote-cache redis://127.0.0.1:" +
                                std::to_string(ntohs(address.sin_port)));
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
  garbage.join();
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("2 compiled"), std::string::npos) << run.output;
  EXPECT_EQ(count_of(run.output, "fusegen: warning"), 1u) << run.output;
  EXPECT_NE(run.output.find("not a Redis reply"), std::string::npos) << run.output;
}

} // namespace
} // namespace fusegen
