// Tests of the `fusegen` command line as a user runs it: the built binary
// (FUSEGEN_CLI_PATH) on temporary spec files, checking exit codes (0 success,
// 1 spec errors or a failed run, 2 bad command line or unreadable/unwritable file),
// stdout and stderr.
#include "fusegen/Frontend.h"
#include "fusegen/Interpreter.h"
#include "fusegen/Npy.h"

#include <gtest/gtest.h>

#include "support/CliTesting.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fusegen {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::contains;
using testing::read_file;
using testing::run_cli;
using testing::TempDir;

const fs::path kSpecDir = fs::path(FUSEGEN_SOURCE_DIR) / "specs" / "kernelbench";
const std::string kSmall39 = (kSpecDir / "small" / "39_gemm_scale_batchnorm.fg").string();
const std::string kSmall62 = (kSpecDir / "small" / "62_matmul_groupnorm_leakyrelu_sum.fg").string();
const std::string kSmall75 = (kSpecDir / "small" / "75_gemm_groupnorm_min_biasadd.fg").string();

// Valid until C is bound: 3 groups cannot divide every channel count.
const char* const kGroupsOfSymbolicC =
    "fusion f {\n  input x : f32[N, C]\n  output y = group_norm(x, num_groups=3)\n}\n";

// run --reference on given tensors (issue 26: it refused --inputs): the
// inputs --save wrote give the same outputs.
TEST(Cli, ReferenceRunsOnGivenInputs) {
  TempDir dir;
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/75_gemm_groupnorm_min_biasadd.fg";
  std::string saved = (dir.path() / "saved").string();
  CliResult first = run_cli({"run", spec, "--dims", "N=3", "--seed", "5", "--reference", "--save", saved});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  CliResult again = run_cli({"run", spec, "--dims", "N=3", "--reference", "--inputs", saved + "/inputs"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(contains(again.out, "inputs " + saved + "/inputs")) << again.out;
  auto outputs = [](const std::string& text) {
    size_t at = text.find("output y");
    return at == std::string::npos ? text : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(outputs(again.out), outputs(first.out));
  CliResult wrong = run_cli({"run", spec, "--dims", "N=4", "--reference", "--inputs", saved + "/inputs"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_TRUE(contains(wrong.err, "--inputs:")) << wrong.err;
}

// Generation never writes over the spec, and a failed write says why.
TEST(Cli, GenerationNeverOverwritesTheSpec) {
  TempDir dir;
  const fs::path spec = dir.path() / "spec.fg";
  fs::copy_file(kSmall62, spec);
  const std::string before = read_file(spec);
  for (const char* flag : {"-o", "-H"}) {
    CliResult r = run_cli({"generate", spec.string(), flag, spec.string()});
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_TRUE(contains(r.err, "refusing to write " + spec.string() + ": it is the input")) << r.err;
  }
  EXPECT_EQ(read_file(spec), before);
  CliResult r = run_cli({spec.string(), "-o", (dir.path() / "missing" / "k.cu").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "k.cu: No such file or directory")) << r.err;
  r = run_cli({"generate", spec.string(), "-o", (dir.path() / "k.cu").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(read_file(dir.path() / "k.cu"), "#error \"generated for sm_90a")) << "the arch guard";
}

// ---- check ----

struct SpecOutput {
  std::string file;
  std::string output; // the `output y : ...` line of `fusegen check`
};

TEST(Cli, CheckEveryKernelBenchSpec) {
  const std::vector<SpecOutput> specs = {
      {"39_gemm_scale_batchnorm.fg", "output y            : f32[N, 4096]"},
      {"62_matmul_groupnorm_leakyrelu_sum.fg", "output y    : f32[N, 8192]"},
      {"75_gemm_groupnorm_min_biasadd.fg", "output y    : f32[1, 8192, N, 1]"},
      {"85_conv2d_groupnorm_scale_maxpool_clamp.fg", "output y     : f32[N, 64, 31, 31]"},
      {"small/39_gemm_scale_batchnorm.fg", "output y            : f32[N, 512]"},
      {"small/62_matmul_groupnorm_leakyrelu_sum.fg", "output y    : f32[N, 256]"},
      {"small/75_gemm_groupnorm_min_biasadd.fg", "output y    : f32[1, 256, N, 1]"},
      {"small/85_conv2d_groupnorm_scale_maxpool_clamp.fg", "output y     : f32[N, 16, 15, 15]"},
  };
  for (const SpecOutput& spec : specs) {
    CliResult r = run_cli({"check", (kSpecDir / spec.file).string()});
    EXPECT_EQ(r.exit_code, 0) << spec.file << "\n" << r.err;
    EXPECT_EQ(r.err, "") << spec.file;
    EXPECT_TRUE(contains(r.out, "  " + spec.output + "\n")) << spec.file << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "(precision=strict)\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "  dims: N\n")) << r.out;
    size_t at = r.out.find("  fingerprint: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_EQ(r.out.substr(at + 15).find_first_not_of("0123456789abcdef"), 64u) << r.out;
  }
}

// Every KernelBench convolution and pool chain (specs/kernelbench/conv at
// KernelBench's shapes and conv/small; scripts/kernelbench_conv.py writes them
// from the problems' Models) passes `fusegen check`. Without --dims an op that
// has no GPU kernel yet is a warning, not an error.
TEST(Cli, CheckEveryKernelBenchConvSpec) {
  size_t count = 0;
  for (const fs::path& dir : {kSpecDir / "conv", kSpecDir / "conv" / "small"}) {
    std::vector<fs::path> specs;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".fg")
        specs.push_back(entry.path());
    std::sort(specs.begin(), specs.end());
    for (const fs::path& spec : specs) {
      CliResult r = run_cli({"check", spec.string()});
      EXPECT_EQ(r.exit_code, 0) << spec.string() << "\n" << r.err;
      EXPECT_FALSE(contains(r.err, "error:")) << spec.string() << "\n" << r.err;
      EXPECT_TRUE(contains(r.out, "  output y ")) << spec.string() << "\n" << r.out;
      EXPECT_TRUE(contains(r.out, "  dims: N\n")) << spec.string() << "\n" << r.out;
      ++count;
    }
  }
  EXPECT_EQ(count, 128u); // 64 chains, both shape sets
}

TEST(Cli, CheckReportsErrorsWithLocationAndCaret) {
  TempDir dir;
  std::string spec = dir.write("bad.fg", "fusion f {\n  input x : f32[4]\n  output y = relu(z)\n}\n");
  CliResult r = run_cli({"check", spec});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, spec + ":3:19: error: use of undefined name 'z'")) << r.err;
  EXPECT_TRUE(contains(r.err, "\n    output y = relu(z)\n" + std::string(2 + 18, ' ') + "^\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "\n1 error generated.\n")) << r.err;

  std::string two = dir.write("two.fg", "fusion f {\n  input x : f16[4]\n  output y = rleu(x)\n}\n");
  r = run_cli({"check", two});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, two + ":2:13: error: dtype f16 is not supported yet")) << r.err;
  EXPECT_TRUE(contains(r.err, two + ":3:14: error: unknown op 'rleu'")) << r.err;
  EXPECT_TRUE(contains(r.err, "2 errors generated.\n")) << r.err;
}

TEST(Cli, CheckWithDimsPrintsConcreteShapes) {
  CliResult r = run_cli({"check", kSmall75, "--dims", "N=128"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "  input  x    : f32[N, 512]\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  output y    : f32[1, 256, 128, 1]\n")) << r.out;
  r = run_cli({"check", (kSpecDir / "85_conv2d_groupnorm_scale_maxpool_clamp.fg").string(), "--dims=N=3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "output y     : f32[3, 64, 31, 31]")) << r.out;
}

TEST(Cli, CheckWithDimsReportsErrorsFoundWhenSpecializing) {
  TempDir dir;
  std::string spec = dir.write("groups.fg", kGroupsOfSymbolicC);
  EXPECT_EQ(run_cli({"check", spec}).exit_code, 0);
  CliResult r = run_cli({"check", spec, "--dims", "N=2,C=64"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, spec + ":3:14: error: group_norm: num_groups 3 does not divide the 64 channels"))
      << r.err;
  EXPECT_EQ(run_cli({"check", spec, "--dims", "N=2", "--dims", "C=48"}).exit_code, 0);
}

TEST(Cli, BadDimsAreUsageErrors) {
  for (const char* dims : {"N=abc", "N", "=3", "N=-1", "N=1,N=2"}) {
    CliResult r = run_cli({"check", kSmall62, "--dims", dims});
    EXPECT_EQ(r.exit_code, 2) << dims;
    EXPECT_TRUE(contains(r.err, "error: ")) << r.err;
  }
}

TEST(Cli, DumpAfterPasses) {
  CliResult r = run_cli({"check", kSmall62, "--dump-after=all"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* pass : {"build-ir", "verify", "dead-code", "verify-final"})
    EXPECT_TRUE(contains(r.err, std::string("// ----- IR after ") + pass + " -----\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "= group_norm(")) << r.err;

  r = run_cli({"check", kSmall62, "--dump-after", "dead-code"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "IR after dead-code")) << r.err;
  EXPECT_FALSE(contains(r.err, "IR after build-ir")) << r.err;

  r = run_cli({"check", kSmall62, "--dump-after=nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown pass 'nope' for --dump-after (known: build-ir,")) << r.err;
  EXPECT_EQ(r.out, "");
}

// ---- run ----

TEST(Cli, RunIsDeterministicPerSeed) {
  std::vector<std::string> args = {"run", kSmall62, "--dims", "N=4", "--seed", "7", "--reference"};
  CliResult first = run_cli(args);
  CliResult second = run_cli(args);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_TRUE(contains(first.out, "seed 7\n")) << first.out;
  EXPECT_TRUE(contains(first.out, "output y: f32[4, 256]  sum=")) << first.out;
  EXPECT_TRUE(contains(first.out, "  param w: f32[256, 512] uniform +-1/sqrt(fan_in)\n")) << first.out;
  args[5] = "8";
  CliResult other = run_cli(args);
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.substr(other.out.find("output y")), first.out.substr(first.out.find("output y")));
}

TEST(Cli, RunSavesInputsAndOutputsAsNpy) {
  TempDir dir;
  fs::path save = dir.path() / "saved";
  CliResult r = run_cli({"run", kSmall39, "--dims", "N=4", "--seed", "1", "--save", save.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "saved inputs and outputs under " + save.string())) << r.out;
  for (const char* name : {"x", "w", "b", "scale", "bn_w", "bn_b", "running_mean", "running_var"})
    EXPECT_TRUE(fs::is_regular_file(save / "inputs" / (std::string(name) + ".npy"))) << name;
  for (const char* name : {"y", "running_mean", "running_var"})
    EXPECT_TRUE(fs::is_regular_file(save / "outputs" / (std::string(name) + ".npy"))) << name;
  EXPECT_EQ(read_file(save / "outputs" / "y.npy").substr(0, 6), "\x93NUMPY");
  EXPECT_TRUE(contains(read_file(save / "inputs" / "x.npy").substr(0, 128), "'descr': '<f4'"));
  EXPECT_TRUE(contains(read_file(save / "outputs" / "y.npy").substr(0, 128), "'descr': '<f8'"));

  // The saved inputs reproduce the saved outputs through the library.
  std::map<std::string, HostTensor> inputs;
  for (const fs::directory_entry& entry : fs::directory_iterator(save / "inputs")) {
    Result<HostTensor> tensor = read_npy(entry.path().string());
    ASSERT_TRUE(tensor) << tensor.error();
    inputs[entry.path().stem().string()] = tensor.value();
  }
  SourceManager sources;
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, sources.add_buffer("39.fg", read_file(kSmall39)), diags);
  ASSERT_TRUE(module);
  Result<InterpreterResult> expected = interpret(module->fusions[0], inputs);
  ASSERT_TRUE(expected) << expected.error();
  Result<HostTensor> y = read_npy((save / "outputs" / "y.npy").string());
  ASSERT_TRUE(y) << y.error();
  EXPECT_EQ(y.value().shape, (std::vector<int64_t>{4, 512}));
  EXPECT_EQ(y.value().data, expected.value().outputs.at("y").data);
  Result<HostTensor> mean = read_npy((save / "outputs" / "running_mean.npy").string());
  ASSERT_TRUE(mean) << mean.error();
  EXPECT_EQ(mean.value().data, expected.value().state.at("running_mean").data);
}

TEST(Cli, RunWithoutDimsNamesTheMissingDim) {
  CliResult r = run_cli({"run", kSmall62, "--reference"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "needs a value for dim N (e.g. --dims N=128)")) << r.err;
  r = run_cli({"run", kSmall62, "--dims", "M=3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "has no dim named M")) << r.err;
}

TEST(Cli, RunWithSeveralFusionsNeedsFusionName) {
  TempDir dir;
  std::string spec = dir.write("two.fg", "fusion first {\n  input x : f32[N]\n  output y = relu(x)\n}\n"
                                         "fusion second {\n  input x : f32[N]\n  output y = sigmoid(x)\n}\n");
  CliResult r = run_cli({"run", spec, "--dims", "N=3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "several fusions; choose one with --fusion NAME")) << r.err;
  r = run_cli({"run", spec, "--dims", "N=3", "--fusion", "second"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "fusion second on the reference interpreter")) << r.out;
  r = run_cli({"run", spec, "--dims", "N=3", "--fusion", "third"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "no fusion named 'third'")) << r.err;
}

TEST(Cli, RunReportsSpecErrors) {
  TempDir dir;
  std::string bad = dir.write("bad.fg", "fusion f {\n  input x : f32[N]\n  output y = relu(z)\n}\n");
  CliResult r = run_cli({"run", bad, "--dims", "N=3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, bad + ":3:19: error: use of undefined name 'z'")) << r.err;
  std::string groups = dir.write("groups.fg", kGroupsOfSymbolicC);
  r = run_cli({"run", groups, "--dims", "N=2,C=64"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, groups + ":3:14: error: group_norm: num_groups 3 does not divide the 64 channels"))
      << r.err;
}

TEST(Cli, RunRejectsABadSeed) {
  for (const char* seed : {"abc", "-1", "1.5", ""}) {
    CliResult r = run_cli({"run", kSmall62, "--dims", "N=2", "--seed", seed});
    EXPECT_EQ(r.exit_code, 2) << seed;
    EXPECT_TRUE(contains(r.err, "bad --seed")) << r.err;
  }
}

// Dims that make a tensor too large fail with a message, not an abort.
TEST(Cli, RunWithHugeDimsFailsCleanly) {
  TempDir dir;
  std::string spec = dir.write("huge.fg", "fusion f {\n  input x : f32[N, 281474976710656]\n"
                                          "  output y = relu(x)\n}\n");
  CliResult r = run_cli({"run", spec, "--dims", "N=2"});
  EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << r.exit_code << "\n" << r.err;
  EXPECT_TRUE(contains(r.err, "error: ")) << r.err;
  // Within the element limit but beyond what the interpreter may allocate.
  std::string big = dir.write("big.fg", "fusion f {\n  input x : f32[N, 512]\n  output y = relu(x)\n}\n");
  r = run_cli({"run", big, "--dims", "N=100000000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "too large for the reference interpreter")) << r.err;
}

// ---- Files that cannot be read ----

TEST(Cli, UnreadableFilesAreUsageErrors) {
  TempDir dir;
  std::string missing = (dir.path() / "missing.fg").string();
  for (const char* command : {"check", "run"}) {
    CliResult r = run_cli({command, missing, "--dims", "N=2"});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err, "fusegen: error: " + missing + ": no such file\n") << command;
  }
  CliResult r = run_cli({"check", dir.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, ": not a regular file")) << r.err;

  std::string locked = dir.write("locked.fg", "fusion f {\n  input x : f32[4]\n  output y = relu(x)\n}\n");
  fs::permissions(locked, fs::perms::none);
  if (geteuid() != 0) { // root reads it anyway
    r = run_cli({"check", locked});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(contains(r.err, "cannot open file")) << r.err;
  }
  fs::permissions(locked, fs::perms::owner_all);
}

} // namespace
} // namespace fusegen

namespace fusegen {
namespace {

TEST(Cli, PlanPrintsKernelsBuffersAndLaunches) {
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg";
  CliResult r = run_cli({"plan", spec, "--dims", "N=1024"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "2 kernels")) << r.out;
  EXPECT_TRUE(contains(r.out, "t8 : f32[1024, 1] intermediate, 4.0 KiB")) << r.out;
  // Strict precision at 1024 x 8192 for sm_90 (wgmma): 128x128 blocks (8 * 64
  // of them); dynamic shared memory for 4 cp.async stages of (128 + 128) x 32
  // floats, the small parts of B (128 x 32) for two slices and 1 KB of
  // alignment slack.
  EXPECT_TRUE(contains(r.out, "fusegen_gemm_groupnorm_min_biasadd_k0: grid (64, 8, 1), block 256, "
                              "dynamic shared 164864 B"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "fills t8 with inf first")) << r.out;
}

TEST(Cli, GemmBlockForcesTheBlockOrFailsClearly) {
  TempDir dir;
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg";
  std::string cu = (dir.path() / "k.cu").string();
  CliResult forced = run_cli({spec, "-o", cu, "--dims", "N=1024", "--gemm-block", "64x64"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  std::string source = read_file(cu);
  EXPECT_TRUE(contains(source, "constexpr int kBlockM = 64;") && contains(source, "constexpr int kBlockN = 64;"));
  // The conv's gathered operands only run 64x64 blocks.
  std::string conv = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/85_conv2d_groupnorm_scale_maxpool_clamp.fg";
  CliResult refused = run_cli({conv, "-o", cu, "--dims", "N=8", "--gemm-block", "128x64"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(contains(refused.err, "cannot take 128x64 blocks (gathered operands take 64x64)")) << refused.err;
  // A split-K: clusters of 8 where a launch has few blocks, refused where it has enough.
  std::string small = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  CliResult split = run_cli({small, "-o", cu, "--dims", "N=128", "--gemm-block", "64x64:8"});
  EXPECT_EQ(split.exit_code, 0) << split.err;
  EXPECT_TRUE(contains(read_file(cu), "constexpr int kSplitK = 8;"));
  CliResult plan = run_cli({"plan", small, "--dims", "N=128"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_TRUE(contains(plan.out, "grid (32, 2, 1), block 256, dynamic shared 73728 B, clusters of 8")) << plan.out;
  CliResult unsplit = run_cli({spec, "-o", cu, "--dims", "N=1024", "--gemm-block", "64x64:8"});
  EXPECT_EQ(unsplit.exit_code, 1);
  EXPECT_TRUE(contains(unsplit.err, "cannot take 64x64:8 blocks (split-K is for launches of fewer than 132 blocks)"))
      << unsplit.err;
  CliResult bad = run_cli({spec, "-o", cu, "--gemm-block", "96x64"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "bad --gemm-block '96x64'")) << bad.err;
}

TEST(Cli, StrictProductChoosesHowStrictGemmsMultiply) {
  TempDir dir;
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/62_matmul_groupnorm_leakyrelu_sum.fg";
  std::string cu = (dir.path() / "k.cu").string();
  CliResult fp16x3 = run_cli({spec, "-o", cu, "--dims", "N=1024", "--strict-product", "fp16x3"});
  EXPECT_EQ(fp16x3.exit_code, 0) << fp16x3.err;
  EXPECT_TRUE(contains(read_file(cu), "constexpr int kInnerProduct = 3;"));
  CliResult plan = run_cli({"plan", spec, "--dims", "N=1024", "--strict-product", "fp16x3"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_TRUE(contains(plan.out, "128x128 blocks, fp16x3 products")) << plan.out;
  CliResult plain = run_cli({"plan", spec, "--dims", "N=1024"});
  EXPECT_TRUE(contains(plain.out, "128x128 blocks, 3xtf32 products")) << plain.out;
  CliResult bad = run_cli({"plan", spec, "--strict-product", "fp16"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "bad --strict-product 'fp16' (expected 3xtf32 or fp16x3)")) << bad.err;
}

TEST(Cli, GenerateWritesSourceAndHeader) {
  TempDir dir;
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  std::string cu = (dir.path() / "k.cu").string(), h = (dir.path() / "k.h").string();
  CliResult r = run_cli({spec, "-o", cu, "-H", h, "--dims", "N=128"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream header(h);
  std::stringstream text;
  text << header.rdbuf();
  EXPECT_TRUE(contains(text.str(), "cudaError_t fusegen_matmul_groupnorm_leakyrelu_sum_launch(")) << text.str();
  CliResult bad = run_cli({spec, "-o", cu, "--arch", "sm_70"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "not supported")) << bad.err;
  // The name the generated file gives for nvcc is accepted for its target only.
  EXPECT_EQ(run_cli({spec, "-o", cu, "--arch", "sm_90a"}).exit_code, 0);
  CliResult wrong = run_cli({spec, "-o", cu, "--arch", "sm_80a"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_TRUE(contains(wrong.err, "use --arch sm_80")) << wrong.err;
}

// A --dims name the spec lacks is a usage error in every command, as a
// missing dim is (issue 26: check, plan, warm-up and generation ignored it).
TEST(Cli, DimsNamesMustBeTheSpecsInEveryCommand) {
  TempDir dir;
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  std::string cu = (dir.path() / "k.cu").string();
  const std::vector<std::vector<std::string>> commands = {{"check", spec, "--dims", "n=128"},
                                                          {"plan", spec, "--dims", "n=128"},
                                                          {"warmup", spec, "--dims", "n=128"},
                                                          {spec, "-o", cu, "--dims", "n=128"},
                                                          {"run", spec, "--dims", "n=128", "--reference"}};
  for (const std::vector<std::string>& command : commands) {
    CliResult r = run_cli(command);
    EXPECT_EQ(r.exit_code, 2) << command[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "no dim named n")) << command[0] << ": " << r.err;
  }
  // A spec with two dims given one: the same exit code from check as from run.
  std::string two = (dir.path() / "two.fg").string();
  std::ofstream(two) << "fusion f {\n  input x : f32[N, M]\n  output y = relu(x)\n}\n";
  CliResult check = run_cli({"check", two, "--dims", "N=4"});
  CliResult run = run_cli({"run", two, "--dims", "N=4", "--reference"});
  EXPECT_EQ(check.exit_code, 2) << check.err;
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(check.err, "needs a value for dim M")) << check.err;
}

// What planning or generation refuses is reported at its place in the spec,
// by generation and by check (issue 23): 33 inputs need more buffers than a
// generated kernel takes.
TEST(Cli, GenerationRefusalsHaveLocationsAndCheckSeesThem) {
  TempDir dir;
  std::string text = "fusion wide {\n";
  for (int i = 0; i < 33; ++i)
    text += "  input x" + std::to_string(i) + " : f32[N, 8]\n";
  text += "  h = x0\n";
  for (int i = 1; i < 33; ++i)
    text += "  h = h + x" + std::to_string(i) + "\n";
  text += "  output y = h\n}\n";
  const std::string spec = dir.write("wide.fg", text);
  const std::string where = spec + ":1:8: ";

  CliResult generate = run_cli({spec, "-o", (dir.path() / "w.cu").string(), "--dims", "N=4"});
  EXPECT_EQ(generate.exit_code, 1);
  EXPECT_TRUE(
      contains(generate.err, where + "error: fusion 'wide' needs 34 buffers; generated kernels take at most 32"))
      << generate.err;
  EXPECT_TRUE(contains(generate.err, "  fusion wide {\n         ^")) << generate.err;

  CliResult check = run_cli({"check", spec, "--dims", "N=4"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_TRUE(contains(check.err, where + "error: fusion 'wide' needs 34 buffers")) << check.err;
  // Without --dims, a warning: the JIT specializes first.
  CliResult symbolic = run_cli({"check", spec});
  EXPECT_EQ(symbolic.exit_code, 0) << symbolic.err;
  EXPECT_TRUE(contains(symbolic.err, where + "warning: fusion 'wide' needs 34 buffers")) << symbolic.err;
  // A spec that generates gets no such message.
  CliResult fine = run_cli({"check", kSmall62, "--dims", "N=4"});
  EXPECT_EQ(fine.exit_code, 0) << fine.err;
  EXPECT_EQ(fine.err, "");
}

// Convolutions and pools of every rank generate once their spatial dims are
// known; over symbolic spatial dims generation refuses a convolution at the
// op, naming the way out (--dims), and `run --reference` runs it.
TEST(Cli, ConvolutionsOverSymbolicSpatialDimsAreRefusedAtTheOpAndRunOnTheReference) {
  TempDir dir;
  const std::string spec = dir.write("conv3d.fg", "fusion f {\n  input x : f32[N, 2, D, 5, 6]\n"
                                                  "  param w : f32[3, 2, 3, 3, 3]\n"
                                                  "  h = relu(x)\n  output y = conv3d(h, w, padding=\"same\")\n}\n");
  CliResult generate = run_cli({spec, "-o", (dir.path() / "f.cu").string()});
  EXPECT_EQ(generate.exit_code, 1);
  EXPECT_TRUE(contains(generate.err, spec + ":5:14: error: conv3d: no GPU kernel for convolutions over "
                                            "symbolic channel or spatial dims (give them with --dims)"))
      << generate.err;
  EXPECT_FALSE(contains(generate.err, "internal error"));
  CliResult known = run_cli({spec, "-o", (dir.path() / "f.cu").string(), "--dims", "N=2,D=4"});
  EXPECT_EQ(known.exit_code, 0) << known.err;
  EXPECT_EQ(run_cli({"check", spec, "--dims", "N=2,D=4"}).exit_code, 0);
  EXPECT_EQ(run_cli({"run", spec, "--dims", "N=2,D=4", "--reference"}).exit_code, 0);

  const std::string pools = dir.write("pools.fg", "fusion g {\n  input x : f32[N, 3, 9]\n"
                                                  "  h = max_pool1d(x, 2, dilation=2)\n"
                                                  "  output y = avg_pool1d(h, 2, ceil_mode=true)\n}\n");
  CliResult pooled = run_cli({pools, "-o", (dir.path() / "g.cu").string(), "--dims", "N=2"});
  EXPECT_EQ(pooled.exit_code, 0) << pooled.err;
}

// Norms, softmax, reductions and pointwise ops on 3-D (NCL) and 5-D (NCDHW)
// tensors plan and generate (row-reduce and generic kernels).
TEST(Cli, NormsAndReductionsOnNclAndNcdhwTensorsGenerate) {
  TempDir dir;
  const std::string spec =
      dir.write("nd.fg", "fusion ncl {\n  input x : f32[N, 4, 9]\n  h = group_norm(x, 2)\n"
                         "  output y = softmax(relu(h), dim=-1)\n  output s = mean(h, dim=-1)\n}\n"
                         "fusion ncdhw {\n  input x : f32[N, 4, 3, 4, 5]\n  h = instance_norm(x) * 2.0\n"
                         "  output y = log_softmax(h, dim=1)\n  output s = amax(h, dim=(2, 3, 4))\n}\n");
  CliResult check = run_cli({"check", spec, "--dims", "N=2"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.err, "");
  for (const char* fusion : {"ncl", "ncdhw"}) {
    CliResult run = run_cli({"run", spec, "--fusion", fusion, "--dims", "N=2", "--reference"});
    EXPECT_EQ(run.exit_code, 0) << fusion << ": " << run.err;
  }
}

} // namespace
} // namespace fusegen
