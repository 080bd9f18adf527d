// `fusegen cache export|import`: one archive of signed entries, checked
// entry by entry on import (no server needed; import can also fill a
// remote cache, which the last test checks against a real one).
#include "remote/RemoteFixture.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fusegen {
namespace {

using namespace fusegen::testing;

class CacheArchive : public ::testing::Test {
protected:
  void SetUp() override {
    key_ = write_key(work_, "fleet.key", "0123456789abcdef0123456789abcdef");
    spec_ = work_.file("act.fg");
    testing::write_text(spec_, testing::kElementwiseSpec);
  }
  CommandResult fusegen(const std::string& cache_dir, const std::string& args, const std::string& key = "") {
    return testing::run_command(
        "env -u FUSEGEN_CACHE -u FUSEGEN_REMOTE_CACHE FUSEGEN_CACHE_DIR=" + shell_quoted(cache_dir) +
        " FUSEGEN_CACHE_KEY_FILE=" + shell_quoted(key.empty() ? key_ : key) + " timeout 300 " +
        shell_quoted(testing::cli_path()) + " " + args);
  }
  TempDir work_, source_;
  std::string key_, spec_;
};

TEST_F(CacheArchive, ExportThenImportIntoAnEmptyCache) {
  ASSERT_EQ(fusegen(source_.path(), "warmup " + shell_quoted(spec_) + " --dims N=8,16,24").exit_code, 0);
  const std::string archive = work_.file("kernels.fga");
  CommandResult exported = fusegen(source_.path(), "cache export " + shell_quoted(archive));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("exported 3 entries"), std::string::npos) << exported.output;

  TempDir target;
  CommandResult imported = fusegen(target.path(), "cache import " + shell_quoted(archive));
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  EXPECT_NE(imported.output.find("imported 3 entries, refused 0"), std::string::npos) << imported.output;
  CommandResult warm = fusegen(target.path(), "warmup " + shell_quoted(spec_) + " --dims N=8,16,24");
  EXPECT_NE(warm.output.find("0 compiled, 3 already cached"), std::string::npos) << warm.output;
}

TEST_F(CacheArchive, TamperedEntriesAndAnotherKeyAreRefused) {
  ASSERT_EQ(fusegen(source_.path(), "warmup " + shell_quoted(spec_) + " --dims N=8,16").exit_code, 0);
  const std::string archive = work_.file("kernels.fga");
  ASSERT_EQ(fusegen(source_.path(), "cache export " + shell_quoted(archive)).exit_code, 0);

  // Another fleet's key checks nothing in it.
  TempDir other_dir;
  const std::string other_key = write_key(work_, "other.key", "another fleet's key, 32 bytes...");
  CommandResult wrong = fusegen(other_dir.path(), "cache import " + shell_quoted(archive), other_key);
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("imported 0 entries, refused 2"), std::string::npos) << wrong.output;
  EXPECT_NE(wrong.output.find("bad signature"), std::string::npos) << wrong.output;
  Result<CacheContents> none = inspect_cache(other_dir.path());
  ASSERT_TRUE(none);
  EXPECT_TRUE(none.value().entries.empty());

  // One byte of the last entry's image changed: that entry alone is refused.
  std::string bytes = testing::read_text(archive);
  bytes[bytes.size() - 100] ^= 0x01;
  testing::write_text(archive, bytes);
  TempDir target;
  CommandResult tampered = fusegen(target.path(), "cache import " + shell_quoted(archive));
  EXPECT_EQ(tampered.exit_code, 1) << tampered.output;
  EXPECT_NE(tampered.output.find("imported 1 entry, refused 1"), std::string::npos) << tampered.output;

  // Truncated: an error, not a crash.
  testing::write_text(archive, bytes.substr(0, bytes.size() / 2));
  CommandResult cut = fusegen(target.path(), "cache import " + shell_quoted(archive));
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_NE(cut.output.find("is truncated"), std::string::npos) << cut.output;
}

TEST_F(CacheArchive, ExportNeedsAKey) {
  ASSERT_EQ(fusegen(source_.path(), "warmup " + shell_quoted(spec_) + " --dims N=8").exit_code, 0);
  CommandResult run =
      testing::run_command("env -u FUSEGEN_CACHE_KEY_FILE FUSEGEN_CACHE_DIR=" + shell_quoted(source_.path()) + " " +
                           shell_quoted(testing::cli_path()) + " cache export " + shell_quoted(work_.file("x.fga")));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("no fleet key"), std::string::npos) << run.output;
}

using CacheArchiveToStore = RemoteCacheFixture;

// An air-gapped fleet's store filled from an archive serves every process.
TEST_F(CacheArchiveToStore, ImportFillsTheRemoteCache) {
  TempDir source, target, fresh;
  ASSERT_EQ(warmup(source.path(), "N=8,16", "FUSEGEN_REMOTE_CACHE=off").exit_code, 0);
  const std::string archive = work_.file("kernels.fga");
  ASSERT_EQ(fusegen(source.path(), "cache export " + shell_quoted(archive), "FUSEGEN_REMOTE_CACHE=off").exit_code, 0);
  CommandResult imported =
      fusegen(target.path(), "cache import " + shell_quoted(archive) + " --remote-cache " + server_->url());
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  EXPECT_NE(imported.output.find("published 2 to the remote cache"), std::string::npos) << imported.output;
  CommandResult take = warmup(fresh.path(), "N=8,16");
  EXPECT_NE(take.output.find(": 2 fetched"), std::string::npos) << take.output;
}

} // namespace
} // namespace fusegen
