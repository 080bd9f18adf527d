// The remote kernel cache against a real redis-server on localhost
// (support/RedisServer.h): processes with their own disk caches share
// kernels through it, compile each key once between them, never load an
// entry that is not signed with the fleet key, and fall back to compiling
// locally, with one warning, when the store is dead, paused or restarted.
#include "remote/RemoteFixture.h"
#include "support/ChildProcess.h"

#include "CacheEntry.h"
#include "EntrySignature.h"
#include "RedisConnection.h"
#include "RemoteCache.h"

#include "fusegen/CacheAdmin.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <thread>

namespace fusegen {
namespace {

using namespace fusegen::testing;
using RemoteCache = RemoteCacheFixture;

using testing::Child;
using testing::ChildResult;
using testing::CommandResult;
using testing::TempDir;

// The first process compiles and publishes; a second with an empty disk
// cache of its own compiles nothing, and what it fetched verifies on disk.
TEST_F(RemoteCache, SecondProcessWithItsOwnDiskCacheCompilesNothing) {
  TempDir first, second;
  CommandResult a = warmup(first.path(), "N=128,256");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("2 compiled, 0 already cached, 0 failed"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find(": 0 fetched, 2 published"), std::string::npos) << a.output;
  EXPECT_EQ(entry_names().size(), 2u);

  CommandResult b = warmup(second.path(), "N=128,256");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("0 compiled, 0 already cached, 0 failed"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find(": 2 fetched, 0 published"), std::string::npos) << b.output;
  EXPECT_EQ(b.output.find("fusegen: warning"), std::string::npos) << b.output;
  CommandResult verify = fusegen(second.path(), "cache verify");
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_NE(verify.output.find("2 ok, 0 bad"), std::string::npos) << verify.output;
}

// Warm-up from a warm disk cache fills an empty store (a deploy step).
TEST_F(RemoteCache, WarmupFillsTheStoreFromAWarmDiskCache) {
  TempDir local, fresh;
  CommandResult offline = warmup(local.path(), "N=64", "FUSEGEN_REMOTE_CACHE=off");
  ASSERT_EQ(offline.exit_code, 0) << offline.output;
  EXPECT_TRUE(entry_names().empty());
  CommandResult fill = warmup(local.path(), "N=64");
  ASSERT_EQ(fill.exit_code, 0) << fill.output;
  EXPECT_NE(fill.output.find("0 compiled, 1 already cached"), std::string::npos) << fill.output;
  EXPECT_NE(fill.output.find(": 0 fetched, 1 published"), std::string::npos) << fill.output;
  CommandResult take = warmup(fresh.path(), "N=64");
  EXPECT_NE(take.output.find(": 1 fetched"), std::string::npos) << take.output;
}

struct RemoteCounts {
  int compiled = -1, loads = -1, writes = -1, rejects = -1, waits = -1;
  std::map<int, std::string> images; // N -> sha256 of the image
};

RemoteCounts remote_counts(const std::string& output) {
  RemoteCounts c;
  std::smatch m;
  if (std::regex_search(output, m, std::regex("cache_client: compiled=(\\d+)")))
    c.compiled = std::stoi(m[1]);
  if (std::regex_search(output, m, std::regex("remote: loads=(\\d+) writes=(\\d+) rejects=(\\d+) waits=(\\d+)"))) {
    c.loads = std::stoi(m[1]);
    c.writes = std::stoi(m[2]);
    c.rejects = std::stoi(m[3]);
    c.waits = std::stoi(m[4]);
  }
  static const std::regex image("image N=(\\d+) ([0-9a-f]{64})");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), image); it != std::sregex_iterator(); ++it)
    c.images[std::stoi((*it)[1])] = (*it)[2];
  return c;
}

// N = 32 processes, each with its own disk cache, miss the same M = 8 keys at
// once (each starting at another key): the fleet compiles exactly 8 times,
// and every process ends with the same image for each key as a local
// compile makes.
TEST_F(RemoteCache, ThirtyTwoProcessesMissingEightKeysCompileEightTimes) {
  constexpr int kProcesses = 32;
  const std::string dims = "8,16,24,32,40,48,56,64";
  // The reference: compiled locally, no remote cache.
  TempDir reference_dir;
  Child reference({FUSEGEN_CACHE_CLIENT_PATH, "--dir", reference_dir.path(), "--dims", dims, "--remote",
                   "redis://127.0.0.1:1", "--key-file", key_});
  // (Port 1 refuses: the reference compiles everything itself.)
  ChildResult reference_result = reference.wait();
  ASSERT_EQ(reference_result.exit_code, 0) << reference_result.describe();
  RemoteCounts expected = remote_counts(reference_result.output);
  ASSERT_EQ(expected.compiled, 8) << reference_result.describe();
  ASSERT_EQ(expected.images.size(), 8u);

  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<Child>> children;
  // Waiting is generous here: 32 processes share two cores.
  const std::vector<std::string> env = {"FUSEGEN_REMOTE_CACHE_WAIT_MS=240000", "FUSEGEN_REMOTE_CACHE_LEASE_MS=240000",
                                        "FUSEGEN_REMOTE_CACHE_TIMEOUT_MS=2000"};
  for (int i = 0; i < kProcesses; ++i) {
    dirs.push_back(std::make_unique<TempDir>());
    children.push_back(std::make_unique<Child>(
        std::vector<std::string>{FUSEGEN_CACHE_CLIENT_PATH, "--dir", dirs.back()->path(), "--dims", dims, "--seed",
                                 std::to_string(i % 8), "--remote", server_->url(), "--key-file", key_},
        env, std::function<void()>{}, 600));
  }
  int compiled = 0, loads = 0, writes = 0;
  for (int i = 0; i < kProcesses; ++i) {
    ChildResult result = children[i]->wait();
    ASSERT_EQ(result.exit_code, 0) << "process " << i << ": " << result.describe();
    RemoteCounts counts = remote_counts(result.output);
    EXPECT_EQ(counts.rejects, 0) << result.output;
    EXPECT_EQ(result.output.find("fusegen: warning"), std::string::npos) << result.output;
    EXPECT_EQ(counts.images, expected.images) << "process " << i;
    compiled += counts.compiled;
    loads += counts.loads;
    writes += counts.writes;
  }
  EXPECT_EQ(compiled, 8);
  EXPECT_EQ(writes, 8);
  EXPECT_EQ(loads, kProcesses * 8 - 8);
  EXPECT_EQ(entry_names().size(), 8u);
  // Every lease was released.
  EXPECT_EQ(server_->cli("--raw KEYS '" + std::string(runtime::kRemoteLockPrefix) + "*'"), "\n");
}

// A holder that died leaves its lease; it expires and a waiter compiles.
TEST_F(RemoteCache, CrashedHoldersLeaseExpiresAndAWaiterCompiles) {
  TempDir second;
  // As if a process had claimed the key and died compiling it.
  const std::optional<std::string> leased = entry_leased_to("dead-holder", 1500);
  ASSERT_TRUE(leased);
  const std::string& hash = *leased;
  const Clock::time_point start = Clock::now();
  CommandResult b = warmup(second.path(), "N=32", "FUSEGEN_REMOTE_CACHE_WAIT_MS=30000");
  const double took = seconds_since(start);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("1 compiled"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find(": 0 fetched, 1 published"), std::string::npos) << b.output;
  EXPECT_GE(took, 1.3) << "did not wait for the lease";
  EXPECT_LT(took, 25.0) << "waited beyond the lease";
  EXPECT_EQ(server_->cli("EXISTS " + std::string(runtime::kRemoteLockPrefix) + hash), "0\n");
}

// A holder that hangs: waiters give up after the wait bound and compile.
TEST_F(RemoteCache, WaitersGiveUpAfterTheBoundAndCompileLocally) {
  TempDir second;
  const std::optional<std::string> leased = entry_leased_to("stuck-holder", 600000);
  ASSERT_TRUE(leased);
  const std::string& hash = *leased;
  const Clock::time_point start = Clock::now();
  CommandResult b = warmup(second.path(), "N=32", "FUSEGEN_REMOTE_CACHE_WAIT_MS=700");
  const double took = seconds_since(start);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("1 compiled"), std::string::npos) << b.output;
  EXPECT_GE(took, 0.65);
  // The other's lease is not ours to release.
  EXPECT_EQ(server_->cli("GET " + std::string(runtime::kRemoteLockPrefix) + hash), "stuck-holder\n");
}

// Entries the fleet key did not sign are never loaded: changed after
// signing, stored unsigned, or signed with another key. Each is one warning
// and a local compile, whose entry then replaces it.
TEST_F(RemoteCache, TamperedUnsignedAndWrongKeyEntriesAreNeverLoaded) {
  TempDir origin;
  ASSERT_EQ(warmup(origin.path(), "N=96").exit_code, 0);
  std::vector<std::string> names = entry_names();
  ASSERT_EQ(names.size(), 1u);
  const std::string name = names[0];
  const std::string hash = name.substr(runtime::kRemoteEntryPrefix.size());
  const std::string good = get(name);
  ASSERT_GT(good.size(), runtime::kSignedHeaderBytes);
  const std::string entry_bytes = good.substr(runtime::kSignedHeaderBytes);
  Result<runtime::CacheEntry> entry = runtime::decode_entry(entry_bytes);
  ASSERT_TRUE(entry) << entry.error();
  const std::string good_image = entry.value().image;

  // A well-formed entry with another image under the old signature.
  runtime::CacheEntry evil = entry.value();
  evil.image[evil.image.size() / 2] ^= 0x5a;
  const std::string tampered = good.substr(0, runtime::kSignedHeaderBytes) + runtime::encode_entry(evil);
  const std::string unsigned_entry = entry_bytes;
  const std::string wrong_key =
      runtime::FleetKey::from_bytes("another fleet's key, 32 bytes...").sign(hash, entry_bytes);

  struct Case {
    const char* what;
    std::string value;
    const char* problem;
  };
  const std::vector<Case> cases = {{"tampered", tampered, "(bad signature"},
                                   {"unsigned", unsigned_entry, "(not a signed entry)"},
                                   {"wrong key", wrong_key, "(bad signature"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    set(name, c.value);
    TempDir fresh;
    CommandResult run = warmup(fresh.path(), "N=96");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(count_of(run.output, "fusegen: warning"), 1u) << run.output;
    EXPECT_NE(run.output.find(std::string("is unusable ") + c.problem), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("not loaded, compiling locally"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("1 compiled"), std::string::npos) << run.output;
    // What is on disk now is the real kernel, not what the store held.
    Result<CacheContents> contents = inspect_cache(fresh.path());
    ASSERT_TRUE(contents);
    ASSERT_EQ(contents.value().entries.size(), 1u);
    Result<std::string> on_disk = runtime::DiskCache::read_entry_file(fresh.file(contents.value().entries[0].file));
    ASSERT_TRUE(on_disk);
    EXPECT_EQ(runtime::decode_entry(on_disk.value()).value().image, good_image);
    // And the store holds a good entry again.
    EXPECT_EQ(get(name), good);
  }
}

} // namespace
} // namespace fusegen
