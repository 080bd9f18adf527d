// Generated source for every seed spec in specs/ (both shape sets, symbolic and
// with --dims) compiles with NVRTC for sm_80 and sm_90 and with nvcc
// (host launchers included) without warnings; golden tests of the generated
// text for a few small fusions.
#include "fusegen/Codegen.h"
#include "fusegen/Frontend.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"
#include "fusegen/TemplateText.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <unistd.h>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Generates the whole spec, with `dims` bound when not empty.
std::string generate(const fs::path& spec, const DimBindings& dims, int arch = 90) {
  SourceManager sources;
  uint32_t file = sources.add_buffer(spec.filename().string(), read(spec));
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  EXPECT_TRUE(module) << diags.render(sources);
  if (!module)
    return "";
  std::vector<Plan> plans;
  for (const Fusion& fusion : module->fusions) {
    std::optional<Fusion> concrete = dims.empty() ? fusion : specialize(fusion, dims, diags);
    EXPECT_TRUE(concrete) << diags.render(sources);
    if (!concrete)
      return "";
    plans.push_back(plan_fusion(*concrete));
  }
  CodegenOptions options;
  options.source_name = spec.filename().string();
  options.arch = arch;
  Result<GeneratedCode> code = generate_cuda(plans, options);
  EXPECT_TRUE(code) << (code ? "" : code.error());
  return code ? code.value().source : "";
}

std::vector<fs::path> seed_specs() {
  std::vector<fs::path> specs;
  for (const char* dir : {"specs/kernelbench", "specs/kernelbench/small"})
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(FUSEGEN_SOURCE_DIR) / dir))
      if (entry.path().extension() == ".fg")
        specs.push_back(entry.path());
  std::sort(specs.begin(), specs.end());
  return specs;
}

// nvcc -c with every warning an error; empty on success, else its output.
std::string nvcc_compile(const std::string& source, const std::string& name) {
#ifdef FUSEGEN_NVCC_PATH
  fs::path dir = fs::temp_directory_path() / ("fusegen-nvcc-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path cu = dir / (name + ".cu"), log = dir / (name + ".log");
  std::ofstream(cu) << source;
  std::string command = std::string(FUSEGEN_NVCC_PATH) + " -arch=sm_90a -Werror all-warnings -c " + cu.string() +
                        " -o " + (dir / (name + ".o")).string() + " > " + log.string() + " 2>&1";
  int status = std::system(command.c_str());
  std::string output = status == 0 ? "" : "nvcc failed:\n" + read(log);
  fs::remove_all(dir);
  return output;
#else
  (void)source;
  (void)name;
  return "";
#endif
}

TEST(CodegenSpecs, BothShapeSetsOfEverySeedChain) { EXPECT_EQ(seed_specs().size(), 8u); }

// One seed spec, symbolic or at N=128: a test each, so that ctest runs them
// side by side (together they take minutes, most of it nvcc).
struct SeedCase {
  fs::path spec;
  bool specialized = false;
};

void PrintTo(const SeedCase& c, std::ostream* os) { *os << c.spec.string() << (c.specialized ? " N=128" : ""); }

std::vector<SeedCase> seed_cases() {
  std::vector<SeedCase> cases;
  for (const fs::path& spec : seed_specs())
    for (bool specialized : {false, true})
      cases.push_back({spec, specialized});
  return cases;
}

std::string seed_case_name(const ::testing::TestParamInfo<SeedCase>& param) {
  const SeedCase& c = param.param;
  std::string name = c.spec.parent_path().filename() == "small" ? "small_" : "v01_";
  for (char ch : c.spec.stem().string())
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name + (c.specialized ? "_N128" : "_symbolic");
}

class SeedSpecCompiles : public ::testing::TestWithParam<SeedCase> {};

TEST_P(SeedSpecCompiles, WithNvrtcAndNvcc) {
  FUSEGEN_SKIP_WITHOUT_NVRTC();
  const SeedCase& c = GetParam();
  const DimBindings dims = c.specialized ? DimBindings{{"N", 128}} : DimBindings{};
  const std::string name = seed_case_name({c, 0});
  // Generated for the arch it is compiled for: sm_90 code may use clusters.
  std::string source = generate(c.spec, dims);
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(testing::nvrtc_compile(source, name + ".cu", 90), "") << "sm_90";
  EXPECT_EQ(testing::nvrtc_compile(generate(c.spec, dims, 80), name + ".cu", 80), "") << "sm_80";
  EXPECT_EQ(nvcc_compile(source, name), "");
}

INSTANTIATE_TEST_SUITE_P(Seeds, SeedSpecCompiles, ::testing::ValuesIn(seed_cases()), seed_case_name);

// A kernel's template instance with the template's own text left out: a
// marker line, then each hook's fill under its name. nullopt if `body` is not
// an instance of `text`.
std::optional<std::string> hook_fills(const templates::TemplateText& text, const std::string& body) {
  if (body.rfind(text.fragments[0], 0) != 0 || !body.ends_with(text.fragments.back()))
    return std::nullopt;
  std::string out = "// [" + std::string(text.file) + " with these hooks filled]\n";
  size_t pos = text.fragments[0].size();
  for (size_t i = 0; i < text.hooks.size(); ++i) {
    const std::string_view next = text.fragments[i + 1];
    const size_t end = i + 1 == text.hooks.size() ? body.size() - next.size() : body.find(next, pos);
    if (next.empty() || end == std::string::npos || end < pos)
      return std::nullopt; // adjacent hooks: no text marks where a fill ends
    out += "// hook " + std::string(text.hooks[i].name) + ":\n" + body.substr(pos, end - pos) + "\n";
    pos = end + next.size();
  }
  return out;
}

// The generated source with the templates' own text left out (helpers.cu and
// each kernel's template, whose tests check them): what the generator
// decides, the hook fills, the launchers and the rest, stays.
std::string golden_form(std::string source) {
  const templates::TemplateText* helpers = templates::find_template_text(templates::kAllTemplates, "helpers.cu");
  if (size_t at = source.find(helpers->fragments[0]); at != std::string::npos)
    source.replace(at, helpers->fragments[0].size(), "// [helpers.cu]\n");
  std::string out;
  size_t pos = 0;
  for (size_t open; (open = source.find("\nnamespace ", pos)) != std::string::npos;) {
    const size_t name_at = open + 11, brace = source.find("_impl {\n", name_at);
    if (brace == std::string::npos)
      break;
    const std::string closing = "} // namespace " + source.substr(name_at, brace - name_at) + "_impl\n";
    const size_t body_at = brace + 8, close = source.find(closing, body_at);
    if (close == std::string::npos)
      break;
    const std::string body = source.substr(body_at, close - body_at);
    std::optional<std::string> fills;
    for (const templates::TemplateText* text : templates::kAllTemplates)
      if (!text->hooks.empty() && (fills = hook_fills(*text, body)))
        break;
    out += source.substr(pos, body_at - pos) + fills.value_or(body) + closing;
    pos = close + closing.size();
  }
  return out + source.substr(pos);
}

// Golden text: tests/codegen_golden/<name>.fg generates <name>.cu, in
// golden_form(): the hook fills and the code around the templates exactly.
// FUSEGEN_UPDATE_GOLDEN=1 rewrites the expected files (then review the diff).
void expect_golden(const std::string& name, const DimBindings& dims) {
  fs::path dir = fs::path(FUSEGEN_SOURCE_DIR) / "tests/codegen_golden";
  std::string actual = golden_form(generate(dir / (name + ".fg"), dims));
  fs::path expected_path = dir / (name + ".cu");
  if (const char* update = std::getenv("FUSEGEN_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  std::string expected = read(expected_path);
  if (actual == expected)
    return;
  size_t at = 0, line = 1;
  while (at < actual.size() && at < expected.size() && actual[at] == expected[at])
    line += actual[at++] == '\n';
  auto around = [&](const std::string& text) {
    size_t begin = text.rfind('\n', at == 0 ? 0 : at - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    return text.substr(begin, text.find('\n', at) - begin);
  };
  ADD_FAILURE() << name << ".cu differs from the generated source at line " << line << " (byte " << at << ")\n"
                << "  expected: " << around(expected) << "\n"
                << "  actual:   " << around(actual) << "\n"
                << "----- expected -----\n"
                << expected << "\n----- actual -----\n"
                << actual;
}

TEST(CodegenGolden, PointwiseChain) { expect_golden("pointwise_chain", {}); }
TEST(CodegenGolden, SoftmaxRows) { expect_golden("softmax_rows", {}); }
TEST(CodegenGolden, LinearReluBaked) { expect_golden("linear_relu", {{"N", 96}}); }

TEST(CodegenGolden, GenerationIsDeterministic) {
  for (const fs::path& spec : seed_specs())
    EXPECT_EQ(generate(spec, {}), generate(spec, {})) << spec;
}

} // namespace
} // namespace fusegen
