// The disk cache under load and under adverse conditions, with real NVRTC
// compilations and real processes (no GPU):
// - 8 processes warming, loading and rewriting the same and different keys
//   at once, repeatedly, end with every entry valid and none failing;
// - temporary files left by a killed writer are removed once they are old;
// - a full disk (a file size limit) or a read-only cache directory still
//   compiles, with exactly one warning.
// The processes are `fusegen warmup` and tests/runtime/cache_client.
#include "DiskCache.h"

#include "support/ChildProcess.h"
#include "support/TestSupport.h"

#include "fusegen/CacheAdmin.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <regex>
#include <thread>

extern char** environ;

namespace fusegen {
namespace {

using testing::Child;
using testing::ChildResult;
using testing::TempDir;
namespace fs = std::filesystem;

struct ClientCounts {
  int compiled = -1, loaded = -1, rejects = -1, warnings = -1;
};

ClientCounts client_counts(const std::string& output) {
  ClientCounts c;
  std::smatch m;
  static const std::regex line("cache_client: compiled=(\\d+) loaded=(\\d+) rejects=(\\d+) warnings=(\\d+)");
  if (std::regex_search(output, m, line)) {
    c.compiled = std::stoi(m[1]);
    c.loaded = std::stoi(m[2]);
    c.rejects = std::stoi(m[3]);
    c.warnings = std::stoi(m[4]);
  }
  return c;
}

std::vector<std::string> client(const std::string& dir, const std::string& dims,
                                const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {FUSEGEN_CACHE_CLIENT_PATH, "--dir", dir, "--dims", dims};
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// Every entry in `dir` decodes, matches its name, and no temporary file is
// left; returns the number of entries.
size_t expect_all_valid(const std::string& dir) {
  Result<CacheContents> contents = inspect_cache(dir);
  EXPECT_TRUE(contents) << contents.error();
  if (!contents)
    return 0;
  for (const CacheEntryInfo& entry : contents.value().entries)
    EXPECT_TRUE(entry.ok) << entry.file << ": " << entry.problem;
  EXPECT_EQ(contents.value().temp_files, 0u);
  return contents.value().entries.size();
}

// 8 processes at once: 4 `fusegen warmup` runs of N=8,16,24,32 and 4
// clients loading N=8,16,40,48 three times over, recompiling and replacing
// every third one while the others read. Same keys (8, 16) and different
// ones; repeated from an empty directory 8 times ($FUSEGEN_CACHE_LOAD_ITERATIONS
// if set: the sanitizer run, where processes are slower, runs 3). A reader
// that ever saw a partial or foreign entry would warn (and reject it): none may.
TEST(CacheLoad, EightProcessesWarmAndLoadAtOnce) {
  const char* iterations_env = std::getenv("FUSEGEN_CACHE_LOAD_ITERATIONS");
  const int iterations = iterations_env ? std::clamp(std::atoi(iterations_env), 1, 100) : 8;
  TempDir work;
  const std::string spec = work.file("act.fg");
  testing::write_text(spec, testing::kElementwiseSpec);
  const auto start = std::chrono::steady_clock::now();
  for (int iteration = 0; iteration < iterations; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    const std::string dir = work.file("cache" + std::to_string(iteration));
    std::vector<std::unique_ptr<Child>> warmers, clients;
    for (int p = 0; p < 4; ++p) {
      warmers.push_back(std::make_unique<Child>(
          std::vector<std::string>{testing::cli_path(), "warmup", spec, "--dims", "N=8,16,24,32"},
          std::vector<std::string>{"FUSEGEN_CACHE_DIR=" + dir}));
      clients.push_back(std::make_unique<Child>(
          client(dir, "8,16,40,48", {"--rounds", "3", "--rewrite", "3", "--seed", std::to_string(p)})));
    }
    for (auto& warmer : warmers) {
      ChildResult r = warmer->wait();
      EXPECT_EQ(r.exit_code, 0) << r.describe();
      EXPECT_NE(r.output.find(", 0 failed"), std::string::npos) << r.describe();
      EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.describe();
    }
    for (auto& c : clients) {
      ChildResult r = c->wait();
      EXPECT_EQ(r.exit_code, 0) << r.describe();
      ClientCounts counts = client_counts(r.output);
      EXPECT_EQ(counts.compiled + counts.loaded, 12) << r.describe();
      EXPECT_EQ(counts.rejects, 0) << r.describe();
      EXPECT_EQ(counts.warnings, 0) << r.describe();
    }
    EXPECT_EQ(expect_all_valid(dir), 6u); // N = 8, 16, 24, 32, 40, 48
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("8 processes x %d iterations: %.1f s\n", iterations, seconds);
}

void set_mtime(const std::string& path, std::chrono::seconds age) {
  struct timeval times[2] = {};
  times[0].tv_sec = times[1].tv_sec = time(nullptr) - static_cast<time_t>(age.count());
  ASSERT_EQ(utimes(path.c_str(), times), 0) << path;
}

// What a writer killed between creating its temporary file and renaming it
// leaves behind is removed by the next process that stores an entry, once
// it is older than kStaleTempAge; younger ones may belong to a live writer.
TEST(CacheLoad, StaleTempFilesAreRemovedByAge) {
  TempDir dir;
  using namespace std::chrono_literals;
  const std::string old_temp = dir.file(".tmp-" + std::string(64, 'a') + ".fgc-Xy12Zq");
  const std::string young_temp = dir.file(".tmp-" + std::string(64, 'b') + ".fgc-Ab34Cd");
  const std::string old_dir = dir.file(".tmp-" + std::string(64, 'c') + ".fgc-Ef56Gh");
  const std::string other = dir.file("notes.txt");
  const std::string users_temp = dir.file(".tmp-notes"); // named like ours only in its prefix
  testing::write_text(old_temp, "partial entry");
  testing::write_text(young_temp, "partial entry");
  testing::write_text(other, "not ours to delete");
  testing::write_text(users_temp, "not ours to delete");
  set_mtime(users_temp, runtime::kStaleTempAge + 60s);
  fs::create_directory(old_dir);
  set_mtime(old_temp, runtime::kStaleTempAge + 60s);
  set_mtime(young_temp, runtime::kStaleTempAge - 600s);
  set_mtime(other, runtime::kStaleTempAge + 60s);
  set_mtime(old_dir, runtime::kStaleTempAge + 60s);
  Result<CacheContents> before = inspect_cache(dir.path());
  ASSERT_TRUE(before) << before.error();
  EXPECT_EQ(before.value().temp_files, 3u);

  // Through a process that compiles and stores an entry.
  ChildResult r = Child(client(dir.path(), "8")).wait();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(client_counts(r.output).warnings, 0) << r.describe();
  EXPECT_FALSE(fs::exists(old_temp));
  EXPECT_TRUE(fs::exists(young_temp));
  EXPECT_TRUE(fs::is_directory(old_dir)); // only plain files are removed
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(users_temp));

  // Directly: the age threshold is the caller's.
  runtime::DiskCache cache(dir.path());
  EXPECT_EQ(cache.remove_stale_temp_files(), 0u);
  EXPECT_EQ(cache.remove_stale_temp_files(300s), 1u);
  EXPECT_FALSE(fs::exists(young_temp));
  EXPECT_EQ(runtime::DiskCache(dir.file("missing")).remove_stale_temp_files(), 0u);
}

// Writers killed at arbitrary moments (SIGKILL: no cleanup runs) never leave
// a partial entry under an entry's name; what they may leave is temporary
// files, which the next writer removes once they are old.
TEST(CacheLoad, KilledWritersLeaveNoBadEntry) {
  using namespace std::chrono_literals;
  TempDir work;
  const std::string spec = work.file("act.fg");
  testing::write_text(spec, testing::kElementwiseSpec);
  const std::string dir = work.file("cache");
  size_t temps = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    Child writer({testing::cli_path(), "warmup", spec, "--dims", "N=1,2,3,4,5,6,7,9,10,11,12,13", "--jobs", "2"},
                 {"FUSEGEN_CACHE_DIR=" + dir});
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 250 * attempt));
    writer.kill(SIGKILL);
    ChildResult r = writer.wait();
    EXPECT_TRUE(r.signal == SIGKILL || r.exit_code == 0) << r.describe();
    Result<CacheContents> contents = inspect_cache(dir);
    if (!contents)
      continue; // killed before it made the directory
    for (const CacheEntryInfo& entry : contents.value().entries)
      EXPECT_TRUE(entry.ok) << entry.file << ": " << entry.problem;
    temps = contents.value().temp_files;
  }
  std::printf("temporary files left by the killed writers: %zu\n", temps);
  // Whatever was left, once old, goes with the next store.
  std::error_code ec;
  for (const fs::directory_entry& file : fs::directory_iterator(dir, ec))
    set_mtime(file.path().string(), runtime::kStaleTempAge + 60s);
  ChildResult r = Child(client(dir, "8")).wait();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  expect_all_valid(dir);
}

// A full disk, simulated by a file size limit in the child (writes then
// fail with EFBIG instead of ENOSPC; SIGXFSZ is ignored so that they return
// an error rather than kill the process): every kernel still compiles, and
// of the failed stores exactly one warning is printed.
TEST(CacheLoad, FullDiskCompilesWithOneWarning) {
  TempDir dir;
  ChildResult r = Child(client(dir.path(), "8,16,24", {"--rounds", "2"}), {}, [] {
                    struct rlimit limit = {512, 512};
                    setrlimit(RLIMIT_FSIZE, &limit);
                    signal(SIGXFSZ, SIG_IGN);
                  }).wait();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ClientCounts counts = client_counts(r.output);
  EXPECT_EQ(counts.compiled, 6) << r.describe(); // nothing was stored, so round 2 compiles again
  EXPECT_EQ(counts.loaded, 0) << r.describe();
  EXPECT_EQ(counts.warnings, 1) << r.describe();
  EXPECT_NE(r.output.find("fusegen: warning: cannot write to the kernel cache directory " + dir.path() +
                          ": write failed: File too large (continuing without it)"),
            std::string::npos)
      << r.describe();
  EXPECT_EQ(expect_all_valid(dir.path()), 0u); // no partial entry or temporary file left
}

// A read-only cache directory: entries in it are still used, new kernels
// compile, and the failed stores give exactly one warning. Root ignores
// permissions, so as root the client runs as another user who owns the
// directory.
TEST(CacheLoad, ReadOnlyDirectoryCompilesWithOneWarning) {
  TempDir root;
  const std::string dir = root.file("cache");
  ChildResult warm = Child(client(dir, "8")).wait(); // one entry already there
  ASSERT_EQ(warm.exit_code, 0) << warm.describe();
  const bool as_root = geteuid() == 0;
  constexpr uid_t kUser = 54321;
  if (as_root) {
    ASSERT_EQ(chmod(root.path().c_str(), 0711), 0);
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir))
      ASSERT_EQ(chown(entry.path().c_str(), kUser, kUser), 0);
    ASSERT_EQ(chown(dir.c_str(), kUser, kUser), 0);
  }
  ASSERT_EQ(chmod(dir.c_str(), 0500), 0);
  ChildResult r = Child(client(dir, "8,16,24", {"--rounds", "2"}), {}, [&] {
                    if (as_root && (setgroups(0, nullptr) != 0 || setgid(kUser) != 0 || setuid(kUser) != 0))
                      _exit(77);
                  }).wait();
  if (r.exit_code == 77)
    GTEST_SKIP() << "cannot switch to another user here";
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ClientCounts counts = client_counts(r.output);
  EXPECT_EQ(counts.loaded, 2) << r.describe();   // N=8, both rounds
  EXPECT_EQ(counts.compiled, 4) << r.describe(); // N=16 and 24, both rounds
  EXPECT_EQ(counts.warnings, 1) << r.describe();
  EXPECT_NE(r.output.find("fusegen: warning: cannot write to the kernel cache directory " + dir +
                          ": cannot create a file: Permission denied (continuing without it)"),
            std::string::npos)
      << r.describe();
  chmod(dir.c_str(), 0700);
  if (as_root)
    (void)!chown(dir.c_str(), 0, 0);
}

} // namespace
} // namespace fusegen
