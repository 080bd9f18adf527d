// Op traits (fusegen/OpTraits.h): every op of a family declares what the
// planner and the emitters ask of it, and no code outside the op registry
// decides behaviour by comparing op names.
#include "fusegen/OpRegistry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

const OpDef& op(std::string_view name) {
  const OpDef* def = OpRegistry::builtin().find(name);
  EXPECT_NE(def, nullptr) << name;
  return *def;
}

TEST(OpTraits, EveryAnchorFamilyDeclaresWhatItComputes) {
  const OpRegistry& registry = OpRegistry::builtin();
  for (const std::string& name : registry.names()) {
    const OpDef& def = *registry.find(name);
    switch (def.kind) {
    case OpKind::Reduction:
    case OpKind::Normalization:
    case OpKind::ColumnNorm:
      EXPECT_NE(def.traits.statistic, Statistic::None) << name;
      break;
    case OpKind::Contraction:
      EXPECT_NE(def.traits.contraction, ContractionForm::None) << name;
      if (def.traits.contraction == ContractionForm::Convolution) {
        EXPECT_GT(def.traits.spatial_dims, 0) << name;
      }
      break;
    case OpKind::Window:
      EXPECT_NE(def.traits.window, WindowCombine::None) << name;
      EXPECT_GT(def.traits.spatial_dims, 0) << name;
      break;
    case OpKind::Pointwise:
    case OpKind::Identity:
    case OpKind::Constant:
      EXPECT_EQ(def.traits.statistic, Statistic::None) << name;
      EXPECT_EQ(def.traits.contraction, ContractionForm::None) << name;
      EXPECT_EQ(def.traits.window, WindowCombine::None) << name;
      break;
    }
    if (def.traits.statistic == Statistic::Moments) {
      EXPECT_NE(def.traits.affine, AffineLayout::None) << name << " has weight and bias";
    }
  }
}

TEST(OpTraits, NormalizationsReduceTorchsDims) {
  Attrs none;
  EXPECT_EQ(op("group_norm").traits.reduced_dims(none, 4), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(op("instance_norm").traits.reduced_dims(none, 5), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(op("batch_norm").traits.reduced_dims(none, 4), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(op("batch_norm").traits.reduced_dims(none, 2), (std::vector<int64_t>{0}));
  Attrs layer = {{"normalized_shape", std::vector<int64_t>{8, 8}}};
  EXPECT_EQ(op("layer_norm").traits.reduced_dims(layer, 4), (std::vector<int64_t>{2, 3}));
  Attrs groups = {{"num_groups", int64_t{4}}};
  ASSERT_TRUE(op("group_norm").traits.channel_groups);
  EXPECT_EQ(op("group_norm").traits.channel_groups(groups), 4);
  EXPECT_FALSE(op("layer_norm").traits.channel_groups);
  EXPECT_FALSE(op("softmax").traits.reduced_dims) << "softmax reduces its `dim` attribute";
}

TEST(OpTraits, ReductionsNameTheirCombination) {
  EXPECT_EQ(op("sum").traits.statistic, Statistic::Sum);
  EXPECT_EQ(op("amax").traits.statistic, Statistic::Max);
  EXPECT_EQ(op("max").traits.statistic, Statistic::Max);
  EXPECT_EQ(op("min").traits.statistic, Statistic::Min);
  EXPECT_EQ(op("logsumexp").traits.statistic, Statistic::LogSumExp);
}

// An op name of the registry in a comparison: `== "relu"` or `"relu" !=`.
std::regex comparison_pattern() {
  std::string names;
  for (const std::string& name : OpRegistry::builtin().names())
    names += (names.empty() ? "" : "|") + name;
  const std::string quoted = "\"(" + names + ")\"";
  return std::regex("(==|!=)\\s*" + quoted + "|" + quoted + "\\s*(==|!=)");
}

bool is_source(const fs::path& path) {
  static const std::set<std::string> extensions = {".cpp", ".h", ".cu", ".cuh", ".c"};
  return extensions.count(path.extension().string()) > 0;
}

// The registry itself (compiler/src/ops and OpRegistry.cpp) may name ops;
// planner, emitters, runtime and the command line ask OpTraits instead.
bool is_registry(const fs::path& relative) {
  std::string text = relative.generic_string();
  return text.rfind("compiler/src/ops/", 0) == 0 || text == "compiler/src/OpRegistry.cpp";
}

TEST(OpTraits, NoOpNameComparisonOutsideTheRegistry) {
  const fs::path root = FUSEGEN_SOURCE_DIR;
  const std::regex pattern = comparison_pattern();
  std::vector<std::string> found;
  size_t scanned = 0;
  for (const char* top : {"compiler", "runtime", "cli", "python", "templates"}) {
    if (!fs::exists(root / top))
      continue;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root / top)) {
      const fs::path relative = fs::relative(entry.path(), root);
      if (!entry.is_regular_file() || !is_source(entry.path()) || is_registry(relative))
        continue;
      ++scanned;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number)
        if (line.find('"') != std::string::npos && std::regex_search(line, pattern))
          found.push_back(relative.generic_string() + ":" + std::to_string(number) + ": " + line);
    }
  }
  EXPECT_GT(scanned, 50u) << "the source tree was not found under " << root;
  std::string report;
  for (const std::string& hit : found)
    report += "\n  " + hit;
  EXPECT_TRUE(found.empty()) << "compare OpTraits (fusegen/OpTraits.h), not op names:" << report;
}

} // namespace
} // namespace fusegen
