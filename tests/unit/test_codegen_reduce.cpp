// Code generation for row-reduce kernels (templates/row_reduce.cu,
// EmitRowReduce.cpp: normalizations and reductions over trailing dims, short
// rows sharing a block, rows cached in shared memory or reloaded, a
// reduction fused after a normalization) and generic-reduce kernels
// (templates/generic_reduce.cu, EmitGenericReduce.cpp: reductions and softmax
// over non-trailing dims). Every op, prologues and epilogues (with broadcast
// operands), symbolic and specialized dims, odd sizes and rank-0/1 inputs.
// Generated source is compiled with NVRTC for sm_80 and sm_90 (and, where the
// toolkit has nvcc, with nvcc -Werror all-warnings, checking ptxas reports no
// spills); launch geometry and key structure are checked.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"
#include "support/CodegenTesting.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace fusegen {
namespace {

// Shared with the other code generation tests (support/CodegenTesting.h).
using testing::contains;
using testing::kernel_text;
using testing::kinds_of;
using testing::plans_of;

Plan plan_of(const std::string& text, const DimBindings& dims = {}) {
  std::vector<Plan> plans = plans_of(text, dims);
  EXPECT_EQ(plans.size(), 1u);
  return plans.empty() ? Plan{} : plans[0];
}

GeneratedCode generate(const std::vector<Plan>& plans) {
  CodegenOptions options;
  options.source_name = "test.fg";
  Result<GeneratedCode> code = generate_cuda(plans, options);
  EXPECT_TRUE(code) << code.error();
  return code ? code.value() : GeneratedCode{};
}

GeneratedCode generate(const Plan& plan) { return generate(std::vector<Plan>{plan}); }

std::string generate_error(const Plan& plan) {
  Result<GeneratedCode> code = generate_cuda({plan}, CodegenOptions{});
  return code ? std::string("(no error)") : code.error();
}

// The plans' code, generated for sm_80 and sm_90 (where long rows may take
// clusters), compiles with NVRTC for that arch.
void expect_compiles(const std::vector<Plan>& plans, const std::string& what) {
  if (!testing::have_nvrtc())
    return;
  for (int arch : {80, 90}) {
    CodegenOptions options;
    options.arch = arch;
    Result<GeneratedCode> code = generate_cuda(plans, options);
    ASSERT_TRUE(code) << code.error();
    EXPECT_EQ(testing::nvrtc_compile(code.value().source, what + ".cu", arch), "") << what << " for sm_" << arch;
  }
}

void expect_compiles(const Plan& plan, const std::string& what) { expect_compiles(std::vector<Plan>{plan}, what); }

// nvcc -Werror all-warnings (unused variables, missing returns, ...) and no
// register spills reported by ptxas; skipped without nvcc.
void expect_nvcc_clean(const GeneratedCode& code, const std::string& what) {
#ifdef FUSEGEN_NVCC_PATH
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("fusegen_codegen_reduce_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path source = dir / (what + ".cu"), log = dir / (what + ".log");
  std::ofstream(source) << code.source;
  std::string command = std::string(FUSEGEN_NVCC_PATH) + " -arch=sm_90a -Werror all-warnings -Xptxas -v -c " +
                        source.string() + " -o " + (dir / (what + ".o")).string() + " > " + log.string() + " 2>&1";
  int status = std::system(command.c_str());
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(status, 0) << what << ":\n" << text.str();
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    if (contains(line, "bytes spill")) {
      EXPECT_TRUE(contains(line, " 0 bytes spill stores, 0 bytes spill loads")) << what << ": " << line;
    }
  }
  fs::remove_all(dir);
#else
  (void)code;
  (void)what;
#endif
}

// The launch of a fusion's only kernel (`fusion` a C string: see op_named).
const KernelLaunch& launch_of(const GeneratedCode& code, const char* fusion) {
  auto it = std::find_if(code.fusions.begin(), code.fusions.end(),
                         [&](const GeneratedFusion& f) { return f.name == fusion; });
  EXPECT_NE(it, code.fusions.end()) << fusion;
  return it->kernels.at(0);
}

// No template default survives and the entry is renamed.
void expect_hooks_filled(const std::string& source) {
  EXPECT_FALSE(contains(source, "fusegen_row_reduce(")) << "row_reduce entry not renamed";
  EXPECT_FALSE(contains(source, "fusegen_generic_reduce(")) << "generic_reduce entry not renamed";
  EXPECT_FALSE(contains(source, "FUSEGEN_HOOK(\"")) << "hook annotation left";
  EXPECT_FALSE(contains(source, "return args.buf[0][segment * args.dim[1] + i];")) << "default row load left";
  EXPECT_FALSE(contains(source, "// reduces dim 0 of [length, rows]")) << "default generic load left";
}

// ---- row reductions ----

constexpr const char* kRowReductions = R"(
fusion r_sum {
  input x : f32[N, 100]
  s = sum(x, dim=-1)
  output y = relu(s)
}
fusion r_mean {
  input x : f32[N, C, 7]
  input b : f32[C, 1]
  m = mean(x, dim=(1, 2), keepdim=true)
  output y = m + 1.0
}
fusion r_amax_all {
  input x : f32[N, 33]
  output y = amax(x)
}
fusion r_amin {
  input x : f32[4, 5000]
  output y = amin(x, dim=1, keepdim=true)
}
fusion r_max {
  input x : f32[N, 37]
  output y = max(x, dim=-1)
}
fusion r_min {
  input x : f32[N, 3, 37]
  input b : f32[3]
  m = min(x, dim=2)
  output y = m * b
}
fusion r_lse {
  input x : f32[N, 300]
  l = logsumexp(x, dim=1, keepdim=true)
  output y = l - 1.0
}
)";

TEST(CodegenReduce, RowReductionsEveryOp) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 37}, {"C", 12}}}) {
    std::vector<Plan> plans = plans_of(kRowReductions, dims);
    ASSERT_EQ(plans.size(), 7u);
    for (const Plan& plan : plans)
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::RowReduce}) << plan.fusion.name;
    GeneratedCode code = generate(plans);
    expect_hooks_filled(code.source);
    expect_compiles(plans, dims.empty() ? "row_reductions" : "row_reductions_dims");
    const char* anchors[] = {"kRowSum", "kRowMean", "kRowMax", "kRowMin", "kRowMax", "kRowMin", "kRowLogSumExp"};
    for (size_t f = 0; f < plans.size(); ++f) {
      std::string text = kernel_text(code, plans[f].fusion.name + "_k0");
      EXPECT_TRUE(contains(text, std::string("constexpr int kAnchor = ") + anchors[f] + ";")) << plans[f].fusion.name;
      EXPECT_TRUE(contains(text, "constexpr int kFinalOp = kRowNone;"));
      EXPECT_TRUE(contains(text, "constexpr int kCacheFloats = 0;")) << "reductions make one pass";
    }
    // The epilogue's broadcast operand b[3] is indexed by the result's channel coordinate.
    EXPECT_TRUE(contains(kernel_text(code, "r_min_k0"), "const long long c1 = segment % 3LL;"));
  }
}

TEST(CodegenReduce, RowReductionGeometry) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::vector<Plan> plans = plans_of(kRowReductions, {{"N", 37}, {"C", 12}});
  ASSERT_EQ(plans.size(), 7u);
  GeneratedCode code = generate(plans);
  // r_sum: rows of 100 go to warp slices of 16 lanes (100 / 8 rounded up
  // to a power of two), 16 rows per block: ceil(37 / 16) = 3 blocks.
  std::string sum = kernel_text(code, "r_sum_k0");
  EXPECT_TRUE(contains(sum, "constexpr int kTeamSize = 16;"));
  EXPECT_TRUE(contains(sum, "constexpr int kSegmentsPerItem = 16;"));
  EXPECT_TRUE(contains(sum, "constexpr int kUnroll = 8;"));
  EXPECT_EQ(launch_of(code, "r_sum").grid[0].value, 3);
  EXPECT_EQ(launch_of(code, "r_sum").block, 256);
  // r_amax_all: one segment of 37 * 33 elements: a whole block.
  EXPECT_TRUE(contains(kernel_text(code, "r_amax_all_k0"), "constexpr int kTeamSize = 256;"));
  EXPECT_EQ(launch_of(code, "r_amax_all").grid[0].value, 1);
  // r_amin: 4 rows of 5000, one block each.
  EXPECT_EQ(launch_of(code, "r_amin").grid[0].value, 4);
  EXPECT_EQ(launch_of(code, "r_amin").shared_bytes, 0);
}

// ---- row normalizations ----

constexpr const char* kRowNormalizations = R"(
fusion n_ln_affine {
  input x : f32[N, C, 8, 8]
  param w : f32[8, 8]
  param b : f32[8, 8]
  output y = layer_norm(x, normalized_shape=(8, 8), weight=w, bias=b, eps=1e-5)
}
fusion n_ln_weight {
  input x : f32[N, 20000]
  param w : f32[20000]
  h = gelu(x)
  output y = layer_norm(h, normalized_shape=20000, weight=w)
}
fusion n_in {
  input x : f32[N, C, H, W]
  param w : f32[C]
  param b : f32[C]
  output y = instance_norm(x, weight=w, bias=b, eps=1e-3)
}
fusion n_gn {
  input x : f32[N, 64, 16, 16]
  param w : f32[64]
  param b : f32[64]
  param scale : f32[64, 1, 1]
  h = group_norm(x, num_groups=8, weight=w, bias=b, eps=1e-5)
  output n = h
  output y = h * scale
}
fusion n_gn_sym {
  input x : f32[N, C, H]
  param w : f32[C]
  output y = group_norm(x, num_groups=4, weight=w)
}
fusion n_softmax {
  input x : f32[N, 1000]
  output y = softmax(x, dim=-1)
}
fusion n_log_softmax_long {
  input x : f32[N, 70000]
  output y = log_softmax(x, dim=1)
}
fusion n_ln_cached {
  input x : f32[N, 16384]
  output y = layer_norm(x, normalized_shape=16384)
}
fusion n_softmax_short {
  input x : f32[N, 5]
  h = x - 3.0
  s = softmax(h, dim=1)
  output y = s * 2.0
}
)";

TEST(CodegenReduce, RowNormalizationsEveryOp) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 37}, {"C", 12}, {"H", 9}, {"W", 7}}}) {
    std::vector<Plan> plans = plans_of(kRowNormalizations, dims);
    ASSERT_EQ(plans.size(), 9u);
    for (const Plan& plan : plans)
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::RowReduce}) << plan.fusion.name;
    GeneratedCode code = generate(plans);
    expect_hooks_filled(code.source);
    expect_compiles(plans, dims.empty() ? "row_norms" : "row_norms_dims");
    EXPECT_TRUE(contains(kernel_text(code, "n_ln_affine_k0"), "constexpr float kEps = 9.99999975e-06f;"));
    EXPECT_TRUE(contains(kernel_text(code, "n_in_k0"), "constexpr float kEps = 0.00100000005f;"));
    EXPECT_TRUE(contains(kernel_text(code, "n_softmax_k0"), "constexpr int kAnchor = kRowSoftmax;"));
    EXPECT_TRUE(contains(kernel_text(code, "n_log_softmax_long_k0"), "constexpr int kAnchor = kRowLogSoftmax;"));
    // Affine params: by position in the normalized dims (layer_norm), by channel otherwise.
    EXPECT_TRUE(contains(kernel_text(code, "n_ln_affine_k0"), "const long long channel = i;"));
    EXPECT_TRUE(contains(kernel_text(code, "n_gn_k0"), "const long long channel = (segment % 8LL) * 8LL + i / 256LL;"));
    // group_norm stores the normalized tensor and the scaled one.
    std::string gn = kernel_text(code, "n_gn_k0");
    EXPECT_TRUE(contains(gn, "constexpr int kElementStores = 2;"));
    EXPECT_TRUE(contains(gn, "stores.at[0] = args.buf[4] + index;"));
    EXPECT_TRUE(contains(gn, "stores.value[0] = y;"));
    EXPECT_TRUE(contains(gn, "stores.at[1] = args.buf[5] + index;"));
  }
}

// The write pass defers its stores behind a chunk's loads only where its
// hook loads something: affine params or a pointwise operand in memory.
TEST(CodegenReduce, WritePassDefersStoresOnlyBehindLoads) {
  GeneratedCode code = generate(plans_of(kRowNormalizations));
  EXPECT_TRUE(contains(kernel_text(code, "n_ln_affine_k0"), "constexpr bool kDeferElementStores = true;"));
  EXPECT_TRUE(contains(kernel_text(code, "n_in_k0"), "constexpr bool kDeferElementStores = true;"));
  EXPECT_TRUE(contains(kernel_text(code, "n_softmax_k0"), "constexpr bool kDeferElementStores = false;"));
  EXPECT_TRUE(contains(kernel_text(code, "n_log_softmax_long_k0"), "constexpr bool kDeferElementStores = false;"));
}

// A warp slice's lanes and elements a lane per chunk: at most 8 elements,
// 16 for softmax and log_softmax over rows of 256 or more.
TEST(CodegenReduce, WarpSliceLanesFollowTheRowAndTheOp) {
  struct Case {
    std::string body;
    int team;
    int unroll;
  };
  const Case cases[] = {
      {"output y = softmax(x, dim=1)", 16, 16},
      {"output y = log_softmax(x, dim=1)", 16, 16},
      {"output y = layer_norm(x, 256)", 32, 8},
      {"output y = sum(x, dim=1)", 32, 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    std::vector<Plan> plans = plans_of("fusion w {\n  input x : f32[N, 256]\n  " + c.body + "\n}\n", {{"N", 64}});
    const std::string text = kernel_text(generate(plans), "w_k0");
    EXPECT_TRUE(contains(text, "constexpr int kTeamSize = " + std::to_string(c.team) + ";"));
    EXPECT_TRUE(contains(text, "constexpr int kUnroll = " + std::to_string(c.unroll) + ";"));
  }
  // Shorter softmax rows keep 8: rows of 100 on 16 lanes.
  const std::string short_rows = kernel_text(
      generate(plans_of("fusion w {\n  input x : f32[N, 100]\n  output y = softmax(x, dim=1)\n}\n", {{"N", 64}})),
      "w_k0");
  EXPECT_TRUE(contains(short_rows, "constexpr int kTeamSize = 16;"));
  EXPECT_TRUE(contains(short_rows, "constexpr int kUnroll = 8;"));
}

TEST(CodegenReduce, ShortRowsShareABlockAndCacheInSharedMemory) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::vector<Plan> plans = plans_of(kRowNormalizations, {{"N", 64}, {"C", 12}, {"H", 9}, {"W", 7}});
  GeneratedCode code = generate(plans);
  // n_softmax_short: 5 elements per row: a thread a row (5 loads at once),
  // 256 rows per block.
  std::string text = kernel_text(code, "n_softmax_short_k0");
  EXPECT_TRUE(contains(text, "constexpr int kTeamSize = 1;"));
  EXPECT_TRUE(contains(text, "constexpr int kSegmentsPerItem = 256;"));
  EXPECT_TRUE(contains(text, "constexpr int kCacheFloats = 5;"));
  EXPECT_TRUE(contains(text, "constexpr int kUnroll = 8;"));
  const KernelLaunch& launch = launch_of(code, "n_softmax_short");
  EXPECT_EQ(launch.grid[0].value, 1);
  EXPECT_EQ(launch.block, 256);
  EXPECT_EQ(launch.shared_bytes, 256 * 5 * 4);
  // n_softmax: rows of 1000 floats, one warp each, 8 per block: 32000 bytes
  // of cache; up to 16 elements a lane per chunk (softmax over rows of 256
  // or more).
  EXPECT_TRUE(contains(kernel_text(code, "n_softmax_k0"), "constexpr int kTeamSize = 32;"));
  EXPECT_TRUE(contains(kernel_text(code, "n_softmax_k0"), "constexpr int kUnroll = 16;"));
  EXPECT_EQ(launch_of(code, "n_softmax").shared_bytes, 8 * 1000 * 4);
  EXPECT_EQ(launch_of(code, "n_softmax").grid[0].value, 8);
  // n_gn: (sample, group) rows of 8 channels * 256: a block each, cached.
  EXPECT_TRUE(contains(kernel_text(code, "n_gn_k0"), "constexpr int kTeamSize = 256;"));
  EXPECT_EQ(launch_of(code, "n_gn").shared_bytes, 2048 * 4);
  EXPECT_EQ(launch_of(code, "n_gn").grid[0].value, 64 * 8);
  // n_ln_cached: 64 rows of 16384 floats fill half the SMs, so on sm_90
  // each is split over a cluster of 4 blocks of 4096 cached floats.
  EXPECT_EQ(launch_of(code, "n_ln_cached").cluster, 4);
  EXPECT_EQ(launch_of(code, "n_ln_cached").shared_bytes, 4096 * 4);
  EXPECT_EQ(launch_of(code, "n_ln_cached").grid[0].value, 64 * 4);
  // With 512 rows, 64 KiB (which needs the opt-in): the longest row cached by 256 threads.
  GeneratedCode many = generate(plans_of(kRowNormalizations, {{"N", 512}, {"C", 12}, {"H", 9}, {"W", 7}}));
  EXPECT_TRUE(contains(kernel_text(many, "n_ln_cached_k0"), "constexpr int kCacheFloats = 16384;"));
  EXPECT_EQ(launch_of(many, "n_ln_cached").shared_bytes, 65536);
  EXPECT_EQ(launch_of(many, "n_ln_cached").cluster, 1);
  EXPECT_TRUE(contains(many.source, "cudaFuncSetAttribute(fusegen_n_ln_cached_k0_impl::fusegen_n_ln_cached_k0, "
                                    "cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);"));
}

TEST(CodegenReduce, LongRowsCacheWhatFitsAndReloadTheRest) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::vector<Plan> plans = plans_of(kRowNormalizations, {{"N", 512}, {"C", 12}, {"H", 9}, {"W", 7}});
  GeneratedCode code = generate(plans);
  // 70000 floats exceed what an sm_90 block may cache (half of 227 KiB, so
  // that two share an SM): a cluster of 8 blocks shares each row, 8752
  // cached floats each (8750 rounded up to whole runs of 4; the last part
  // is shorter).
  EXPECT_EQ(launch_of(code, "n_log_softmax_long").cluster, 8);
  EXPECT_EQ(launch_of(code, "n_log_softmax_long").shared_bytes, 8752 * 4);
  // Without clusters (sm_80) the first 20608 are cached, passes after the
  // first reload the rest; 512 threads for such rows.
  CodegenOptions sm_80;
  sm_80.arch = 80;
  Result<GeneratedCode> code_80 = generate_cuda(plans, sm_80);
  ASSERT_TRUE(code_80) << code_80.error();
  std::string text = kernel_text(code_80.value(), "n_log_softmax_long_k0");
  EXPECT_TRUE(contains(text, "constexpr int kCacheFloats = 20608;"));
  EXPECT_TRUE(contains(text, "constexpr int kBlockSize = 512;"));
  EXPECT_EQ(launch_of(code_80.value(), "n_log_softmax_long").shared_bytes, 20608 * 4);
  // 20000 floats exceed the 64 KiB of several teams but fit one block-wide
  // team's cache: 512 threads; the gelu prologue runs once per element.
  std::string ln = kernel_text(code, "n_ln_weight_k0");
  EXPECT_TRUE(contains(ln, "constexpr int kCacheFloats = 20000;"));
  EXPECT_TRUE(contains(ln, "constexpr int kBlockSize = 512;"));
  EXPECT_TRUE(contains(ln, "fusegen_gelu(x0)"));
  EXPECT_EQ(launch_of(code, "n_ln_weight").shared_bytes, 80000);
}

TEST(CodegenReduce, SymbolicRowLengthUsesDeviceDims) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::vector<Plan> plans = plans_of(kRowNormalizations);
  GeneratedCode code = generate(plans);
  // n_gn_sym over [N, C, H]: symbols sorted C, H, N; groups of C/4 channels.
  std::string text = kernel_text(code, "n_gn_sym_k0");
  EXPECT_TRUE(contains(text, "return ((args.dim[0] / 4LL) * (args.dim[1]));"));
  EXPECT_TRUE(contains(text, "constexpr int kCacheFloats = 0;"));
  EXPECT_FALSE(launch_of(code, "n_gn_sym").grid[0].value.has_value());
  EXPECT_TRUE(contains(launch_of(code, "n_gn_sym").grid[0].c, "N"));
}

// ---- a reduction fused after a normalization ----

constexpr const char* kFused = R"(
fusion f_gn_min {
  input  x    : f32[N, 8192]
  param  gn_w : f32[8192]
  param  gn_b : f32[8192]
  h = x + 1.0
  h = group_norm(h, num_groups=512, weight=gn_w, bias=gn_b, eps=1e-5)
  output y = min(h, dim=1, keepdim=true)
}
fusion f_ln_sum {
  input x : f32[N, 700]
  h = layer_norm(x, normalized_shape=700)
  h = relu(h)
  s = sum(h, dim=1)
  output y = s * 2.0
}
fusion f_in_lse {
  input x : f32[N, 8, 5, 5]
  h = instance_norm(x)
  output y = logsumexp(h, dim=(2, 3))
}
fusion f_gn1_amax {
  input x : f32[N, C]
  h = group_norm(x, num_groups=1)
  output y = amax(h, dim=1)
}
fusion f_gn_mean_big {
  input x : f32[N, 64, 32, 32]
  h = group_norm(x, num_groups=4)
  output y = mean(h, dim=(1, 2, 3))
}
fusion f_epilogue {
  input x : f32[N, 64]
  input s : f32[1]
  h = group_norm(x, num_groups=4)
  m = max(h, dim=1, keepdim=true)
  output y = m * s
}
)";

TEST(CodegenReduce, GroupNormThenMinOverTheRowIsOneKernel) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 100}, {"C", 40}}}) {
    std::vector<Plan> plans = plans_of(kFused, dims);
    ASSERT_EQ(plans.size(), 6u);
    const Plan& plan = plans[0];
    ASSERT_EQ(plan.kernels.size(), 1u);
    ASSERT_EQ(plan.kernels[0].stages.size(), 2u);
    GeneratedCode code = generate(plan);
    expect_hooks_filled(code.source);
    expect_compiles(plan, "gn_min");
    std::string text = kernel_text(code, "f_gn_min_k0");
    // One block per sample: 512 groups of 16 channels, 256 teams of 2 lanes.
    EXPECT_TRUE(contains(text, "constexpr int kAnchor = kRowMoments;"));
    EXPECT_TRUE(contains(text, "constexpr int kFinalOp = kRowMin;"));
    EXPECT_TRUE(contains(text, "constexpr int kSegmentsPerItem = 512;"));
    EXPECT_TRUE(contains(text, "constexpr int kTeamSize = 2;"));
    EXPECT_TRUE(contains(text, "const float v4 = (x0 + 1.0f);")) << "prologue x + 1 on load";
    EXPECT_TRUE(contains(text, "const long long channel = (segment % 512LL) * 16LL + i;"));
    EXPECT_TRUE(contains(text, "args.buf[3][item] = value;"));
    if (!dims.empty()) {
      EXPECT_EQ(launch_of(code, "f_gn_min").grid[0].value, 100);
    }
  }
}

TEST(CodegenReduce, FusedReductionsEveryShape) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 5}, {"C", 40}}}) {
    std::vector<Plan> plans = plans_of(kFused, dims);
    for (const Plan& plan : plans) {
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::RowReduce}) << plan.fusion.name;
      ASSERT_EQ(plan.kernels[0].stages.size(), 2u) << plan.fusion.name;
    }
    GeneratedCode code = generate(plans);
    expect_compiles(plans, "fused");
    EXPECT_TRUE(contains(kernel_text(code, "f_ln_sum_k0"), "constexpr int kFinalOp = kRowSum;"));
    EXPECT_TRUE(contains(kernel_text(code, "f_in_lse_k0"), "constexpr int kFinalOp = kRowLogSumExp;"));
    EXPECT_TRUE(contains(kernel_text(code, "f_gn_mean_big_k0"), "constexpr int kFinalOp = kRowMean;"));
    // The stage-0 epilogue (relu) feeds the final sum; the stage-1 epilogue scales it.
    std::string ln = kernel_text(code, "f_ln_sum_k0");
    EXPECT_TRUE(contains(ln, "fusegen_relu(value)"));
    EXPECT_TRUE(contains(ln, "(value * 2.0f)"));
    EXPECT_TRUE(contains(kernel_text(code, "f_epilogue_k0"), "__ldg(args.buf[1] + (0))"));
  }
  // A single-row final reduction gets a block just big enough for its segments.
  GeneratedCode code = generate(plans_of(kFused, {{"N", 5}, {"C", 40}}));
  EXPECT_EQ(launch_of(code, "f_in_lse").block, 32); // instance_norm rows of 25: one warp
  EXPECT_EQ(launch_of(code, "f_in_lse").grid[0].value, 5 * 8);
}

// ---- prologues with broadcast operands, eval batch_norm, ranks 0 and 1 ----

constexpr const char* kPrologues = R"(
fusion p_ln_bcast {
  input x : f32[N, 48]
  input b : f32[48]
  input z : f32[N, 48]
  h = x + b
  h = h * z
  n = layer_norm(h, normalized_shape=48)
  output y = n + x
}
fusion p_in_scale {
  input x : f32[N, C, 6, 5]
  input s : f32[C, 1, 1]
  h = x * s
  output y = instance_norm(h)
}
fusion p_bn_softmax {
  input x : f32[N, C, 9]
  input rm : f32[C]
  input rv : f32[C]
  h = batch_norm(x, rm, rv, training=false)
  output y = log_softmax(h, dim=2)
}
fusion p_rank0_sum {
  input x : f32[]
  output y = sum(x)
}
fusion p_rank0_softmax {
  input x : f32[]
  output y = softmax(x, dim=0)
}
fusion p_rank1_lse {
  input x : f32[N]
  output y = logsumexp(x, dim=0)
}
fusion p_rank1_softmax {
  input x : f32[N]
  output y = softmax(x, dim=0)
}
)";

TEST(CodegenReduce, ProloguesAndSmallRanks) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims : {DimBindings{}, DimBindings{{"N", 37}, {"C", 3}}}) {
    std::vector<Plan> plans = plans_of(kPrologues, dims);
    ASSERT_EQ(plans.size(), 7u);
    for (const Plan& plan : plans)
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::RowReduce}) << plan.fusion.name;
    GeneratedCode code = generate(plans);
    expect_hooks_filled(code.source);
    expect_compiles(plans, dims.empty() ? "prologues" : "prologues_dims");
    // Same-shape operands load at the flat index; b[48] by its coordinate.
    std::string ln = kernel_text(code, "p_ln_bcast_k0");
    EXPECT_TRUE(contains(ln, "const float x0 = args.buf[0][index];"));
    EXPECT_TRUE(contains(ln, "const long long c1 = index % 48LL;"));
    EXPECT_TRUE(contains(ln, "__ldg(args.buf[1] + (c1))"));
    // Rank 0: one segment of one element.
    std::string rank0 = kernel_text(code, "p_rank0_sum_k0");
    EXPECT_TRUE(contains(rank0, "return 1LL;"));
    EXPECT_TRUE(contains(rank0, "constexpr int kTeamSize = 1;"));
  }
}

// ---- generic reductions ----

constexpr const char* kGeneric = R"(
fusion g_sum0 {
  input x : f32[N, C]
  output y = sum(x, dim=0)
}
fusion g_mean02 {
  input x : f32[A, B, 7]
  m = mean(x, dim=(0, 2), keepdim=true)
  output y = m * 3.0
}
fusion g_min1 {
  input x : f32[N, C, H, W]
  output y = min(x, dim=1)
}
fusion g_amax01 {
  input x : f32[A, B, 9]
  output y = amax(x, dim=(0, 1), keepdim=true)
}
fusion g_max0 {
  input x : f32[N, 5]
  output y = max(x, dim=0, keepdim=true)
}
fusion g_lse0 {
  input x : f32[N, 33]
  output y = logsumexp(x, dim=0)
}
fusion g_softmax1 {
  input x : f32[N, C, L]
  h = x * 2.0
  output y = softmax(h, dim=1)
}
fusion g_log_softmax0 {
  input x : f32[N, 17]
  input b : f32[17]
  s = log_softmax(x, dim=0)
  output y = s + b
}
)";

TEST(CodegenReduce, GenericEveryOp) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  for (const DimBindings& dims :
       {DimBindings{}, DimBindings{{"N", 37}, {"C", 12}, {"H", 9}, {"W", 7}, {"A", 5}, {"B", 6}, {"L", 513}}}) {
    std::vector<Plan> plans = plans_of(kGeneric, dims);
    ASSERT_EQ(plans.size(), 8u);
    for (const Plan& plan : plans)
      ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::GenericReduce}) << plan.fusion.name;
    GeneratedCode code = generate(plans);
    expect_hooks_filled(code.source);
    expect_compiles(plans, dims.empty() ? "generic" : "generic_dims");
    const char* anchors[] = {"kGenSum", "kGenMean",      "kGenMin",     "kGenMax",
                             "kGenMax", "kGenLogSumExp", "kGenSoftmax", "kGenLogSoftmax"};
    for (size_t f = 0; f < plans.size(); ++f)
      EXPECT_TRUE(contains(kernel_text(code, plans[f].fusion.name + "_k0"),
                           std::string("constexpr int kAnchor = ") + anchors[f] + ";"))
          << plans[f].fusion.name;
    // softmax over dim 1 of [N, C, L]: prologue on load, the element stored where it was read.
    std::string softmax = kernel_text(code, "g_softmax1_k0");
    EXPECT_TRUE(contains(softmax, "(x0 * 2.0f)"));
    EXPECT_TRUE(contains(softmax, "args.buf[1][offset] = value;"));
    // log_softmax's epilogue adds b[17] by the kept coordinate.
    EXPECT_TRUE(contains(kernel_text(code, "g_log_softmax0_k0"), "__ldg(args.buf[1] + (c1))"));
  }
}

TEST(CodegenReduce, GenericIndexMathAndGrid) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  std::vector<Plan> plans =
      plans_of(kGeneric, {{"N", 3}, {"C", 12}, {"H", 9}, {"W", 7}, {"A", 5}, {"B", 6}, {"L", 513}});
  GeneratedCode code = generate(plans);
  // min over dim 1 of [3, 12, 9, 7]: rows are (n, h, w), consecutive threads consecutive w.
  std::string text = kernel_text(code, "g_min1_k0");
  EXPECT_TRUE(contains(text, "const long long c3 = row % 7LL;"));
  EXPECT_TRUE(contains(text, "const long long c1 = j;"));
  EXPECT_TRUE(contains(text, "const long long offset = c0 * 756LL + c1 * 63LL + c2 * 7LL + c3;"));
  EXPECT_EQ(launch_of(code, "g_min1").grid[0].value, 1); // 189 rows
  EXPECT_EQ(launch_of(code, "g_min1").block, 256);
  // softmax over dim 1 of [3, 12, 513]: 1539 rows -> 7 blocks.
  EXPECT_EQ(launch_of(code, "g_softmax1").grid[0].value, 7);
}

// ---- refusals and determinism ----

TEST(CodegenReduce, GenericRefusesRowNormalizations) {
  std::vector<Plan> plans = plans_of(kRowNormalizations);
  Plan plan = plans.at(0); // layer_norm
  plan.kernels[0].kind = KernelKind::GenericReduce;
  EXPECT_TRUE(contains(generate_error(plan), "generic_reduce: layer_norm is not supported")) << generate_error(plan);
}

TEST(CodegenReduce, RowReduceRefusesNonTrailingDims) {
  Plan plan = plans_of(kGeneric).at(2); // min over dim 1 of [N, C, H, W]
  plan.kernels[0].kind = KernelKind::RowReduce;
  EXPECT_TRUE(contains(generate_error(plan), "row_reduce: min does not reduce the trailing dims"))
      << generate_error(plan);
}

TEST(CodegenReduce, Deterministic) {
  std::vector<Plan> plans = plans_of(kFused);
  Result<GeneratedCode> a = generate_cuda(plans, CodegenOptions{});
  Result<GeneratedCode> b = generate_cuda(plans, CodegenOptions{});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.value().source, b.value().source);
}

// nvcc rejects what NVRTC lets pass (unused locals, missing returns) under
// -Werror all-warnings; ptxas must report no spills.
// A layer_norm over rows longer than a block's cache: clusters of 8 blocks
// of 512 threads, bounded to two blocks per SM, with a prologue, affine
// params and an epilogue that reads memory.
const char* kClusterNorms = R"(
fusion c_ln {
  input x : f32[N, 128256]
  input r : f32[N, 128256]
  param w : f32[128256]
  param b : f32[128256]
  h = layer_norm(gelu(x), 128256, weight=w, bias=b)
  output y = relu(h) * 2.0 + r
}
)";

TEST(CodegenReduce, NvccWarningFreeWithoutSpills) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
#ifndef FUSEGEN_NVCC_PATH
  GTEST_SKIP() << "skipped: no nvcc";
#endif
  DimBindings dims = {{"N", 37}, {"C", 12}, {"H", 9}, {"W", 7}, {"A", 5}, {"B", 6}, {"L", 513}};
  for (bool specialized : {false, true}) {
    std::vector<Plan> all;
    for (const char* spec : {kRowReductions, kRowNormalizations, kFused, kPrologues, kGeneric, kClusterNorms}) {
      std::vector<Plan> plans = plans_of(spec, specialized ? dims : DimBindings{});
      all.insert(all.end(), plans.begin(), plans.end());
    }
    expect_nvcc_clean(generate(all), specialized ? "all_dims" : "all_symbolic");
  }
}

// A reduction with a pointwise prologue (x * 2 then sum): disabled until the
// planner's try_fuse_reduction stops reading the anchor of an elementwise
// kernel (stage op kNoId) — it throws std::out_of_range while planning.
TEST(CodegenReduce, ReductionWithPrologue) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  Plan plan = plan_of(R"(
fusion r_prologue {
  input x : f32[N, 100]
  h = x * 2.0
  output y = sum(h, dim=-1)
}
)");
  ASSERT_EQ(kinds_of(plan), std::vector<KernelKind>{KernelKind::RowReduce});
  GeneratedCode code = generate(plan);
  expect_compiles(plan, "reduction_prologue");
  EXPECT_TRUE(contains(kernel_text(code, "r_prologue_k0"), "(x0 * 2.0f)"));
}

} // namespace
} // namespace fusegen
