// Golden tests: the CPU reference interpreter against PyTorch float64.
//
// Every directory under tests/golden (written by scripts/make_golden.py) is one
// case: spec.fg with one fusion named after the directory, <arg>.npy for every
// input/param/state tensor, and expected/<name>.npy for every output and for
// every state tensor after the run. Each case is one test, Golden.MatchesPyTorch/<case>.
// FUSEGEN_GOLDEN_DIR overrides the folder (to try scratch cases).
#include "fusegen/Diagnostics.h"
#include "fusegen/Frontend.h"
#include "fusegen/Interpreter.h"
#include "fusegen/Npy.h"
#include "fusegen/OpRegistry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

// Both sides are float64 with the same formulas; only summation order differs.
constexpr double kTolerance = 1e-9;

fs::path golden_root() {
  if (const char* dir = std::getenv("FUSEGEN_GOLDEN_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  return fs::path(FUSEGEN_SOURCE_DIR) / "tests" / "golden";
}

// Names of the case directories, sorted; empty when the folder is missing.
std::vector<std::string> case_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(golden_root(), error))
    if (entry.is_directory())
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The .npy file stems directly inside `dir`.
std::set<std::string> npy_stems(const fs::path& dir) {
  std::set<std::string> stems;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error))
    if (entry.is_regular_file() && entry.path().extension() == ".npy")
      stems.insert(entry.path().stem().string());
  return stems;
}

Result<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{"cannot read " + path.string()};
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Compiles <dir>/spec.fg, which must hold exactly one fusion named `name`.
Result<Fusion> compile_case(const fs::path& dir, const std::string& name) {
  Result<std::string> text = read_text(dir / "spec.fg");
  if (!text)
    return Error{text.error()};
  SourceManager sources;
  uint32_t file = sources.add_buffer((dir / "spec.fg").string(), text.value());
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  if (!module)
    return Error{"spec does not compile:\n" + diags.render(sources)};
  if (module->fusions.size() != 1 || module->fusions[0].name != name)
    return Error{"spec.fg must hold exactly one fusion, named '" + name + "'"};
  return module->fusions[0];
}

// Loads <dir>/<arg>.npy for every argument of `fusion`.
Result<std::map<std::string, HostTensor>> load_arguments(const fs::path& dir, const Fusion& fusion) {
  std::map<std::string, HostTensor> arguments;
  for (ValueId id : fusion.arguments) {
    const std::string& name = fusion.value(id).name;
    Result<HostTensor> tensor = read_npy((dir / (name + ".npy")).string());
    if (!tensor)
      return Error{tensor.error()};
    arguments.emplace(name, std::move(tensor).value());
  }
  return arguments;
}

std::string index_str(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(index);
}

// Values in full precision; errors and tolerances short.
std::string number_str(double value, int digits = 17) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

// |expected - actual|, with NaN matching only NaN and infinities only themselves.
double element_error(double expected, double actual) {
  if (std::isnan(expected) || std::isnan(actual))
    return std::isnan(expected) && std::isnan(actual) ? 0.0 : std::numeric_limits<double>::infinity();
  if (expected == actual)
    return 0.0;
  return std::abs(expected - actual);
}

// Empty when `actual` matches `expected`; otherwise what differs and where.
std::string compare(const HostTensor& expected, const HostTensor& actual) {
  if (expected.shape != actual.shape)
    return "shape " + shape_str(actual.shape) + ", expected " + shape_str(expected.shape);
  if (expected.data.size() != actual.data.size())
    return "holds " + std::to_string(actual.data.size()) + " values, expected " +
           std::to_string(expected.data.size());
  double max_error = 0.0;
  int64_t first_bad = -1;
  for (size_t i = 0; i < expected.data.size(); ++i) {
    double error = element_error(expected.data[i], actual.data[i]);
    max_error = std::max(max_error, error);
    if (first_bad < 0 && !(error < kTolerance))
      first_bad = static_cast<int64_t>(i);
  }
  if (first_bad < 0)
    return "";
  auto at = static_cast<size_t>(first_bad);
  return "max abs error " + number_str(max_error, 3) + " (tolerance " + number_str(kTolerance, 3) +
         "); first difference at " + index_str(first_bad, expected.shape) + ": expected " +
         number_str(expected.data[at]) + ", actual " + number_str(actual.data[at]);
}

// Compares every output and state tensor with expected/<name>.npy.
void check_results(const std::string& name, const fs::path& dir, const Fusion& fusion,
                   const InterpreterResult& result) {
  std::map<std::string, const HostTensor*> actual;
  for (const auto& [output, tensor] : result.outputs)
    actual[output] = &tensor;
  for (const auto& [state, tensor] : result.state)
    actual[state] = &tensor;
  for (const FusionOutput& output : fusion.outputs)
    EXPECT_TRUE(result.outputs.count(output.name)) << "case " << name << ": no result for output " << output.name;

  std::set<std::string> expected_files = npy_stems(dir / "expected");
  for (const auto& [tensor_name, tensor] : actual) {
    fs::path file = dir / "expected" / (tensor_name + ".npy");
    if (!expected_files.erase(tensor_name)) {
      ADD_FAILURE() << "case " << name << ": missing " << file.string();
      continue;
    }
    Result<HostTensor> expected = read_npy(file.string());
    if (!expected) {
      ADD_FAILURE() << "case " << name << ": " << expected.error();
      continue;
    }
    std::string difference = compare(expected.value(), *tensor);
    if (!difference.empty())
      ADD_FAILURE() << "case " << name << ", tensor " << tensor_name << ": " << difference;
  }
  for (const std::string& stray : expected_files)
    ADD_FAILURE() << "case " << name << ": expected/" << stray << ".npy is neither an output nor a state tensor";
}

std::string missing_golden_message() {
  return "no golden cases under " + golden_root().string() +
         "; generate them where PyTorch is installed with "
         "`python3 scripts/make_golden.py --out tests/golden` (see tests/golden/README.md)";
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesPyTorch) {
  const std::string& name = GetParam();
  const fs::path dir = golden_root() / name;
  SCOPED_TRACE("golden case " + dir.string());

  Result<Fusion> fusion = compile_case(dir, name);
  ASSERT_TRUE(fusion.ok()) << fusion.error();
  Result<std::map<std::string, HostTensor>> arguments = load_arguments(dir, fusion.value());
  ASSERT_TRUE(arguments.ok()) << arguments.error();
  // A stray tensor file means the spec and the data disagree about the arguments.
  for (const std::string& stem : npy_stems(dir))
    EXPECT_TRUE(arguments.value().count(stem)) << stem << ".npy is not an argument of the fusion";

  Result<InterpreterResult> result = interpret(fusion.value(), arguments.value());
  ASSERT_TRUE(result.ok()) << result.error();
  check_results(name, dir, fusion.value(), result.value());
}

// gtest names allow only letters, digits and '_'.
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name.empty() ? "unnamed" : name;
}

// Empty prefix: the tests are named Golden.MatchesPyTorch/<case>.
INSTANTIATE_TEST_SUITE_P(, Golden, ::testing::ValuesIn(case_names()), test_name);
// No cases is reported by Golden.FolderHasCases instead.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Golden);

TEST_F(Golden, FolderHasCases) {
  EXPECT_FALSE(case_names().empty()) << missing_golden_message();
}

TEST_F(Golden, CoversEveryOp) {
  std::vector<std::string> names = case_names();
  ASSERT_FALSE(names.empty()) << missing_golden_message();
  std::set<std::string> covered;
  for (const std::string& name : names) {
    Result<Fusion> fusion = compile_case(golden_root() / name, name);
    if (!fusion)
      continue; // reported by Golden.MatchesPyTorch/<name>
    for (const Node& node : fusion.value().nodes)
      covered.insert(node.op);
  }
  std::string missing;
  for (const std::string& op : OpRegistry::builtin().names())
    if (op != "constant" && !covered.count(op))
      missing += " " + op;
  EXPECT_TRUE(missing.empty()) << "ops without a golden case (add one to scripts/make_golden.py):" << missing;
}

} // namespace
} // namespace fusegen
