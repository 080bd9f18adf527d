// Faults a red team found in the cache commands and the CLI's input files
// (issue 27, items 2-7), each through the command a user runs: a FIFO or a
// huge junk file named like an entry, `cache clear` on a directory holding
// other files, warm-up into a cache that cannot store, an entry whose launch
// plan names another fusion, and --inputs that are not regular files.
#include "support/TestSupport.h"

#include "CacheEntry.h"
#include "DiskCache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace fusegen {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::TempDir;

std::string shell_quoted(const std::string& text) { return "'" + text + "'"; }

// A hang is a failure, not a stuck CI run: every command runs under timeout(1),
// whose exit code 124 the tests check for.
constexpr const char* kTimeout = "timeout 60 ";

class CacheFaults : public ::testing::Test {
protected:
  void SetUp() override {
    spec_ = work_.file("act.fg");
    testing::write_text(spec_, testing::kElementwiseSpec);
  }
  // `prefix` runs in the shell before fusegen (limits, traps).
  CommandResult fusegen(const std::string& args, const std::string& prefix = "") {
    return testing::run_command(prefix + "env -u FUSEGEN_CACHE FUSEGEN_CACHE_DIR=" + shell_quoted(cache_.path()) + " " +
                                kTimeout + shell_quoted(testing::cli_path()) + " " + args);
  }
  // Warms one entry (N=128) and returns its path.
  std::string warm_one() {
    CommandResult warm = fusegen("warmup " + shell_quoted(spec_) + " --dims N=128");
    EXPECT_EQ(warm.exit_code, 0) << warm.output;
    std::string entry;
    for (const auto& file : fs::directory_iterator(cache_.path()))
      if (file.path().extension() == ".fgc")
        entry = file.path().string();
    EXPECT_FALSE(entry.empty());
    return entry;
  }
  TempDir work_, cache_;
  std::string spec_;
};

const std::string kEntryName = std::string(64, 'a') + ".fgc";

// AddressSanitizer reserves terabytes of address space for its shadow
// memory, so an instrumented CLI cannot start under `ulimit -v`.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
constexpr bool kAddressSanitizer = false;
#endif

// Item 2: the FIFO used to be opened (and block) before its type was checked.
TEST_F(CacheFaults, FifoNamedLikeAnEntryIsReportedNotOpened) {
  ASSERT_EQ(mkfifo((cache_.path() + "/" + kEntryName).c_str(), 0600), 0);
  CommandResult verify = fusegen("cache verify");
  EXPECT_EQ(verify.exit_code, 1) << verify.output;
  EXPECT_NE(verify.output.find("bad  " + kEntryName + "  not a regular file"), std::string::npos) << verify.output;
  CommandResult stats = fusegen("cache stats");
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("entries: 1 (0.0 KiB), 1 bad"), std::string::npos) << stats.output;
}

// Item 3: a 1.5 GiB junk file (sparse here) was read whole before its magic
// was checked; under a memory limit warm-up failed with bad_alloc and left
// it, and `cache verify` aborted.
TEST_F(CacheFaults, HugeJunkEntryIsRefusedBeforeItIsRead) {
  const std::string entry = warm_one();
  fs::resize_file(entry, uint64_t{3} << 29);
  CommandResult verify = fusegen("cache verify");
  EXPECT_EQ(verify.exit_code, 1) << verify.output;
  EXPECT_NE(verify.output.find("too large for an entry (1610612736 bytes"), std::string::npos) << verify.output;
  // 1 GiB of address space: reading the file whole cannot fit (not in the
  // instrumented build, where the refusal by size is still checked).
  CommandResult warm =
      fusegen("warmup " + shell_quoted(spec_) + " --dims N=128", kAddressSanitizer ? "" : "ulimit -v 1048576; ");
  EXPECT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_NE(warm.output.find("is unusable (too large for an entry"), std::string::npos) << warm.output;
  EXPECT_NE(warm.output.find("1 compiled, 0 already cached, 0 failed"), std::string::npos) << warm.output;
  verify = fusegen("cache verify");
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

// Junk under the size limit costs one read of the magic, not the file.
TEST_F(CacheFaults, JunkEntryIsReadNoFurtherThanItsMagic) {
  const std::string path = cache_.file(kEntryName);
  {
    std::ofstream junk(path, std::ios::binary);
    std::string block(1 << 20, 'j');
    for (int i = 0; i < 32; ++i)
      junk << block;
  }
  Result<std::string> bytes = runtime::DiskCache::read_entry_file(path);
  ASSERT_TRUE(bytes) << bytes.error();
  EXPECT_EQ(bytes.value().size(), runtime::kCacheMagic.size());
  EXPECT_FALSE(runtime::decode_entry(bytes.value()));
}

// Item 4: `cache clear` removed anything named ".tmp-*", directory trees
// included, and counted a tree as "files".
TEST_F(CacheFaults, ClearRemovesOnlyFusegensOwnFiles) {
  const std::string entry = warm_one();
  const std::string temp = cache_.file(".tmp-" + fs::path(entry).filename().string() + "-Ab12Cd");
  testing::write_text(temp, "partial entry");
  testing::write_text(cache_.file(".tmp-notes"), "a user's file");
  fs::create_directories(cache_.path() + "/.tmp-project/src");
  testing::write_text(cache_.path() + "/.tmp-project/src/main.c", "int main() {}");
  fs::create_directories(cache_.path() + "/" + kEntryName + "/inside");
  testing::write_text(cache_.file("README"), "kept");

  CommandResult clear = fusegen("cache clear");
  EXPECT_EQ(clear.exit_code, 0) << clear.output;
  EXPECT_NE(clear.output.find("removed 2 files"), std::string::npos) << clear.output;
  EXPECT_NE(clear.output.find("left " + kEntryName + " (named like an entry but not a file)"), std::string::npos)
      << clear.output;
  EXPECT_FALSE(fs::exists(entry));
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_TRUE(fs::exists(cache_.file(".tmp-notes")));
  EXPECT_TRUE(fs::exists(cache_.path() + "/.tmp-project/src/main.c"));
  EXPECT_TRUE(fs::exists(cache_.path() + "/" + kEntryName + "/inside"));
  EXPECT_TRUE(fs::exists(cache_.file("README")));
}

// Item 6: a full disk (a file size limit; SIGXFSZ ignored so that writes
// fail with EFBIG) used to end in "N compiled, 0 failed" and exit 0.
TEST_F(CacheFaults, WarmupThatStoresNothingFails) {
  CommandResult warm = fusegen("warmup " + shell_quoted(spec_) + " --dims N=128,256", "trap '' XFSZ; ulimit -f 1; ");
  EXPECT_EQ(warm.exit_code, 1) << warm.output;
  EXPECT_NE(warm.output.find("  not stored scale_relu N=128"), std::string::npos) << warm.output;
  EXPECT_NE(warm.output.find("0 compiled, 0 already cached, 0 failed"), std::string::npos) << warm.output;
  EXPECT_NE(warm.output.find("2 of 2 compiled but not stored in " + cache_.path() + ": the cache is not warm for them"),
            std::string::npos)
      << warm.output;
}

// Item 7: verify said "ok" for an entry the runtime rejects.
TEST_F(CacheFaults, VerifyAppliesTheRuntimesChecks) {
  const std::string entry = warm_one();
  Result<runtime::CacheEntry> decoded = runtime::decode_entry(testing::read_text(entry));
  ASSERT_TRUE(decoded) << decoded.error();
  decoded.value().launch.fusion = "another_fusion";
  testing::write_text(entry, runtime::encode_entry(decoded.value()));
  CommandResult verify = fusegen("cache verify");
  EXPECT_EQ(verify.exit_code, 1) << verify.output;
  EXPECT_NE(verify.output.find("its launch plan is for fusion 'another_fusion', its key for 'scale_relu'"),
            std::string::npos)
      << verify.output;
}

// Item 5: --inputs read DIR/<name>.npy whatever it was: /dev/zero grew
// without bound, a FIFO hung. The size is known from the spec.
TEST_F(CacheFaults, RunInputsMustBeRegularFilesOfTheExpectedSize) {
  const std::string dir = work_.file("inputs");
  fs::create_directories(dir);
  const std::string x = dir + "/x.npy";
  const std::string run = "run " + shell_quoted(spec_) + " --device --dims N=4 --inputs " + shell_quoted(dir);
  ASSERT_EQ(mkfifo(x.c_str(), 0600), 0);
  CommandResult fifo = fusegen(run);
  EXPECT_EQ(fifo.exit_code, 2) << fifo.output;
  EXPECT_NE(fifo.output.find("x.npy: not a regular file"), std::string::npos) << fifo.output;
  fs::remove(x);
  fs::create_symlink("/dev/zero", x);
  CommandResult zero = fusegen(run);
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("x.npy: not a regular file"), std::string::npos) << zero.output;
  fs::remove(x);
  testing::write_text(x, "");
  fs::resize_file(x, uint64_t{1} << 30);
  CommandResult huge = fusegen(run);
  EXPECT_EQ(huge.exit_code, 2) << huge.output;
  EXPECT_NE(huge.output.find("x.npy: too large: 1073741824 bytes"), std::string::npos) << huge.output;
}

} // namespace
} // namespace fusegen
