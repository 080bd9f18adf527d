// Tests of the `fusegen` command line itself (CLI11, cli/CommandLine.cpp):
// help for `fusegen` and every command, suggestions for misspelt names, the
// messages of a bad command line and the exit codes of docs/cli.md.
#include "support/CliTesting.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fusegen {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::contains;
using testing::run_cli;
using testing::TempDir;

const std::string kSmall62 =
    (fs::path(FUSEGEN_SOURCE_DIR) / "specs" / "kernelbench" / "small" / "62_matmul_groupnorm_leakyrelu_sum.fg")
        .string();
const std::string kSmall75 =
    (fs::path(FUSEGEN_SOURCE_DIR) / "specs" / "kernelbench" / "small" / "75_gemm_groupnorm_min_biasadd.fg").string();

// ---- Help and version ----

TEST(Cli, HelpListsTheCommands) {
  for (const char* flag : {"--help", "-h", "help"}) {
    CliResult r = run_cli({flag});
    EXPECT_EQ(r.exit_code, 0) << flag;
    EXPECT_TRUE(contains(r.out, "usage: fusegen")) << r.out;
    EXPECT_TRUE(contains(r.out, "  check SPEC")) << r.out;
    EXPECT_TRUE(contains(r.out, "  run SPEC")) << r.out;
    EXPECT_TRUE(contains(r.out, "Exit codes")) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

// Every command answers --help with its own usage (issue 26: "unknown option
// '--help'"), and `fusegen help COMMAND` says the same.
TEST(Cli, EveryCommandHasItsOwnHelp) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"check", "--help"}, "fusegen check SPEC"},
      {{"run", "-h"}, "fusegen run SPEC --device"},
      {{"plan", "--help"}, "fusegen plan SPEC"},
      {{"warmup", "--help"}, "fusegen warmup SPEC --dims"},
      {{"cache", "--help"}, "fusegen cache stats"},
      {{"spec.fg", "-o", "x.cu", "--help"}, "SPEC -o"},
      {{"generate", "--help"}, "fusegen [generate] SPEC -o"},
      {{"help", "check"}, "fusegen check SPEC"},
  };
  for (const auto& [args, usage] : cases) {
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.out, usage)) << args[0] << ": " << r.out;
    EXPECT_EQ(r.err, "");
  }
  CliResult unknown = run_cli({"help", "frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "unknown command 'frobnicate'")) << unknown.err;
}

// An option without its value is named as it was typed.
TEST(Cli, MissingOptionValueNamesTheOptionAsTyped) {
  std::string spec = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  CliResult o = run_cli({spec, "-o"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_TRUE(contains(o.err, "option -o needs a value")) << o.err;
  CliResult dims = run_cli({"check", spec, "--dims"});
  EXPECT_EQ(dims.exit_code, 2);
  EXPECT_TRUE(contains(dims.err, "option --dims needs a value")) << dims.err;
}

TEST(Cli, Version) {
  CliResult r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("fusegen ") + FUSEGEN_VERSION + "\n");
}

TEST(Cli, NoArgumentsPrintsUsageAndFails) {
  CliResult r = run_cli({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "usage: fusegen")) << r.err;
}

TEST(Cli, UnknownCommandOrOption) {
  CliResult r = run_cli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fusegen: error: unknown command 'frobnicate' (see fusegen --help)\n");
  EXPECT_EQ(run_cli({"--frobnicate"}).exit_code, 2);

  r = run_cli({"check", kSmall62, "--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown option '--frobnicate'")) << r.err;
  r = run_cli({"check"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "expected one spec file")) << r.err;
  EXPECT_EQ(run_cli({"check", kSmall62, kSmall75}).exit_code, 2);
}

// A misspelt option or command gets the closest name (issue 26).
TEST(Cli, MisspeltNamesGetASuggestion) {
  CliResult r = run_cli({"check", kSmall62, "--dimz", "N=4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown option '--dimz' (did you mean --dims? see --help)")) << r.err;
  r = run_cli({"chekc", kSmall62});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fusegen: error: unknown command 'chekc' (did you mean check? see fusegen --help)\n");
}

// Every command answers --help and -h on stdout with exit 0: its synopsis,
// the options CLI11 lists from their declarations, and the exit codes.
TEST(Cli, EveryCommandListsItsOptionsInItsHelp) {
  const std::pair<std::string, std::vector<std::string>> commands[] = {
      {"generate", {"-o FILE", "-H FILE", "--dims", "--arch", "--precision", "--gemm-block", "--emit", "--dump-after"}},
      {"check", {"--dims", "--dump-after"}},
      {"plan", {"--fusion NAME", "--dims", "--dump-after"}},
      {"run",
       {"--fusion NAME", "--dims", "--seed", "--inputs DIR", "--device", "Reference run (without --device):",
        "--save DIR", "Device run (with --device):", "--compare", "--expect DIR", "--cache-dir"}},
      {"warmup", {"--dims", "--arch", "--precision", "--jobs", "--cache-dir", "--remote-cache", "--cache-key-file"}},
      {"cache", {"--cache-dir", "--cache-key-file", "--remote-cache"}},
  };
  for (const auto& [command, options] : commands)
    for (const char* flag : {"--help", "-h"}) {
      CliResult r = run_cli({command, flag});
      EXPECT_EQ(r.exit_code, 0) << command << " " << flag << ": " << r.err;
      EXPECT_EQ(r.err, "") << command;
      EXPECT_EQ(r.out.rfind("usage:\n  fusegen ", 0), 0u) << command << ":\n" << r.out;
      EXPECT_TRUE(contains(r.out, "\nOptions:\n  -h,--help ")) << command << ":\n" << r.out;
      for (const std::string& option : options)
        EXPECT_TRUE(contains(r.out, (option.back() == ':' ? "\n" : "\n  ") + option)) // a group, or an option
            << command << " lacks " << option << ":\n"
            << r.out;
      EXPECT_TRUE(contains(r.out, "\nExit codes (every command): 0 success; 1 errors in the spec")) << r.out;
      EXPECT_FALSE(contains(r.out, "\n\n\n")) << command << ":\n" << r.out;
    }
  // `fusegen help COMMAND` is the same text.
  EXPECT_EQ(run_cli({"help", "warmup"}).out, run_cli({"warmup", "--help"}).out);
}

// The full help names every command, and the exit codes.
TEST(Cli, FullHelpListsEveryCommand) {
  CliResult r = run_cli({"--help"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* synopsis :
       {"  fusegen [generate] SPEC -o", "\n  check SPEC", "\n  plan SPEC", "\n  run SPEC", "\n  run SPEC --device",
        "\n  warmup SPEC", "\n  cache stats|verify|clear", "\n  cache export|import FILE", "\n  --version"})
    EXPECT_TRUE(contains(r.out, synopsis)) << synopsis << "\n" << r.out;
  EXPECT_TRUE(contains(r.out, "\nExit codes (every command): 0 success;")) << r.out;
}

// ---- Misspelt names ----

TEST(Cli, MisspeltOptionsGetTheClosestOfTheirCommand) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"run", kSmall62, "--dims", "N=2", "--seeed", "3"},
       "fusegen run: error: unknown option '--seeed' (did you mean --seed?"},
      {{"plan", kSmall62, "--fusoin", "f"}, "fusegen plan: error: unknown option '--fusoin' (did you mean --fusion?"},
      {{"warmup", kSmall62, "--dims", "N=2", "--jbos", "2"}, "unknown option '--jbos' (did you mean --jobs?"},
      {{"cache", "stats", "--cache-dri", "d"}, "unknown option '--cache-dri' (did you mean --cache-dir?"},
      {{kSmall62, "--emti", "ir"}, "fusegen: error: unknown option '--emti' (did you mean --emit?"},
      // As typed, with its value; the name alone is matched.
      {{"check", kSmall62, "--dimz=N=4"}, "unknown option '--dimz=N=4' (did you mean --dims?"},
      // Nothing close: no suggestion.
      {{"check", kSmall62, "--frobnicate"}, "unknown option '--frobnicate' (see --help)"},
  };
  for (const auto& [args, message] : cases) {
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_TRUE(contains(r.err, message)) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(Cli, MisspeltCommandsGetTheClosest) {
  for (const auto& [typo, command] : {std::pair{"pln", "plan"}, std::pair{"warmpu", "warmup"}, std::pair{"rnu", "run"},
                                      std::pair{"cahce", "cache"}}) {
    CliResult r = run_cli({typo, kSmall62});
    EXPECT_EQ(r.exit_code, 2) << typo;
    EXPECT_EQ(r.err, std::string("fusegen: error: unknown command '") + typo + "' (did you mean " + command +
                         "? see fusegen --help)\n");
  }
}

// ---- Values and repeats ----

// --dims repeats and takes one value each time: a spec after it is the spec.
TEST(Cli, DimsRepeatAndTakeOneValueEach) {
  TempDir dir;
  const std::string spec = dir.write("two.fg", "fusion f {\n  input x : f32[N, M]\n  output y = relu(x)\n}\n");
  CliResult r = run_cli({"check", "--dims", "N=4", "--dims", "M=8", spec});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "output y : f32[4, 8]")) << r.out;
  EXPECT_EQ(run_cli({"check", spec, "--dims", "N=4,M=8"}).out, r.out);
  r = run_cli({"check", spec, "--dims", "N=4", "--dims", "N=8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "dim N given twice in --dims")) << r.err;
}

// An option that takes one value, given twice, is refused (not the last kept).
TEST(Cli, SingleOptionsGivenTwiceAreRefused) {
  TempDir dir;
  const std::string a = (dir.path() / "a.cu").string(), b = (dir.path() / "b.cu").string();
  CliResult r = run_cli({kSmall62, "-o", a, "-o", b});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fusegen: error: option -o given twice\n");
  EXPECT_FALSE(fs::exists(a) || fs::exists(b));
  r = run_cli({"run", kSmall62, "--dims", "N=2", "--seed", "1", "--seed", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fusegen run: error: option --seed given twice\n");
}

// `run` is one command with two sets of options: those of the device run need
// --device, those of the reference run refuse it.
TEST(Cli, RunOptionsBelongToTheirRun) {
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--compare"}, {"--precision", "tf32"}, {"--cache-dir", "d"}, {"--expect", "d"}}) {
    std::vector<std::string> args = {"run", kSmall62, "--dims", "N=2"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0];
    EXPECT_TRUE(contains(r.err, "fusegen run: error: " + extra[0] + " requires --device")) << r.err;
  }
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{"--reference"}, {"--save", "d"}, {"--dump-after", "all"}}) {
    std::vector<std::string> args = {"run", kSmall62, "--dims", "N=2", "--device"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0];
    EXPECT_TRUE(contains(r.err, "excludes")) << r.err;
    EXPECT_TRUE(contains(r.err, extra[0])) << r.err;
  }
}

// ---- Exit codes ----

// The table of docs/cli.md, one case of each kind in several commands.
TEST(Cli, ExitCodesAreTheDocumentedOnes) {
  TempDir dir;
  const std::string bad = dir.write("bad.fg", "fusion f {\n  input x : f32[N]\n  output y = relu(z)\n}\n");
  const std::pair<std::vector<std::string>, int> cases[] = {
      {{"check", kSmall62}, 0},
      {{"plan", kSmall75, "--dims", "N=4"}, 0},
      {{"run", kSmall75, "--dims", "N=2"}, 0},
      {{"--version"}, 0},
      {{"check", bad}, 1},
      {{"plan", bad}, 1},
      {{"run", bad, "--dims", "N=2"}, 1},
      {{bad, "-o", (dir.path() / "k.cu").string()}, 1},
      {{"check", kSmall62, "--dimz"}, 2},
      {{"plan", kSmall62, "--dims"}, 2},
      {{"run", kSmall62, "--dims", "N=x"}, 2},
      {{"warmup", kSmall62, "--dims", "N=2", "--jobs", "0"}, 2},
      {{"cache", "shrink"}, 2},
      {{"check", (dir.path() / "missing.fg").string()}, 2},
      {{"chekc", kSmall62}, 2},
      {{}, 2},
  };
  for (const auto& [args, code] : cases) {
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, code) << (args.empty() ? "(no arguments)" : args[0]) << ": " << r.err;
  }
}

} // namespace
} // namespace fusegen
