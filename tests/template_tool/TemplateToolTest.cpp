// fusegen-template-tool: the generated headers reproduce their templates, and
// bad templates fail with located diagnostics and leave the output alone.
#include "fixture/FixtureText.h"
#include "fusegen/TemplateHooks.h"
#include "fusegen/TemplateText.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace fusegen::templates {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = FUSEGEN_FIXTURE_DIR;
const fs::path kSpecFile = kFixtures / "spec.txt";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Fragments with each hook's default text in between: the original file.
std::string reassemble(const TemplateText& text) {
  std::string out(text.fragments[0]);
  for (size_t i = 0; i < text.hooks.size(); ++i) {
    out += text.hooks[i].default_text;
    out += text.fragments[i + 1];
  }
  return out;
}

// 1-based line of the first occurrence of `needle` in `text`, 0 if absent.
int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

// Each hook's default text holds its FUSEGEN_HOOK, which sits at the hook's
// line of the file it names (the template, or a piece beside it in `dir`).
void expect_hooks_located(const TemplateText& text, const fs::path& dir) {
  ASSERT_EQ(text.fragments.size(), text.hooks.size() + 1);
  for (size_t i = 0; i < text.hooks.size(); ++i) {
    const HookInfo& hook = text.hooks[i];
    EXPECT_EQ(hook.fragment, static_cast<int>(i)) << hook.name;
    const std::string macro = "FUSEGEN_HOOK(\"" + std::string(hook.name) + "\")";
    EXPECT_NE(hook.default_text.find(macro), std::string_view::npos) << hook.name;
    EXPECT_EQ(hook.line, line_of(read_file(dir / hook.file), macro)) << hook.name << " in " << hook.file;
  }
}

void expect_consistent(const TemplateText& text, const std::string& source, const fs::path& dir) {
  expect_hooks_located(text, dir);
  for (const HookInfo& hook : text.hooks)
    EXPECT_EQ(hook.file, text.file) << hook.name;
  EXPECT_EQ(reassemble(text), source);
}

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

RunResult run_tool(const std::string& args) {
  const std::string command = std::string("'") + FUSEGEN_TEMPLATE_TOOL_PATH + "' " + args + " 2>&1";
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// A fresh scratch directory per test.
fs::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(FUSEGEN_TEST_TMP_DIR) / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string fixture(const std::string& name) { return "'" + (kFixtures / name).string() + "'"; }

// Runs the tool on one fixture, expecting failure; returns its diagnostics.
std::string expect_failure(const std::string& name) {
  const fs::path out = scratch_dir() / "Out.h";
  const RunResult result = run_tool("--out '" + out.string() + "' --spec-file '" +
                                    kSpecFile.string() + "' " + fixture(name));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_FALSE(fs::exists(out)) << "no output on failure";
  return result.output;
}

// "<path to fixture>:LINE:COL: error: MESSAGE"
std::string located(const std::string& name, int line, int col, const std::string& message) {
  return (kFixtures / name).string() + ":" + std::to_string(line) + ":" + std::to_string(col) +
         ": error: " + message;
}

int fixture_line(const std::string& name, const std::string& needle) {
  return line_of(read_file(kFixtures / name), needle);
}

TEST(TemplateText, ElementwiseReassemblesToTheTemplate) {
  expect_consistent(kElementwise, read_file(fs::path(FUSEGEN_TEMPLATE_DIR) / "elementwise.cu"), FUSEGEN_TEMPLATE_DIR);
}

TEST(TemplateText, ElementwiseHasExactlyTheExpectedHooks) {
  const TemplateSpec* spec = find_template_spec("elementwise.cu");
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(kElementwise.hooks.size(), spec->hooks.size());
  for (const HookSpec& expected : spec->hooks) {
    const HookInfo* hook = find_hook(kElementwise, expected.name);
    ASSERT_NE(hook, nullptr) << expected.name;
    EXPECT_EQ(hook->kind, expected.kind) << expected.name;
  }
  EXPECT_EQ(find_template_text(kAllTemplates, "elementwise.cu"), &kElementwise);
  EXPECT_EQ(find_template_text(kAllTemplates, "nonexistent.cu"), nullptr);
}

// The fixture covers every hook kind, adjacent hooks, a hook ending the file,
// a function template, and bytes that need escaping.
TEST(TemplateText, FixtureReassemblesByteForByte) {
  const TemplateText& text = fixtures::kGood;
  expect_consistent(text, read_file(kFixtures / "good.cu"), kFixtures);
  ASSERT_EQ(text.hooks.size(), 7u);
  EXPECT_EQ(text.fragments[1], "");  // two hooks on one line
  EXPECT_EQ(text.fragments.back(), "");  // a hook ends the file
  EXPECT_EQ(find_hook(text, "params")->kind, HookKind::Type);
  EXPECT_EQ(find_hook(text, "scalar")->kind, HookKind::Type);
  EXPECT_EQ(find_hook(text, "scale")->default_text.substr(0, 16), "template <int N>");
}

// Pieces are embedded in place, each once, without their #pragma once; a
// hook in a piece names it; .cu includes stay.
TEST(TemplateText, PiecesAreEmbeddedOnce) {
  const TemplateText& text = fixtures::kPieces;
  expect_hooks_located(text, kFixtures);
  const std::string whole = reassemble(text);
  const std::string rows = "constexpr int kTileRows = 16;";
  ASSERT_NE(whole.find(rows), std::string::npos) << whole;
  EXPECT_EQ(whole.find(rows), whole.rfind(rows)) << whole;
  EXPECT_LT(whole.find(rows), whole.find("FUSEGEN_HOOK(\"tile_m\")")) << whole;
  EXPECT_EQ(whole.find("#include \"pieces/"), std::string::npos) << whole;
  EXPECT_EQ(whole.find("#include \"rows.cuh\""), std::string::npos) << whole;
  EXPECT_EQ(whole.find("#pragma once"), std::string::npos) << whole;
  EXPECT_NE(whole.find("#include \"absent.cu\""), std::string::npos) << whole;
  ASSERT_NE(find_hook(text, "tile_m"), nullptr);
  EXPECT_EQ(find_hook(text, "tile_m")->file, "pieces/tile.cuh");
  EXPECT_EQ(find_hook(text, "epilogue")->file, "pieces.cu");
}

// The GEMM template is gemm.cu and its pieces (templates/gemm/): embedded
// whole, with every hook the generator fills.
TEST(TemplateText, GemmEmbedsItsPieces) {
  expect_hooks_located(kGemm, FUSEGEN_TEMPLATE_DIR);
  const std::string whole = reassemble(kGemm);
  EXPECT_EQ(whole.find("#include \"gemm/"), std::string::npos);
  EXPECT_NE(whole.find("#include \"helpers.cu\""), std::string::npos);
  for (const char* piece : {"gemm/geometry.h", "gemm/mainloop_mma_sync.cuh", "gemm/mainloop_wgmma.cuh",
                            "gemm/split_k.cuh", "gemm/epilogue_tile.cuh"}) {
    std::string text = read_file(fs::path(FUSEGEN_TEMPLATE_DIR) / piece);
    text.erase(text.find("#pragma once\n"), 13);
    EXPECT_NE(whole.find(text), std::string::npos) << piece;
  }
  const TemplateSpec* spec = find_template_spec("gemm.cu");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(kGemm.hooks.size(), spec->hooks.size());
  for (const HookSpec& expected : spec->hooks)
    EXPECT_NE(find_hook(kGemm, expected.name), nullptr) << expected.name;
}

// helpers.cu's FusegenArgs takes its limits from fusegen/KernelLimits.h
// (found through --include-dir), embedded as the host includes it.
TEST(TemplateText, HelpersEmbedTheKernelLimits) {
  const TemplateText* helpers = find_template_text(kAllTemplates, "helpers.cu");
  ASSERT_NE(helpers, nullptr);
  const std::string whole = reassemble(*helpers);
  std::string limits = read_file(fs::path(FUSEGEN_TEMPLATE_DIR) / "../compiler/include/fusegen/KernelLimits.h");
  limits.erase(limits.find("#pragma once\n"), 13);
  EXPECT_NE(whole.find(limits), std::string::npos);
  EXPECT_EQ(whole.find("#include \"fusegen/KernelLimits.h\""), std::string::npos);
  EXPECT_NE(whole.find("float* buf[kFusegenMaxBuffers];"), std::string::npos);
}

TEST(TemplateTool, MissingPieceNamesTheInclude) {
  const std::string output = expect_failure("missing_piece.cu");
  EXPECT_NE(output.find(located("missing_piece.cu", 6, 1, "cannot read piece 'pieces/absent.cuh'")), std::string::npos)
      << output;
}

TEST(TemplateTool, ErrorInAPieceNamesThePieceAndLine) {
  const std::string output = expect_failure("piece_error.cu");
  EXPECT_NE(output.find(located("pieces/wrong_epilogue.cuh", 4, 1,
                                "hook 'epilogue' has signature 'float (float, int)' but the "
                                "generator expects 'float (float, int, int)'")),
            std::string::npos)
      << output;
}

TEST(TemplateTool, SyntaxErrorNamesFileAndLine) {
  const std::string output = expect_failure("syntax_error.cu");
  EXPECT_NE(output.find(located("syntax_error.cu", 6, 49, "expected ';'")), std::string::npos)
      << output;
  EXPECT_NE(output.find("error: template 'syntax_error.cu' failed to parse"), std::string::npos)
      << output;
}

TEST(TemplateTool, WrongSignatureNamesHookAndBothSignatures) {
  const std::string output = expect_failure("wrong_signature.cu");
  const int line = fixture_line("wrong_signature.cu", "FUSEGEN_HOOK(\"epilogue\")");
  EXPECT_NE(output.find(located("wrong_signature.cu", line, 1,
                                "hook 'epilogue' has signature 'float (float, int)' but the "
                                "generator expects 'float (float, int, int)'")),
            std::string::npos)
      << output;
}

TEST(TemplateTool, MissingHook) {
  const std::string output = expect_failure("missing_hook.cu");
  EXPECT_NE(output.find(located("missing_hook.cu", 1, 1, "missing hook 'tile_m'")),
            std::string::npos)
      << output;
}

TEST(TemplateTool, UnexpectedHook) {
  const std::string output = expect_failure("unexpected_hook.cu");
  const int line = fixture_line("unexpected_hook.cu", "FUSEGEN_HOOK(\"foo\")");
  EXPECT_NE(output.find(located("unexpected_hook.cu", line, 1, "unexpected hook 'foo'")),
            std::string::npos)
      << output;
}

TEST(TemplateTool, DuplicateHook) {
  const std::string output = expect_failure("duplicate_hook.cu");
  const int line = fixture_line("duplicate_hook.cu", "kOtherTileM");
  EXPECT_NE(output.find(located("duplicate_hook.cu", line, 1,
                                "hook 'tile_m' is declared more than once")),
            std::string::npos)
      << output;
}

TEST(TemplateTool, HookInsideFunction) {
  const std::string output = expect_failure("local_hook.cu");
  EXPECT_NE(output.find("error: hook 'tile_m' must be declared at namespace scope"),
            std::string::npos)
      << output;
}

TEST(TemplateTool, WrongDeclaredName) {
  const std::string output = expect_failure("wrong_name.cu");
  EXPECT_NE(output.find("error: hook 'tile_m' declares 'kTileRows' but the generator expects "
                        "'kTileM'"),
            std::string::npos)
      << output;
}

TEST(TemplateTool, WrongKind) {
  const std::string output = expect_failure("wrong_kind.cu");
  EXPECT_NE(output.find("error: hook 'tile_m' is a function but the generator expects a constant"),
            std::string::npos)
      << output;
}

TEST(TemplateTool, FunctionHookNeedsDefaultBody) {
  const std::string output = expect_failure("no_body.cu");
  EXPECT_NE(output.find("error: hook 'epilogue' must be a function definition with a default "
                        "body"),
            std::string::npos)
      << output;
}

TEST(TemplateTool, TemplateWithoutSpecIsAnError) {
  const std::string output = expect_failure("unknown.cu");
  EXPECT_NE(output.find(located("unknown.cu", 1, 1, "no hook spec for template 'unknown.cu'")),
            std::string::npos)
      << output;
}

TEST(TemplateTool, FailureLeavesExistingOutputAlone) {
  const fs::path out = scratch_dir() / "Out.h";
  std::ofstream(out) << "previous";
  const RunResult result = run_tool("--out '" + out.string() + "' --spec-file '" +
                                    kSpecFile.string() + "' " + fixture("good.cu") + " " +
                                    fixture("missing_hook.cu"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_EQ(read_file(out), "previous");
}

TEST(TemplateTool, OutputIsStableAndNotRewrittenWhenUnchanged) {
  const fs::path dir = scratch_dir();
  const std::string spec = " --spec-file '" + kSpecFile.string() + "' ";
  const std::string good = fixture("good.cu");
  const std::string elementwise =
      "'" + (fs::path(FUSEGEN_TEMPLATE_DIR) / "elementwise.cu").string() + "'";
  const fs::path out = dir / "Out.h";
  ASSERT_EQ(run_tool("--out '" + out.string() + "'" + spec + good + " " + elementwise).exit_code,
            0);
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(out, old_time);
  ASSERT_EQ(run_tool("--out '" + out.string() + "'" + spec + good + " " + elementwise).exit_code,
            0);
  EXPECT_EQ(fs::last_write_time(out), old_time) << "unchanged output was rewritten";

  // Argument order does not matter: templates are sorted by file name.
  const fs::path reversed = dir / "Reversed.h";
  ASSERT_EQ(
      run_tool("--out '" + reversed.string() + "'" + spec + elementwise + " " + good).exit_code, 0);
  EXPECT_EQ(read_file(reversed), read_file(out));
  EXPECT_LT(read_file(out).find("kElementwise ="), read_file(out).find("kGood ="));
}

TEST(TemplateTool, UsageErrorWithoutTemplates) {
  const RunResult result = run_tool("--out x.h");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("usage:"), std::string::npos);
}

}  // namespace
}  // namespace fusegen::templates
