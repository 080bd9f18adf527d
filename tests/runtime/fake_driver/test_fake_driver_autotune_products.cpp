// Autotuning the strict product against the fake libcuda: on sm_90 with
// strict_product unset, FP16x3 is a candidate (with the heuristic's blocks
// and each forced block), the winner's name shows it, and the tuned entry
// (under the request's key) is what a later runtime loads; a pinned
// strict_product, tf32 precision and sm_80 have no product candidates.
#include "FakeDriver.h"

namespace fusegen {
namespace {

const char* const kGemmChain = "specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";

class FakeDriverProducts : public FakeDriver {
protected:
  struct Run {
    Stats stats;
    std::vector<Tuning> tunings;
    std::string last_image; // the last module the call loaded (the fake's copy)
  };
  // One call of chain 62 at N = n on a runtime of its own.
  Run call(const RuntimeOptions& o, int64_t n) {
    auto loaded = testing::load_module(testing::read_text(testing::source_path(kGemmChain)), kGemmChain);
    EXPECT_TRUE(loaded);
    if (!loaded)
      return {};
    Runtime rt(0, o);
    Function f = rt.load_file(testing::source_path(kGemmChain)).function(loaded->fusion().name);
    Tensors t(rt, specialized(*loaded, n));
    g_fake->module_images.clear();
    f.call(t.args, t.outs, nullptr);
    return {rt.stats(), rt.tunings(), g_fake->module_images.empty() ? "" : g_fake->module_images.back()};
  }
  RuntimeOptions with(const std::string& cache_dir, std::optional<StrictProduct> product, bool autotune) {
    RuntimeOptions o = options();
    o.cache_dir = cache_dir;
    o.strict_product = product;
    o.autotune = autotune;
    return o;
  }
  static bool names_fp16x3(const Tuning& tuning) { return tuning.report.find(", fp16x3") != std::string::npos; }
};

// At N = 16384 the heuristic's GEMM blocks are 128 rows on wgmma, where
// FP16x3 is taken. The fake clock makes the kernels of FP16x3 with the
// heuristic's blocks (their image, from a runtime pinned to FP16x3) the
// fastest: autotuning keeps them, names the product, and stores them under
// the unpinned key, which a later runtime without autotuning loads.
TEST_F(FakeDriverProducts, AutotuneTimesFp16x3AndStoresTheWinner) {
  const int64_t n = 16384;
  TempDir pinned_fp16x3, pinned_3xtf32;
  const std::string fp16x3_image = call(with(pinned_fp16x3.path(), StrictProduct::FP16x3, false), n).last_image;
  const std::string tf32x3_image = call(with(pinned_3xtf32.path(), StrictProduct::ThreeTF32, false), n).last_image;
  ASSERT_FALSE(fp16x3_image.empty());
  // (Images compared as booleans: a failure would print them whole.)
  ASSERT_TRUE(fp16x3_image != tf32x3_image); // FP16x3 changes the heuristic's kernels here
  g_fake->image_ms[fp16x3_image] = 0.001;    // every other launch takes 0.01 ms

  const Run tuned = call(with(cache_.path(), std::nullopt, true), n);
  EXPECT_EQ(tuned.stats.tunings, 1u);
  ASSERT_EQ(tuned.tunings.size(), 1u);
  const Tuning& tuning = tuned.tunings[0];
  EXPECT_TRUE(tuning.timed);
  EXPECT_EQ(tuning.chosen, "heuristic, fp16x3");
  EXPECT_EQ(tuning.heuristic, "128x128 (heuristic)");
  EXPECT_LT(tuning.chosen_ms, tuning.heuristic_ms);
  EXPECT_NE(tuning.chosen_variants.find("128x128 blocks, fp16x3 products"), std::string::npos)
      << tuning.chosen_variants;
  EXPECT_EQ(tuning.heuristic_variants.find("fp16x3"), std::string::npos) << tuning.heuristic_variants;
  // Forced blocks with FP16x3 are candidates too (128x128 with FP16x3 is
  // the heuristic's, so it is not timed twice); 64-row blocks do not take
  // it, so they are not compiled again.
  EXPECT_NE(tuning.report.find("heuristic, fp16x3 "), std::string::npos) << tuning.report;
  EXPECT_NE(tuning.report.find("128x64, fp16x3 "), std::string::npos) << tuning.report;
  EXPECT_EQ(tuning.report.find("128x128, fp16x3 "), std::string::npos) << tuning.report;
  EXPECT_EQ(tuning.report.find("64x64, fp16x3"), std::string::npos) << tuning.report;
  EXPECT_EQ(tuned.stats.disk_writes, 1u);

  const Run later = call(with(cache_.path(), std::nullopt, false), n);
  EXPECT_EQ(later.stats.compiles, 0u);
  EXPECT_EQ(later.stats.disk_loads, 1u);
  EXPECT_TRUE(later.tunings.empty());
  EXPECT_TRUE(later.last_image == fp16x3_image); // the tuned entry, FP16x3's kernels

  // A runtime pinned to 3xTF32 has a key of its own: not the tuned entry.
  const Run pinned = call(with(cache_.path(), StrictProduct::ThreeTF32, false), n);
  EXPECT_EQ(pinned.stats.disk_loads, 0u);
  EXPECT_TRUE(pinned.last_image == tf32x3_image);
  EXPECT_EQ(log_.count(), 0u);
}

// Product candidates only where the product is open: strict precision,
// strict_product unset, a target with FP16x3 products. Chain 62 at N = 128
// has 6 distinct candidates without them (the heuristic's 64x64:8, then
// 128x128 and 128x64 unsplit and split 8, 64x64 unsplit) and 4 more with
// them (FP16x3 with 128-row blocks).
TEST_F(FakeDriverProducts, AutotuneTimesNoProductsWhereTheyAreNotOpen) {
  const int64_t n = 128;
  TempDir open_cache;
  const Run open = call(with(open_cache.path(), std::nullopt, true), n);
  ASSERT_EQ(open.tunings.size(), 1u);
  EXPECT_TRUE(names_fp16x3(open.tunings[0])) << open.tunings[0].report;
  EXPECT_EQ(open.stats.compiles, 10u) << open.tunings[0].report;

  for (StrictProduct product : {StrictProduct::ThreeTF32, StrictProduct::FP16x3}) {
    TempDir cache;
    const Run pinned = call(with(cache.path(), product, true), n);
    ASSERT_EQ(pinned.tunings.size(), 1u);
    EXPECT_FALSE(names_fp16x3(pinned.tunings[0])) << pinned.tunings[0].report;
    EXPECT_EQ(pinned.stats.compiles, 6u) << strict_product_name(product) << ": " << pinned.tunings[0].report;
  }
  {
    TempDir cache;
    RuntimeOptions o = with(cache.path(), std::nullopt, true);
    o.precision = Precision::TF32;
    const Run tf32 = call(o, n);
    ASSERT_EQ(tf32.tunings.size(), 1u);
    EXPECT_FALSE(names_fp16x3(tf32.tunings[0])) << tf32.tunings[0].report;
    EXPECT_EQ(tf32.tunings[0].chosen_variants.find("fp16x3"), std::string::npos);
  }
  {
    TempDir cache;
    g_fake->compute_major = 8;
    const Run sm80 = call(with(cache.path(), std::nullopt, true), n);
    ASSERT_EQ(sm80.tunings.size(), 1u);
    EXPECT_FALSE(names_fp16x3(sm80.tunings[0])) << sm80.tunings[0].report;
    EXPECT_GT(sm80.stats.compiles, 1u); // the blocks are still tuned
  }
  EXPECT_EQ(log_.count(), 0u);
}

} // namespace
} // namespace fusegen
