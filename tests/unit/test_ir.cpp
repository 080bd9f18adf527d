// Tests of the typed IR as the front end builds it: shape inference through
// whole specs, literal and operator sugar, dims fixed by the spec,
// fingerprints, dead-code elimination, IR dumps, specialization, the
// reference interpreter and the random arguments of `fusegen run`.
#include "fusegen/Frontend.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Interpreter.h"
#include "fusegen/Passes.h"
#include "fusegen/RandomInputs.h"
#include "fusegen/Specialize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

struct Compiled {
  SourceManager sources;
  Diagnostics diags;
  std::optional<Module> module;
  std::string dump;

  std::string errors() const { return diags.render(sources); }
  const Fusion& fusion(size_t index = 0) const { return module->fusions.at(index); }
};

std::unique_ptr<Compiled> compile(std::string text, std::string dump_after = "") {
  auto result = std::make_unique<Compiled>();
  uint32_t file = result->sources.add_buffer("test.fg", std::move(text));
  FrontendOptions options;
  options.dump_after = std::move(dump_after);
  options.dump_sink = &result->dump;
  result->module = compile_spec(result->sources, file, result->diags, options);
  return result;
}

// Compiles a spec that must be valid and returns its only fusion.
Fusion compile_one(const std::string& text) {
  std::unique_ptr<Compiled> c = compile(text);
  EXPECT_TRUE(c->module) << c->errors();
  if (!c->module || c->module->fusions.size() != 1)
    return {};
  return c->fusion();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const fs::path kSpecDir = fs::path(FUSEGEN_SOURCE_DIR) / "specs" / "kernelbench";

std::vector<std::string> node_ops(const Fusion& fusion) {
  std::vector<std::string> ops;
  for (const Node& node : fusion.nodes)
    ops.push_back(node.op);
  return ops;
}

const Value& output_value(const Fusion& fusion, size_t index = 0) {
  return fusion.value(fusion.outputs.at(index).value);
}

std::string output_shape(const Fusion& fusion, size_t index = 0) {
  return shape_str(output_value(fusion, index).type.shape);
}

// The node producing output `index`.
const Node& output_node(const Fusion& fusion, size_t index = 0) {
  return fusion.node(output_value(fusion, index).producer);
}

// ---- Shape inference through whole specs ----

struct KernelBenchSpec {
  std::string path; // under specs/kernelbench
  std::string output_shape;
  std::vector<std::string> ops;
};

const std::vector<KernelBenchSpec> kKernelBench = {
    {"39_gemm_scale_batchnorm.fg", "[N, 4096]", {"linear", "mul", "batch_norm"}},
    {"62_matmul_groupnorm_leakyrelu_sum.fg", "[N, 8192]", {"linear", "group_norm", "leaky_relu", "add"}},
    {"75_gemm_groupnorm_min_biasadd.fg", "[1, 8192, N, 1]", {"linear", "group_norm", "min", "add"}},
    {"85_conv2d_groupnorm_scale_maxpool_clamp.fg", "[N, 64, 31, 31]",
     {"conv2d", "group_norm", "mul", "max_pool2d", "clamp"}},
    {"small/39_gemm_scale_batchnorm.fg", "[N, 512]", {"linear", "mul", "batch_norm"}},
    {"small/62_matmul_groupnorm_leakyrelu_sum.fg", "[N, 256]", {"linear", "group_norm", "leaky_relu", "add"}},
    {"small/75_gemm_groupnorm_min_biasadd.fg", "[1, 256, N, 1]", {"linear", "group_norm", "min", "add"}},
    {"small/85_conv2d_groupnorm_scale_maxpool_clamp.fg", "[N, 16, 15, 15]",
     {"conv2d", "group_norm", "mul", "max_pool2d", "clamp"}},
};

TEST(IR, KernelBenchSpecsInferOutputShapes) {
  for (const KernelBenchSpec& spec : kKernelBench) {
    SCOPED_TRACE(spec.path);
    std::unique_ptr<Compiled> c = compile(read_file(kSpecDir / spec.path));
    ASSERT_TRUE(c->module) << c->errors();
    ASSERT_EQ(c->module->fusions.size(), 1u);
    const Fusion& fusion = c->fusion();
    ASSERT_EQ(fusion.outputs.size(), 1u);
    EXPECT_EQ(fusion.outputs[0].name, "y");
    EXPECT_EQ(output_shape(fusion), spec.output_shape);
    EXPECT_EQ(node_ops(fusion), spec.ops);
    EXPECT_EQ(fusion.symbols(), std::vector<std::string>{"N"});
    EXPECT_TRUE(fusion.fixed_dims.empty());
    EXPECT_FALSE(c->diags.has_errors());
  }
}

TEST(IR, EveryKernelBenchSpecHasAnExpectedShape) {
  std::set<std::string> known;
  for (const KernelBenchSpec& spec : kKernelBench)
    known.insert(spec.path);
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(kSpecDir)) {
    if (entry.path().extension() != ".fg")
      continue;
    std::string relative = fs::relative(entry.path(), kSpecDir).generic_string();
    // The convolution chains are written from their Models' own tensors and
    // checked against them (scripts/check_kernelbench_conv.py).
    if (relative.rfind("conv/", 0) == 0)
      continue;
    EXPECT_TRUE(known.count(relative)) << relative << " is not in kKernelBench";
  }
}

TEST(IR, IntermediateShapesOfConvChain) {
  Fusion fusion = compile_one(read_file(kSpecDir / "small/85_conv2d_groupnorm_scale_maxpool_clamp.fg"));
  ASSERT_EQ(fusion.nodes.size(), 5u);
  std::vector<std::string> shapes;
  for (const Node& node : fusion.nodes)
    shapes.push_back(shape_str(fusion.value(node.result).type.shape));
  EXPECT_EQ(shapes, (std::vector<std::string>{"[N, 16, 30, 30]", "[N, 16, 30, 30]", "[N, 16, 30, 30]",
                                              "[N, 16, 15, 15]", "[N, 16, 15, 15]"}));
}

TEST(IR, BroadcastingFollowsNumpy) {
  Fusion fusion = compile_one(R"(
fusion f {
  input a : f32[N, 1]
  param c : f32[1, C, 1, 1]
  input s : f32[]
  input v : f32[3]
  output y = a + c
  output z = s * v
}
)");
  EXPECT_EQ(output_shape(fusion, 0), "[1, C, N, 1]");
  EXPECT_EQ(output_shape(fusion, 1), "[3]");
  EXPECT_TRUE(fusion.fixed_dims.empty());
}

TEST(IR, BroadcastingASymbolAgainstAConstantFixesIt) {
  Fusion fusion = compile_one(R"(
fusion f {
  input a : f32[N, 8]
  param b : f32[4, 1]
  output y = a + b
}
)");
  EXPECT_EQ(output_shape(fusion), "[4, 8]");
  ASSERT_EQ(fusion.fixed_dims.count("N"), 1u);
  EXPECT_EQ(fusion.fixed_dims.at("N").first, 4);
}

// ---- Sugar: literals and operators ----

TEST(IR, ScalarLiteralsBecomeConstantNodesOnEitherSide) {
  Fusion fusion = compile_one(R"(
fusion f {
  input x : f32[N, 4]
  output y = 2.0 - x
  output z = x * 3
  output w = maximum(x, 0)
}
)");
  ASSERT_EQ(node_ops(fusion),
            (std::vector<std::string>{"constant", "sub", "constant", "mul", "constant", "maximum"}));
  const ValueId x = fusion.find_argument("x")->id;
  const Node& sub = output_node(fusion, 0);
  ASSERT_EQ(sub.operands.size(), 2u);
  const Node& two = fusion.node(fusion.value(sub.operands[0]).producer);
  EXPECT_EQ(two.op, "constant");
  EXPECT_EQ(two.attrs.at("value"), AttrValue(2.0));
  EXPECT_EQ(fusion.value(two.result).type.shape, Shape{});
  EXPECT_EQ(sub.operands[1], x);
  const Node& mul = output_node(fusion, 1);
  EXPECT_EQ(mul.operands[0], x);
  EXPECT_EQ(fusion.node(fusion.value(mul.operands[1]).producer).attrs.at("value"), AttrValue(3.0));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(output_shape(fusion, i), "[N, 4]");
}

TEST(IR, UnaryMinusBecomesNegAndSignsFoldIntoLiterals) {
  Fusion fusion = compile_one(R"(
fusion f {
  input x : f32[4]
  output a = -x
  output b = -(x * 2)
  output c = x * -1.5
  output d = +x
}
)");
  const Node& a = output_node(fusion, 0);
  EXPECT_EQ(a.op, "neg");
  EXPECT_EQ(a.operands, std::vector<ValueId>{fusion.find_argument("x")->id});
  const Node& b = output_node(fusion, 1);
  EXPECT_EQ(b.op, "neg");
  EXPECT_EQ(fusion.node(fusion.value(b.operands[0]).producer).op, "mul");
  const Node& c = output_node(fusion, 2);
  EXPECT_EQ(c.op, "mul");
  EXPECT_EQ(fusion.node(fusion.value(c.operands[1]).producer).attrs.at("value"), AttrValue(-1.5));
  // `+x` is x itself: no node.
  EXPECT_EQ(fusion.outputs[3].value, fusion.find_argument("x")->id);
  EXPECT_EQ(node_ops(fusion), (std::vector<std::string>{"neg", "constant", "mul", "neg", "constant", "mul"}));
}

// ---- Dims fixed by the spec ----

TEST(IR, SymbolMeetingAConstantIsFixedEverywhere) {
  Fusion fusion = compile_one(R"(fusion f {
  input x : f32[N, K]
  param w : f32[64, 8192]
  h = relu(x)
  output y = linear(h, w)
}
)");
  ASSERT_EQ(fusion.fixed_dims.size(), 1u);
  const auto& [value, where] = fusion.fixed_dims.at("K");
  EXPECT_EQ(value, 8192);
  EXPECT_EQ(where.line, 5u);
  EXPECT_EQ(where.col, 14u);
  // Arguments keep their declared symbols; results see the fixed value.
  EXPECT_EQ(shape_str(fusion.find_argument("x")->type.shape), "[N, K]");
  EXPECT_EQ(shape_str(fusion.value(fusion.nodes[0].result).type.shape), "[N, 8192]");
  EXPECT_EQ(output_shape(fusion), "[N, 64]");
  EXPECT_EQ(fusion.symbols(), (std::vector<std::string>{"K", "N"}));
  EXPECT_NE(print_fusion(fusion).find("where K = 8192"), std::string::npos) << print_fusion(fusion);
}

// ---- Fingerprints ----

const char* const kFingerprintBase = R"(
fusion f {
  input x : f32[N, 64]
  param w : f32[32, 64]
  h = linear(x, w)
  g = leaky_relu(h, negative_slope=0.01)
  output y = sum(g, dim=-1, keepdim=true)
}
)";

std::string fingerprint_of(const std::string& text) {
  std::unique_ptr<Compiled> c = compile(text);
  EXPECT_TRUE(c->module) << c->errors();
  return c->module ? fingerprint(c->fusion()) : "";
}

TEST(IR, FingerprintIsStableUnderLocalNamesLayoutAndSpelling) {
  const std::string base = fingerprint_of(kFingerprintBase);
  ASSERT_EQ(base.size(), 64u);
  EXPECT_EQ(base.find_first_not_of("0123456789abcdef"), std::string::npos);
  const std::vector<std::string> same = {
      // Other local names.
      "fusion f {\n input x : f32[N, 64]\n param w : f32[32, 64]\n hidden = linear(x, w)\n"
      " act = leaky_relu(hidden, negative_slope=0.01)\n output y = sum(act, dim=-1, keepdim=true)\n}\n",
      // Whitespace, comments and semicolons.
      "# header\nfusion f{input x:f32[N,64];param w:f32[32,64] # weight\n"
      "h=linear(x,w);g=leaky_relu(h,negative_slope=0.01)\n\n\noutput y=sum(g,dim=-1,keepdim=true)}",
      // Positional vs keyword arguments, an explicit default, dim 1 for dim -1.
      "fusion f {\n input x : f32[N, 64]\n param w : f32[32, 64]\n h = linear(input=x, weight=w, bias=None)\n"
      " g = leaky_relu(h, 0.01)\n output y = sum(g, 1, true)\n}\n",
      // One expression instead of named steps.
      "fusion f {\n input x : f32[N, 64]\n param w : f32[32, 64]\n"
      " output y = sum(leaky_relu(linear(x, w), negative_slope=0.01), dim=(1,), keepdim=true)\n}\n",
  };
  for (const std::string& text : same)
    EXPECT_EQ(fingerprint_of(text), base) << text;
}

TEST(IR, FingerprintChangesWithSemantics) {
  const std::string base = fingerprint_of(kFingerprintBase);
  auto variant = [](const std::string& from, const std::string& to) {
    std::string text = kFingerprintBase;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const std::vector<std::string> different = {
      variant("negative_slope=0.01", "negative_slope=0.02"), // an attribute
      variant("keepdim=true", "keepdim=false"),               // another attribute
      variant("f32[N, 64]", "f32[M, 64]"),                    // a symbol's name
      variant("param w : f32[32, 64]", "param w : f32[16, 64]"), // a shape
      variant("leaky_relu(h, negative_slope=0.01)", "relu(h)"),  // an op
      variant("output y", "output out"),                      // an output name
      // an argument name, also part of the calling interface:
      variant("param w : f32[32, 64]\n  h = linear(x, w)", "param v : f32[32, 64]\n  h = linear(x, v)"),
      variant("fusion f {", "fusion f (precision=tf32) {"),
  };
  std::set<std::string> seen = {base};
  for (const std::string& text : different)
    EXPECT_TRUE(seen.insert(fingerprint_of(text)).second) << text;
}

TEST(IR, CanonicalFormHasNoLocalNamesOrLocations) {
  std::unique_ptr<Compiled> c = compile(kFingerprintBase);
  ASSERT_TRUE(c->module) << c->errors();
  std::string canonical = canonical_form(c->fusion());
  EXPECT_EQ(canonical.find('#'), std::string::npos) << canonical;
  EXPECT_EQ(canonical.find(" g"), std::string::npos) << canonical;
  EXPECT_NE(canonical.find("leaky_relu"), std::string::npos) << canonical;
  // The readable form keeps them.
  std::string readable = print_fusion(c->fusion());
  EXPECT_NE(readable.find("# g, line 6:7"), std::string::npos) << readable;
}

// ---- Dead-code elimination ----

TEST(IR, DeadCodeIsDroppedAndIdsStayDense) {
  Fusion fusion = compile_one(R"(
fusion f {
  input x : f32[4]
  a = relu(x)
  b = sigmoid(x)
  c = b * 2.0 + a
  output y = a
}
)");
  EXPECT_EQ(node_ops(fusion), std::vector<std::string>{"relu"});
  ASSERT_EQ(fusion.values.size(), 2u);
  for (size_t i = 0; i < fusion.values.size(); ++i)
    EXPECT_EQ(fusion.values[i].id, i);
  EXPECT_EQ(fusion.outputs[0].value, 1u);
  EXPECT_EQ(fusion.value(1).producer, 0u);
  EXPECT_EQ(fusion.arguments, std::vector<ValueId>{0});
}

TEST(IR, StateUpdatesSurviveDeadCodeElimination) {
  Fusion fusion = compile_one(R"(
fusion f {
  input x : f32[N, 4]
  state m : f32[4]
  state v : f32[4]
  h = x * 2.0
  trained = batch_norm(h, m, v, training=true)
  evaluated = batch_norm(x, m, v, training=false)
  output y = relu(x)
}
)");
  // The training batch_norm updates m and v, so it and its inputs stay; the
  // evaluation one has no effect and goes.
  EXPECT_EQ(node_ops(fusion), (std::vector<std::string>{"constant", "mul", "batch_norm", "relu"}));
  EXPECT_EQ(std::get<bool>(fusion.nodes[2].attrs.at("training")), true);
}

// ---- --dump-after ----

TEST(IR, DumpAfterEveryPass) {
  const std::string spec = "fusion f {\n  input x : f32[4]\n  a = relu(x)\n  b = sigmoid(x)\n  output y = a\n}\n";
  std::unique_ptr<Compiled> all = compile(spec, "all");
  ASSERT_TRUE(all->module) << all->errors();
  size_t at = 0;
  for (const std::string& point : dump_points()) {
    if (point == "all")
      continue;
    size_t found = all->dump.find("// ----- IR after " + point + " -----\n", at);
    EXPECT_NE(found, std::string::npos) << point << " in\n" << all->dump;
    at = found == std::string::npos ? at : found;
  }
  // The IR before dead-code elimination has the unused sigmoid; after, not.
  std::unique_ptr<Compiled> before = compile(spec, "build-ir");
  std::unique_ptr<Compiled> after = compile(spec, "dead-code");
  EXPECT_EQ(before->dump.rfind("// ----- IR after build-ir -----\nfusion f (precision=strict) {\n", 0), 0u)
      << before->dump;
  EXPECT_NE(before->dump.find("sigmoid(x)"), std::string::npos) << before->dump;
  // A result is named by the last statement that binds it (`output y = a`).
  EXPECT_NE(before->dump.find("%1 : f32[4] = relu(x)  # y, line 3:7"), std::string::npos) << before->dump;
  EXPECT_EQ(after->dump.find("sigmoid"), std::string::npos) << after->dump;
  EXPECT_EQ(after->dump.find("IR after build-ir"), std::string::npos) << after->dump;
  EXPECT_EQ(compile(spec)->dump, "");
}

TEST(IR, NoDumpWhenCompilationFails) {
  std::unique_ptr<Compiled> c = compile("fusion f {\n  input x : f32[4]\n  output y = relu(z)\n}\n", "all");
  EXPECT_FALSE(c->module);
  EXPECT_EQ(c->dump, "");
}

// ---- Specialization ----

const char* const kSmall62 = "small/62_matmul_groupnorm_leakyrelu_sum.fg";

std::map<std::string, std::vector<int64_t>> declared_shapes(const Fusion& fusion, int64_t n) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (ValueId id : fusion.arguments) {
    std::vector<int64_t> shape;
    for (const Dim& d : fusion.value(id).type.shape)
      shape.push_back(d.is_constant() ? d.value() : n);
    shapes[fusion.value(id).name] = shape;
  }
  return shapes;
}

TEST(IR, BindDimsFromArgumentShapes) {
  Fusion fusion = compile_one(read_file(kSpecDir / kSmall62));
  Result<DimBindings> dims = bind_dims(fusion, declared_shapes(fusion, 8));
  ASSERT_TRUE(dims) << dims.error();
  EXPECT_EQ(dims.value(), (DimBindings{{"N", 8}}));
}

// K meets the constant 32 in linear, so the spec fixes it.
const char* const kFixedK =
    "fusion f {\n  input x : f32[N, K]\n  param w : f32[64, 32]\n  output y = linear(x, w)\n}\n";

TEST(IR, BindDimsErrors) {
  Fusion fusion = compile_one(read_file(kSpecDir / kSmall62));
  auto error_of = [&](std::map<std::string, std::vector<int64_t>> shapes) {
    Result<DimBindings> dims = bind_dims(fusion, shapes);
    return dims ? std::string("no error") : dims.error();
  };
  auto shapes = declared_shapes(fusion, 8);
  auto missing = shapes;
  missing.erase("gn_b");
  EXPECT_EQ(error_of(missing), "missing tensor 'gn_b' (param [256])");
  auto unknown = shapes;
  unknown["q"] = {1};
  EXPECT_EQ(error_of(unknown), "unknown tensor 'q' for fusion 'matmul_groupnorm_leakyrelu_sum'");
  auto wrong_rank = shapes;
  wrong_rank["x"] = {8, 512, 1};
  EXPECT_EQ(error_of(wrong_rank), "tensor 'x' has rank 3 [8, 512, 1] but the spec declares [N, 512]");
  auto wrong_dim = shapes;
  wrong_dim["w"] = {256, 511};
  EXPECT_EQ(error_of(wrong_dim), "tensor 'w' has shape [256, 511] but the spec declares [256, 512]");
  auto negative = shapes;
  negative["x"] = {-1, 512};
  EXPECT_EQ(error_of(negative), "tensor 'x' has a negative dim");

  Fusion two = compile_one("fusion f {\n  input a : f32[N, 4]\n  input b : f32[N, 4]\n  output y = a + b\n}\n");
  EXPECT_EQ(bind_dims(two, {{"a", {3, 4}}, {"b", {5, 4}}}).error(),
            "dim N is bound two ways: 'a' gives 3 but 'b' gives 5");

  Fusion fixed = compile_one(kFixedK);
  EXPECT_EQ(bind_dims(fixed, {{"x", {2, 31}}, {"w", {64, 32}}}).error(),
            "tensor 'x': dim K must be 32 (fixed by the spec at line 4:14), got 31");
  Result<DimBindings> ok = bind_dims(fixed, {{"x", {2, 32}}, {"w", {64, 32}}});
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok.value(), (DimBindings{{"K", 32}, {"N", 2}}));
}

TEST(IR, CheckBindingsErrors) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, C]\n  output y = relu(x)\n}\n");
  EXPECT_TRUE(check_bindings(fusion, {{"N", 2}, {"C", 3}}));
  EXPECT_TRUE(check_bindings(fusion, {{"N", 0}, {"C", 3}})); // empty tensors are fine
  EXPECT_EQ(check_bindings(fusion, {{"N", 2}}).error(),
            "fusion 'f' needs a value for dim C (e.g. --dims C=128)");
  EXPECT_EQ(check_bindings(fusion, {{"N", 2}, {"C", 3}, {"M", 1}}).error(), "fusion 'f' has no dim named M");
  EXPECT_EQ(check_bindings(fusion, {{"N", -2}, {"C", 3}}).error(), "dim N must not be negative");

  Fusion fixed = compile_one(kFixedK);
  EXPECT_EQ(check_bindings(fixed, {{"N", 2}, {"K", 31}}).error(),
            "dim K must be 32 (fixed by the spec at line 4:14), got 31");
  EXPECT_TRUE(check_bindings(fixed, {{"N", 2}, {"K", 32}}));
}

// A dim fixed by the spec need not be passed.
TEST(IR, CheckBindingsDoesNotNeedDimsFixedBySpec) {
  Fusion fixed = compile_one(kFixedK);
  Status status = check_bindings(fixed, {{"N", 2}});
  EXPECT_TRUE(status) << status.error();
}

// The 2^48 element limit of declared shapes also holds for specialized shapes.
TEST(IR, SpecializationAppliesTheElementLimit) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, 281474976710656]\n  output y = relu(x)\n}\n");
  Diagnostics diags;
  bool rejected = !check_bindings(fusion, {{"N", 2}}) || !specialize(fusion, {{"N", 2}}, diags);
  EXPECT_TRUE(rejected);
}

TEST(IR, SpecializeMakesEveryDimConstant) {
  Fusion fusion = compile_one(read_file(kSpecDir / "small/75_gemm_groupnorm_min_biasadd.fg"));
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, {{"N", 5}}, diags);
  ASSERT_TRUE(concrete);
  EXPECT_FALSE(diags.has_errors());
  EXPECT_EQ(output_shape(*concrete), "[1, 256, 5, 1]");
  for (const Value& value : concrete->values)
    EXPECT_TRUE(shape_is_constant(value.type.shape)) << value.name;
  EXPECT_TRUE(concrete->symbols().empty());
  // The symbolic fusion is left as it was.
  EXPECT_EQ(output_shape(fusion), "[1, 256, N, 1]");
}

TEST(IR, SpecializeRechecksWhatSymbolsHid) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, C]\n  output y = group_norm(x, num_groups=3)\n}\n");
  Diagnostics diags;
  EXPECT_FALSE(specialize(fusion, {{"N", 2}, {"C", 64}}, diags));
  ASSERT_EQ(diags.all().size(), 1u);
  EXPECT_EQ(diags.all()[0].message, "group_norm: num_groups 3 does not divide the 64 channels");
  EXPECT_EQ(diags.all()[0].loc.line, 3u);
  EXPECT_EQ(diags.all()[0].loc.col, 14u);

  Diagnostics ok_diags;
  std::optional<Fusion> ok = specialize(fusion, {{"N", 2}, {"C", 48}}, ok_diags);
  ASSERT_TRUE(ok);
  EXPECT_EQ(output_shape(*ok), "[2, 48]");

  // Grouped conv with both channel counts symbolic is checked once bound.
  Fusion conv = compile_one("fusion f {\n  input x : f32[N, C, 8, 8]\n  param w : f32[16, D, 3, 3]\n"
                            "  output y = conv2d(x, w, groups=2)\n}\n");
  Diagnostics conv_diags;
  EXPECT_FALSE(specialize(conv, {{"N", 1}, {"C", 6}, {"D", 4}}, conv_diags));
  ASSERT_EQ(conv_diags.all().size(), 1u);
  EXPECT_NE(conv_diags.all()[0].message.find("disagree on input channels"), std::string::npos)
      << conv_diags.all()[0].message;
  Diagnostics good_conv_diags;
  std::optional<Fusion> good_conv = specialize(conv, {{"N", 1}, {"C", 6}, {"D", 3}}, good_conv_diags);
  ASSERT_TRUE(good_conv);
  EXPECT_EQ(output_shape(*good_conv), "[1, 16, 6, 6]");
}

// ---- The reference interpreter ----

HostTensor tensor(std::vector<int64_t> shape, std::vector<double> data) {
  HostTensor t(std::move(shape));
  t.data = std::move(data);
  return t;
}

TEST(IR, InterpreterComputesATinyFusionByHand) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, 2]\n  output y = relu(x * 2 - 1)\n}\n");
  Result<InterpreterResult> result = interpret(fusion, {{"x", tensor({2, 2}, {-1, 0.25, 0.75, 2})}});
  ASSERT_TRUE(result) << result.error();
  const HostTensor& y = result.value().outputs.at("y");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(y.data, (std::vector<double>{0, 0, 0.5, 3}));
  EXPECT_TRUE(result.value().state.empty());
}

// The contractions' references split their outputs over threads; every
// output element is computed the same way whatever the split.
TEST(IR, InterpreterResultsDoNotDependOnThreads) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, 3, 9, 9]\n  param w : f32[8, 3, 3, 3]\n"
                              "  param v : f32[40, 9]\n  input a : f32[N, 5, 392]\n  input b : f32[392, 7]\n"
                              "  h = conv2d(x, w, padding=1)\n  output y = linear(h, v)\n"
                              "  output z = matmul(a, b)\n}\n");
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, {{"N", 37}}, diags);
  ASSERT_TRUE(concrete);
  std::map<std::string, HostTensor> inputs = make_random_arguments(*concrete, 3);
  std::vector<int> progress;
  InterpreterOptions one{.threads = 1, .on_node = [&](size_t index, size_t count, const Node&) {
                           EXPECT_EQ(count, concrete->nodes.size());
                           progress.push_back(static_cast<int>(index));
                         }};
  Result<InterpreterResult> serial = interpret(fusion, inputs, one);
  ASSERT_TRUE(serial) << serial.error();
  EXPECT_EQ(progress, (std::vector<int>{0, 1, 2}));
  for (int threads : {2, 3, 16}) {
    Result<InterpreterResult> parallel = interpret(fusion, inputs, {.threads = threads});
    ASSERT_TRUE(parallel) << parallel.error();
    for (const char* name : {"y", "z"})
      EXPECT_EQ(parallel.value().outputs.at(name).data, serial.value().outputs.at(name).data) << name << " " << threads;
  }
}

TEST(IR, InterpreterComputesLinearByHand) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, 2]\n  param w : f32[3, 2]\n  param b : f32[3]\n"
                              "  output y = linear(x, w, b)\n}\n");
  Result<InterpreterResult> result = interpret(fusion, {{"x", tensor({1, 2}, {1, 2})},
                                                        {"w", tensor({3, 2}, {1, 0, 0, 1, 1, 1})},
                                                        {"b", tensor({3}, {0.5, 0, -1})}});
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result.value().outputs.at("y").data, (std::vector<double>{1.5, 2, 2}));
}

TEST(IR, InterpreterReturnsUpdatedState) {
  Fusion fusion = compile_one(R"(
fusion f {
  input x : f32[N, 2]
  state m : f32[2]
  state v : f32[2]
  output y = batch_norm(x, m, v, training=true, momentum=0.1, eps=0.0)
}
)");
  std::map<std::string, HostTensor> args = {
      {"x", tensor({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {"m", tensor({2}, {0, 0})}, {"v", tensor({2}, {1, 1})}};
  Result<InterpreterResult> result = interpret(fusion, args);
  ASSERT_TRUE(result) << result.error();
  // Channel means 4 and 5, biased variance 5, unbiased 20/3.
  const HostTensor& m = result.value().state.at("m");
  const HostTensor& v = result.value().state.at("v");
  EXPECT_DOUBLE_EQ(m.data[0], 0.4);
  EXPECT_DOUBLE_EQ(m.data[1], 0.5);
  EXPECT_DOUBLE_EQ(v.data[0], 0.9 + 0.1 * 20.0 / 3.0);
  EXPECT_DOUBLE_EQ(v.data[1], 0.9 + 0.1 * 20.0 / 3.0);
  const HostTensor& y = result.value().outputs.at("y");
  EXPECT_DOUBLE_EQ(y.data[0], -3.0 / std::sqrt(5.0));
  EXPECT_DOUBLE_EQ(y.data[7], 3.0 / std::sqrt(5.0));
  // The caller's tensors are not modified.
  EXPECT_EQ(args.at("m").data, (std::vector<double>{0, 0}));
}

TEST(IR, InterpreterRejectsBadArguments) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, 2]\n  output y = relu(x)\n}\n");
  Result<InterpreterResult> missing = interpret(fusion, {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), "missing tensor 'x' (input [N, 2])");
  HostTensor short_tensor = tensor({2, 2}, {1, 2, 3});
  Result<InterpreterResult> wrong_size = interpret(fusion, {{"x", short_tensor}});
  ASSERT_FALSE(wrong_size);
  EXPECT_EQ(wrong_size.error(), "tensor 'x' holds 3 values but its shape [2, 2] needs 4");
  Result<InterpreterResult> wrong_shape = interpret(fusion, {{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(wrong_shape);
  EXPECT_EQ(wrong_shape.error(), "tensor 'x' has shape [2, 3] but the spec declares [N, 2]");
}

TEST(IR, InterpreterReportsErrorsFoundWhenSpecializing) {
  Fusion fusion = compile_one("fusion f {\n  input x : f32[N, C]\n  output y = group_norm(x, num_groups=3)\n}\n");
  Result<InterpreterResult> result = interpret(fusion, {{"x", HostTensor({1, 4})}});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "fusion 'f': line 3:14: group_norm: num_groups 3 does not divide the 4 channels");
}

// ---- Random arguments ----

Fusion specialized_small39(int64_t n) {
  Fusion fusion = compile_one(read_file(kSpecDir / "small/39_gemm_scale_batchnorm.fg"));
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(fusion, {{"N", n}}, diags);
  EXPECT_TRUE(concrete);
  return concrete.value_or(Fusion{});
}

TEST(IR, RandomArgumentsAreDeterministicPerSeed) {
  Fusion fusion = specialized_small39(4);
  std::map<std::string, HostTensor> a = make_random_arguments(fusion, 1);
  std::map<std::string, HostTensor> b = make_random_arguments(fusion, 1);
  std::map<std::string, HostTensor> c = make_random_arguments(fusion, 2);
  ASSERT_EQ(a.size(), 8u);
  for (const auto& [name, tensor] : a) {
    EXPECT_EQ(tensor.data, b.at(name).data) << name;
    EXPECT_EQ(tensor.shape, c.at(name).shape) << name;
  }
  for (const char* name : {"x", "w", "b", "scale"})
    EXPECT_NE(a.at(name).data, c.at(name).data) << name;
  // Different arguments of the same shape get different values.
  EXPECT_NE(a.at("scale").data, a.at("b").data);
}

TEST(IR, RandomArgumentsDependOnNameNotOrder) {
  Fusion first = compile_one("fusion f {\n  input x : f32[3, 4]\n  input z : f32[3, 4]\n  output y = x + z\n}\n");
  Fusion second = compile_one("fusion g {\n  input z : f32[3, 4]\n  input x : f32[3, 4]\n  output y = z * x\n}\n");
  std::map<std::string, HostTensor> a = make_random_arguments(first, 9);
  std::map<std::string, HostTensor> b = make_random_arguments(second, 9);
  EXPECT_EQ(a.at("x").data, b.at("x").data);
  EXPECT_EQ(a.at("z").data, b.at("z").data);
}

TEST(IR, RandomArgumentsFollowTorchInitRules) {
  Fusion fusion = specialized_small39(16);
  std::map<std::string, HostTensor> args = make_random_arguments(fusion, 3);
  const std::map<std::string, std::string> rules = {
      {"x", "uniform [0, 1)"},          {"w", "uniform +-1/sqrt(fan_in)"}, {"b", "uniform +-1/sqrt(fan_in)"},
      {"scale", "standard normal"},     {"bn_w", "ones"},                 {"bn_b", "zeros"},
      {"running_mean", "zeros"},        {"running_var", "ones"}};
  for (ValueId id : fusion.arguments)
    EXPECT_EQ(init_rule_name(fusion, id), rules.at(fusion.value(id).name)) << fusion.value(id).name;

  const double bound = 1.0 / std::sqrt(1024.0); // fan_in of w [512, 1024]
  auto all = [](const HostTensor& t, auto predicate) {
    return std::all_of(t.data.begin(), t.data.end(), predicate);
  };
  EXPECT_EQ(args.at("x").shape, (std::vector<int64_t>{16, 1024}));
  EXPECT_TRUE(all(args.at("x"), [](double v) { return v >= 0.0 && v < 1.0; }));
  EXPECT_TRUE(all(args.at("w"), [&](double v) { return std::fabs(v) <= bound; }));
  EXPECT_TRUE(all(args.at("b"), [&](double v) { return std::fabs(v) <= bound; }));
  EXPECT_TRUE(all(args.at("bn_w"), [](double v) { return v == 1.0; }));
  EXPECT_TRUE(all(args.at("running_var"), [](double v) { return v == 1.0; }));
  EXPECT_TRUE(all(args.at("bn_b"), [](double v) { return v == 0.0; }));
  EXPECT_TRUE(all(args.at("running_mean"), [](double v) { return v == 0.0; }));
  // Standard normal: both signs, some beyond 1, mean near 0.
  const HostTensor& scale = args.at("scale");
  EXPECT_FALSE(all(scale, [](double v) { return v >= 0.0; }));
  EXPECT_FALSE(all(scale, [](double v) { return std::fabs(v) <= 1.0; }));
  double mean = 0;
  for (double v : scale.data)
    mean += v / static_cast<double>(scale.data.size());
  EXPECT_LT(std::fabs(mean), 0.2);
  // Every value is a float32 value, as a device would see it.
  for (const auto& [name, tensor] : args)
    EXPECT_TRUE(all(tensor, [](double v) { return static_cast<double>(static_cast<float>(v)) == v; })) << name;
}

TEST(IR, RandomArgumentsRunThroughTheInterpreter) {
  Fusion symbolic = compile_one(read_file(kSpecDir / "small/39_gemm_scale_batchnorm.fg"));
  std::map<std::string, HostTensor> args = make_random_arguments(specialized_small39(8), 5);
  Result<InterpreterResult> result = interpret(symbolic, args);
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result.value().outputs.at("y").shape, (std::vector<int64_t>{8, 512}));
  ASSERT_EQ(result.value().state.size(), 2u);
  // Running statistics moved from their initial zeros and ones.
  EXPECT_NE(result.value().state.at("running_mean").data, args.at("running_mean").data);
  EXPECT_NE(result.value().state.at("running_var").data, args.at("running_var").data);
}

} // namespace
} // namespace fusegen
