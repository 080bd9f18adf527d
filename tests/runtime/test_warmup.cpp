// Warm-up without a GPU: every fusion, every binding, into the disk cache;
// a second warm-up compiles nothing. Warming every KernelBench spec for sm_90
// is also the test that each spec's generated CUDA compiles with NVRTC.
#include "CacheEntry.h"
#include "DiskCache.h"

#include "support/TestSupport.h"

#include "fusegen/CacheAdmin.h"
#include "fusegen/Runtime.h"
#include "fusegen/Warmup.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fusegen {
namespace {

using testing::TempDir;

TEST(ExpandDims, CommasListValuesOfOneDim) {
  auto text = [](const std::vector<std::string>& lists) {
    Result<std::vector<DimBindings>> bindings = expand_dim_lists(lists);
    if (!bindings)
      return "error: " + bindings.error();
    std::string out;
    for (const DimBindings& b : bindings.value()) {
      out += "{";
      for (const auto& [name, value] : b)
        out += name + "=" + std::to_string(value) + ";";
      out += "}";
    }
    return out;
  };
  EXPECT_EQ(text({}), "{}");
  EXPECT_EQ(text({"N=128"}), "{N=128;}");
  EXPECT_EQ(text({"N=128,1024"}), "{N=128;}{N=1024;}");
  EXPECT_EQ(text({"N=1,2,M=8"}), "{M=8;N=1;}{M=8;N=2;}");
  EXPECT_EQ(text({"N=1,2", "M=3,4"}), "{M=3;N=1;}{M=4;N=1;}{M=3;N=2;}{M=4;N=2;}");
  EXPECT_EQ(text({"128"}).rfind("error: bad --dims entry '128'", 0), 0u);
  EXPECT_EQ(text({"N=0"}).rfind("error: bad value '0' for dim N", 0), 0u);
  EXPECT_EQ(text({"N=x"}).rfind("error: bad value 'x'", 0), 0u);
  EXPECT_EQ(text({"N=1", "N=2"}), "error: dim N given twice in --dims");
  EXPECT_EQ(text({"=4"}).rfind("error: bad --dims entry", 0), 0u);
}

TEST(Warmup, CompilesThenFindsEverythingCached) {
  TempDir dir;
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  WarmupOptions options;
  options.cache_dir = dir.path();
  options.jobs = 2;
  Result<std::vector<DimBindings>> bindings = expand_dim_lists({"N=128,1024,M=5"});
  ASSERT_TRUE(bindings);
  WarmupReport first = warmup(loaded->module, loaded->sources, bindings.value(), options);
  EXPECT_EQ(first.cache_dir, dir.path());
  EXPECT_EQ(first.target, "sm_90");
  ASSERT_EQ(first.items.size(), 2u); // M is not a dim of the fusion
  EXPECT_EQ(first.count(WarmupOutcome::Compiled), 2u);
  EXPECT_EQ(first.items[0].dims, (DimBindings{{"N", 128}}));
  EXPECT_EQ(first.items[1].dims, (DimBindings{{"N", 1024}}));

  WarmupReport second = warmup(loaded->module, loaded->sources, bindings.value(), options);
  EXPECT_EQ(second.count(WarmupOutcome::Cached), 2u);
  EXPECT_EQ(second.count(WarmupOutcome::Compiled), 0u);

  Result<CacheContents> contents = inspect_cache(dir.path());
  ASSERT_TRUE(contents) << contents.error();
  ASSERT_EQ(contents.value().entries.size(), 2u);
  for (const CacheEntryInfo& entry : contents.value().entries) {
    EXPECT_TRUE(entry.ok) << entry.problem;
    EXPECT_EQ(entry.fusion, "scale_relu");
    EXPECT_EQ(entry.target, "sm_90");
  }
  Result<CacheClearReport> cleared = clear_cache(dir.path());
  ASSERT_TRUE(cleared);
  EXPECT_EQ(cleared.value().removed, 2u);
  EXPECT_TRUE(cleared.value().left.empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Warmup, MissingDimIsAFailedItem) {
  TempDir dir;
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  WarmupOptions options;
  options.cache_dir = dir.path();
  WarmupReport report = warmup(loaded->module, loaded->sources, {DimBindings{{"M", 3}}}, options);
  ASSERT_EQ(report.items.size(), 1u);
  EXPECT_EQ(report.items[0].outcome, WarmupOutcome::Failed);
  EXPECT_NE(report.items[0].error.find("needs a value for dim N"), std::string::npos) << report.items[0].error;
}

TEST(Warmup, PrecisionIsPartOfTheKey) {
  TempDir dir;
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  WarmupOptions options;
  options.cache_dir = dir.path();
  EXPECT_EQ(warmup(loaded->module, loaded->sources, {{{"N", 64}}}, options).count(WarmupOutcome::Compiled), 1u);
  options.precision = Precision::TF32;
  EXPECT_EQ(warmup(loaded->module, loaded->sources, {{{"N", 64}}}, options).count(WarmupOutcome::Compiled), 1u);
  options.precision = Precision::Strict; // the fusion's own: same key as no override
  EXPECT_EQ(warmup(loaded->module, loaded->sources, {{{"N", 64}}}, options).count(WarmupOutcome::Cached), 1u);
}

// A device newer than NVRTC gets PTX for the newest arch NVRTC knows.
TEST(Warmup, PtxForAnArchNewerThanNvrtc) {
  TempDir dir;
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  WarmupOptions options;
  options.cache_dir = dir.path();
  options.arch = 990;
  WarmupReport report = warmup(loaded->module, loaded->sources, {{{"N", 64}}}, options);
  ASSERT_EQ(report.count(WarmupOutcome::Compiled), 1u) << report.items[0].error;
  EXPECT_EQ(report.target.rfind("compute_", 0), 0u) << report.target;
  Result<CacheContents> contents = inspect_cache(dir.path());
  ASSERT_TRUE(contents);
  ASSERT_EQ(contents.value().entries.size(), 1u);
  EXPECT_TRUE(contents.value().entries[0].ptx);
  std::string bytes = testing::read_text(dir.file(contents.value().entries[0].file));
  EXPECT_NE(bytes.find(".version"), std::string::npos); // PTX text
}

TEST(Warmup, NoUsableCacheIsAnError) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);
  WarmupOptions options;
  options.cache_dir = dir.path();
  try {
    (void)warmup(loaded->module, loaded->sources, {{{"N", 64}}}, options);
    FAIL() << "expected an error";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("writable by everyone"), std::string::npos) << error.what();
  }
}

// Every KernelBench seed chain, both shape sets, at the KernelBench batch
// sizes, for sm_90 (the H100). Until every kernel kind has an emitter, a spec
// that needs a missing one fails here with "no emitter for ...".
class WarmupKernelBench : public ::testing::TestWithParam<std::string> {};

TEST_P(WarmupKernelBench, CompilesForSm90WithNvrtc) {
  TempDir dir;
  auto loaded = testing::load_module(testing::read_text(testing::source_path(GetParam())), GetParam());
  ASSERT_TRUE(loaded);
  WarmupOptions options;
  options.cache_dir = dir.path();
  options.arch = 90;
  WarmupReport report = warmup(loaded->module, loaded->sources, {{{"N", 128}}, {{"N", 1000}}}, options);
  ASSERT_EQ(report.items.size(), 2u);
  for (const WarmupItem& item : report.items)
    EXPECT_EQ(item.outcome, WarmupOutcome::Compiled) << item.fusion << ": " << item.error;
}

std::string spec_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.find("/small/") != std::string::npos ? "small_" : "v01_";
  std::string file = std::filesystem::path(info.param).stem().string();
  for (char c : file)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Specs, WarmupKernelBench, ::testing::ValuesIn(testing::kernelbench_specs()), spec_test_name);

} // namespace
} // namespace fusegen
