// Autotuning against the fake libcuda: candidates timed with events on a
// stream of its own, the fastest kept and stored, nothing left allocated,
// blocks a fused batch_norm cannot take skipped, one candidate not timed.
#include "FakeDriver.h"

namespace fusegen {
namespace {

// Autotuning compiles the heuristic's kernels and each GEMM block, times
// them with events on a stream of its own (the fake clock charges each
// launch by its grid), keeps the fastest, and stores it as the autotuned
// entry, which a later runtime without autotuning uses.
TEST_F(FakeDriver, AutotuneKeepsTheFastestBlockAndStoresIt) {
  const std::string spec = "specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  const int64_t n = 128;
  std::map<std::string, std::string> grid_of; // candidate ("64x64:8") -> the GEMM kernel's grid
  std::string gemm_kernel;
  for (GemmBlock block : kGemmBlocks)
    for (int split : kGemmSplits) {
      block.split_k = split;
      try {
        runtime::GeneratedUnit unit =
            runtime::generate_unit(loaded->fusion(), {{"N", n}}, Precision::Strict, 90, &loaded->sources, block);
        const KernelLaunchPlan& k = unit.launch.kernels.at(0);
        gemm_kernel = k.name;
        grid_of[format_gemm_block(block)] =
            std::to_string(k.grid[0]) + "," + std::to_string(k.grid[1]) + "," + std::to_string(k.grid[2]);
      } catch (const RuntimeError&) {
        // a candidate the kernel cannot take (128x256 is tf32 only)
      }
    }
  // 128x128, 128x64 and 64x64, each unsplit and split by 2, 4 and 8 (a few
  // have the same grid; 128x128 unsplit has a grid of its own).
  ASSERT_EQ(grid_of.size(), 12u);
  EXPECT_EQ(grid_of["64x64:8"], "32,2,1");
  auto set_costs = [&] {
    for (const auto& [candidate, grid] : grid_of)
      g_fake->launch_ms[grid] = 1.0;
    g_fake->launch_ms[grid_of["128x128"]] = 0.5; // not the heuristic's pick at N=128 (too few blocks)...
    g_fake->launch_ms[grid_of["128x64"]] = 2.0;  // ...which is 64x64:8
  };
  auto gemm_grid_of_last_call = [&] {
    for (auto it = g_fake->launches.rbegin(); it != g_fake->launches.rend(); ++it)
      if (it->kernel == gemm_kernel)
        return std::to_string(it->grid[0]) + "," + std::to_string(it->grid[1]) + "," + std::to_string(it->grid[2]);
    return std::string("(none)");
  };
  Fusion concrete = specialized(*loaded, n);
  RuntimeOptions tuned_options = options();
  tuned_options.autotune = true;
  {
    Runtime rt(0, tuned_options);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    set_costs();
    f.call(t.args, t.outs, nullptr);
    EXPECT_EQ(gemm_grid_of_last_call(), grid_of["128x128"]);
    Stats s = rt.stats();
    EXPECT_EQ(s.tunings, 1u);
    // The heuristic's and five forced candidates: 128x128, 128x64 and 64x64,
    // each unsplit and with its largest split, 8 (64x64:8 generates the
    // heuristic's source, so it is not compiled again; 128x256 is refused
    // before compiling: tf32 only), and the four 128-row ones with FP16x3
    // products (FP16x3 does not change the 64-row ones, the heuristic's
    // included: test_fake_driver_autotune_products.cpp).
    EXPECT_EQ(s.compiles, 10u);
    EXPECT_EQ(s.disk_writes, 1u);
    EXPECT_EQ(g_fake->live_streams, 0);
    EXPECT_EQ(g_fake->live_events, 0);
    f.call(t.args, t.outs, nullptr); // tuned once per (fusion, dims)
    EXPECT_EQ(rt.stats().tunings, 1u);
    // The tuning as recorded: the winner against the heuristic's kernels,
    // with both times and each kernel's variant.
    std::vector<Tuning> tunings = rt.tunings();
    ASSERT_EQ(tunings.size(), 1u);
    const Tuning& tuning = tunings[0];
    EXPECT_EQ(tuning.fusion, loaded->fusion().name);
    EXPECT_EQ(tuning.dims, "N=128");
    EXPECT_TRUE(tuning.timed);
    EXPECT_EQ(tuning.chosen, "128x128");
    EXPECT_EQ(tuning.heuristic, "64x64:8 (heuristic)");
    EXPECT_GT(tuning.chosen_ms, 0.0);
    EXPECT_LT(tuning.chosen_ms, tuning.heuristic_ms);
    EXPECT_EQ(tuning.chosen_variants.rfind("gemm.cu: 128x128 blocks, 3xtf32 products", 0), 0u)
        << tuning.chosen_variants;
    EXPECT_EQ(tuning.chosen_variants.find("split-K"), std::string::npos) << tuning.chosen_variants;
    EXPECT_EQ(tuning.heuristic_variants.rfind("gemm.cu: 64x64 blocks, 3xtf32 products, split-K 8", 0), 0u)
        << tuning.heuristic_variants;
    EXPECT_NE(tuning.report.find("64x64:8 (heuristic)"), std::string::npos) << tuning.report;
    EXPECT_NE(tuning.report.find("128x128 "), std::string::npos) << tuning.report;
  }
  {
    RuntimeOptions plain = options();
    plain.autotune = false;
    Runtime rt(0, plain);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    f.call(t.args, t.outs, nullptr);
    EXPECT_EQ(gemm_grid_of_last_call(), grid_of["128x128"]);
    Stats s = rt.stats();
    EXPECT_EQ(s.compiles, 0u);
    EXPECT_EQ(s.disk_loads, 1u);
    EXPECT_EQ(s.tunings, 0u);
    EXPECT_TRUE(rt.tunings().empty()); // the tuned entry came from the disk cache
  }
  EXPECT_EQ(log_.count(), 0u);
}

// Tuning leaves nothing allocated behind: the scratch tensors, streams,
// events and the workspaces the candidates kept for the timing stream are
// gone, so a tuned call holds what an untuned one does.
TEST_F(FakeDriver, AutotuneFreesWhatItTimedWith) {
  // Over 128 rows the batch_norm's intermediates go through a workspace.
  const std::string spec = "specs/kernelbench/small/39_gemm_scale_batchnorm.fg";
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  Fusion concrete = specialized(*loaded, 256);
  auto allocations_of_a_call = [&](bool autotune, const std::string& cache_dir) {
    RuntimeOptions o = options();
    o.cache_dir = cache_dir;
    o.autotune = autotune;
    Runtime rt(0, o);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    const int before = g_fake->live_allocations;
    f.call(t.args, t.outs, nullptr);
    EXPECT_EQ(rt.stats().tunings, autotune ? 1u : 0u);
    return g_fake->live_allocations - before;
  };
  TempDir tuned_cache, plain_cache;
  const int tuned = allocations_of_a_call(true, tuned_cache.path());
  const int plain = allocations_of_a_call(false, plain_cache.path());
  EXPECT_EQ(tuned, plain);
  EXPECT_GT(plain, 0); // the call's own workspace
  EXPECT_EQ(g_fake->live_streams, 0);
  EXPECT_EQ(g_fake->live_events, 0);
}

// A batch_norm fused into its GEMM (128 rows: one block holds them) takes
// only blocks that hold every row: autotuning skips the other candidates,
// which the generator refuses, and still tunes the call.
TEST_F(FakeDriver, AutotuneSkipsBlocksAFusedBatchNormCannotTake) {
  const std::string spec = "specs/kernelbench/small/39_gemm_scale_batchnorm.fg";
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  TempDir cache;
  RuntimeOptions o = options();
  o.cache_dir = cache.path();
  o.autotune = true;
  Runtime rt(0, o);
  Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
  Tensors t(rt, specialized(*loaded, 128));
  f.call(t.args, t.outs, nullptr);
  EXPECT_EQ(rt.stats().tunings, 1u);
  EXPECT_EQ(rt.stats().calls, 1u);
}

// A fusion without a GEMM has one candidate: nothing is timed, and the
// entry is still stored as autotuned so later runs do not try again.
TEST_F(FakeDriver, AutotuneWithOneCandidateTimesNothing) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  RuntimeOptions o = options();
  o.autotune = true;
  Runtime rt(0, o);
  Function f = rt.load_string(testing::kElementwiseSpec).function(loaded->fusion().name);
  Tensors t(rt, specialized(*loaded, 16));
  reset_fake();
  f.call(t.args, t.outs, nullptr);
  EXPECT_EQ(count_calls("cuEventCreate"), 0u);
  Stats s = rt.stats();
  EXPECT_EQ(s.tunings, 1u);
  EXPECT_EQ(s.compiles, 1u); // GEMM blocks are the only candidates besides the heuristic's
  EXPECT_EQ(s.disk_writes, 1u);
  std::vector<Tuning> tunings = rt.tunings();
  ASSERT_EQ(tunings.size(), 1u);
  EXPECT_FALSE(tunings[0].timed);
  EXPECT_EQ(tunings[0].report, "one candidate");
  EXPECT_EQ(tunings[0].chosen, "heuristic");
  EXPECT_EQ(tunings[0].heuristic, "heuristic");
  EXPECT_EQ(tunings[0].chosen_ms, 0.0);
  EXPECT_FALSE(tunings[0].chosen_variants.empty());
  EXPECT_EQ(tunings[0].chosen_variants, tunings[0].heuristic_variants);
}

} // namespace
} // namespace fusegen
