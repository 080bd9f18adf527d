// The runtime's command line: `fusegen warmup`, `fusegen cache ...`,
// `fusegen run --device` without a GPU, and scripts/warmup-cache.sh.
#include "support/TestSupport.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fusegen {
namespace {

using testing::CommandResult;
using testing::TempDir;

std::string shell_quoted(const std::string& text) { return "'" + text + "'"; }

class CliTest : public ::testing::Test {
protected:
  void SetUp() override {
    spec_ = work_.file("act.fg");
    testing::write_text(spec_, testing::kElementwiseSpec);
  }
  CommandResult fusegen(const std::string& args) {
    return testing::run_command("env -u FUSEGEN_CACHE FUSEGEN_CACHE_DIR=" + shell_quoted(cache_.path()) + " " +
                                shell_quoted(testing::cli_path()) + " " + args);
  }
  TempDir work_, cache_;
  std::string spec_;
};

TEST_F(CliTest, WarmupThenCacheCommands) {
  CommandResult first = fusegen("warmup " + shell_quoted(spec_) + " --dims N=128,1024 --jobs 2");
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("warmup " + spec_ + " for sm_90 (sm_90) into " + cache_.path()), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("  compiled  scale_relu N=128\n  compiled  scale_relu N=1024\n"), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("2 compiled, 0 already cached, 0 failed"), std::string::npos) << first.output;

  CommandResult second = fusegen("warmup " + shell_quoted(spec_) + " --dims N=128,1024,4096");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("1 compiled, 2 already cached, 0 failed"), std::string::npos) << second.output;

  CommandResult stats = fusegen("cache stats");
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("cache directory: " + cache_.path()), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("entries: 3 ("), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("0 bad, 0 temporary files"), std::string::npos) << stats.output;

  CommandResult verify = fusegen("cache verify");
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_NE(verify.output.find("3 ok, 0 bad"), std::string::npos) << verify.output;

  // Damage one entry: verify reports it and fails.
  std::string victim;
  for (const auto& entry : std::filesystem::directory_iterator(cache_.path()))
    victim = entry.path().string();
  std::filesystem::resize_file(victim, 50);
  verify = fusegen("cache verify");
  EXPECT_EQ(verify.exit_code, 1) << verify.output;
  EXPECT_NE(verify.output.find("2 ok, 1 bad"), std::string::npos) << verify.output;
  EXPECT_NE(verify.output.find("checksum mismatch"), std::string::npos) << verify.output;

  // Warm-up repairs it, with a warning.
  CommandResult repair = fusegen("warmup " + shell_quoted(spec_) + " --dims N=128,1024,4096");
  EXPECT_EQ(repair.exit_code, 0) << repair.output;
  EXPECT_NE(repair.output.find("1 compiled, 2 already cached"), std::string::npos) << repair.output;
  EXPECT_NE(repair.output.find("fusegen: warning: cache entry " + victim + " is unusable"), std::string::npos)
      << repair.output;

  CommandResult clear = fusegen("cache clear");
  EXPECT_EQ(clear.exit_code, 0) << clear.output;
  EXPECT_NE(clear.output.find("removed 3 files"), std::string::npos) << clear.output;
  EXPECT_TRUE(std::filesystem::is_empty(cache_.path()));
}

TEST_F(CliTest, WarmupOptionsAndErrors) {
  CommandResult other_dir = fusegen("warmup " + shell_quoted(spec_) +
                                    " --dims N=8 --arch sm_80 --precision tf32 "
                                    "--cache-dir " +
                                    shell_quoted(work_.file("elsewhere")));
  EXPECT_EQ(other_dir.exit_code, 0) << other_dir.output;
  EXPECT_NE(other_dir.output.find("for sm_80 (sm_80) into " + work_.file("elsewhere")), std::string::npos)
      << other_dir.output;
  EXPECT_TRUE(std::filesystem::is_empty(cache_.path()));

  EXPECT_EQ(fusegen("warmup " + shell_quoted(spec_) + " --dims N=8 --arch sm_70").exit_code, 2);
  EXPECT_EQ(fusegen("warmup " + shell_quoted(spec_) + " --dims N=8 --precision fast").exit_code, 2);
  EXPECT_EQ(fusegen("warmup " + shell_quoted(spec_) + " --dims N=8 --jobs 0").exit_code, 2);
  EXPECT_EQ(fusegen("warmup " + shell_quoted(spec_) + " --dims 8").exit_code, 2);
  EXPECT_EQ(fusegen("warmup").exit_code, 2);
  // A dim the spec lacks is a usage error before anything is compiled (a
  // missing dim is a failed item: Warmup.MissingDimIsAFailedItem).
  CommandResult unknown = fusegen("warmup " + shell_quoted(spec_) + " --dims M=8");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("the spec has no dim named M"), std::string::npos) << unknown.output;

  EXPECT_EQ(fusegen("cache").exit_code, 2);
  EXPECT_EQ(fusegen("cache shrink").exit_code, 2);
  std::filesystem::permissions(cache_.path(), std::filesystem::perms::all);
  CommandResult unsafe = fusegen("cache stats");
  EXPECT_EQ(unsafe.exit_code, 1) << unsafe.output;
  EXPECT_NE(unsafe.output.find("writable by everyone"), std::string::npos) << unsafe.output;
}

TEST_F(CliTest, DeviceRunWithoutAGpuFailsCleanly) {
  CommandResult probe = fusegen("run " + shell_quoted(spec_) + " --device --dims N=8");
  if (probe.output.find("no CUDA") == std::string::npos)
    GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_EQ(probe.exit_code, 1) << probe.output;
  EXPECT_NE(probe.output.find("fusegen run: error: no CUDA"), std::string::npos) << probe.output;
  // --reference runs stay CPU-only.
  EXPECT_EQ(fusegen("run " + shell_quoted(spec_) + " --dims N=8 --reference").exit_code, 0);
  // Dims all fixed by the spec need no --dims: the run gets as far as the
  // device (it used to stop at "too large for the reference interpreter").
  const std::string fixed = work_.file("fixed.fg");
  testing::write_text(fixed,
                      "fusion f {\n  input x : f32[3, K]\n  param w : f32[4, 5]\n  output y = linear(x, w)\n}\n");
  CommandResult compare = fusegen("run " + shell_quoted(fixed) + " --device --compare");
  EXPECT_EQ(compare.exit_code, 1) << compare.output;
  EXPECT_NE(compare.output.find("fusegen run: error: no CUDA"), std::string::npos) << compare.output;
}

TEST_F(CliTest, WarmupCacheScriptRunsAManifest) {
  testing::write_text(work_.file("warm.manifest"), "# comment\n\nact.fg N=16,32   # trailing comment\n"
                                                   "act.fg N=64\n");
  CommandResult ok = testing::run_command("FUSEGEN=" + shell_quoted(testing::cli_path()) + " " +
                                          shell_quoted(testing::source_path("scripts/warmup-cache.sh")) + " " +
                                          shell_quoted(work_.file("warm.manifest")) + " --cache-dir " +
                                          shell_quoted(cache_.path()) + " --jobs 2");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("== act.fg N=16,32: ok"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("warmup-cache: 2 specs, 0 failed"), std::string::npos) << ok.output;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache_.path()), {}), 3);

  testing::write_text(work_.file("bad.manifest"), "act.fg N=16\nmissing.fg N=1\nact.fg M=2\n");
  CommandResult bad =
      testing::run_command("FUSEGEN=" + shell_quoted(testing::cli_path()) + " " +
                           shell_quoted(testing::source_path("scripts/warmup-cache.sh")) + " " +
                           shell_quoted(work_.file("bad.manifest")) + " --cache-dir " + shell_quoted(cache_.path()));
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("warmup-cache: 3 specs, 2 failed"), std::string::npos) << bad.output;
}

// libcuda is opened at run time, never linked: the CLI must start on a
// machine without a driver.
TEST(CliBinary, DoesNotLinkTheDriver) {
  CommandResult elf = testing::run_command("readelf -d '" + testing::cli_path() + "'");
  if (elf.exit_code != 0)
    GTEST_SKIP() << "readelf is not available";
  EXPECT_NE(elf.output.find("libnvrtc"), std::string::npos) << elf.output;
  EXPECT_EQ(elf.output.find("libcuda"), std::string::npos) << elf.output;
}

} // namespace
} // namespace fusegen
