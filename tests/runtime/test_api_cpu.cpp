// The JIT API on any machine: loading specs, errors with locations, and
// every argument check that runs before the driver is touched.
#include "support/TestSupport.h"

#include "fusegen/Runtime.h"

#include <gtest/gtest.h>

#include <functional>

namespace fusegen {
namespace {

const char* const kSpec = R"(fusion bn_chain {
  input  x    : f32[N, 64]
  param  w    : f32[32, 64]
  state  mean : f32[32]
  h = linear(x, w)
  output y = relu(h)
  output z = h * 2.0
}
)";

// Fake but aligned device addresses: the checks here never dereference them.
void* address(uintptr_t a) { return reinterpret_cast<void*>(a); }
constexpr uintptr_t kX = 0x100000, kW = 0x200000, kMean = 0x300000, kY = 0x400000, kZ = 0x500000;

RuntimeOptions memory_only() {
  RuntimeOptions options;
  options.disk_cache = false;
  return options;
}

std::string error_of(const std::function<void()>& action, ErrorKind* kind = nullptr) {
  try {
    action();
  } catch (const RuntimeError& error) {
    if (kind)
      *kind = error.kind();
    return error.what();
  }
  return "(no error)";
}

class ApiTest : public ::testing::Test {
protected:
  std::vector<TensorArg> args(int64_t n = 8) const {
    return {{"x", address(kX), {n, 64}}, {"w", address(kW), {32, 64}}, {"mean", address(kMean), {32}}};
  }
  std::vector<TensorOut> outs(int64_t n = 8) const {
    return {{"y", address(kY), {n, 32}}, {"z", address(kZ), {n, 32}}};
  }
  // The message of the Argument error `call` raises.
  std::string argument_error(const std::vector<TensorArg>& a, const std::vector<TensorOut>& o) {
    ErrorKind kind = ErrorKind::Io;
    std::string message = error_of([&] { f_.call(a, o); }, &kind);
    EXPECT_EQ(kind, ErrorKind::Argument) << message;
    return message;
  }

  Runtime rt_{0, memory_only()};
  Program prog_ = rt_.load_string(kSpec, "chain.fg");
  Function f_ = prog_.function("bn_chain");
};

TEST_F(ApiTest, Introspection) {
  EXPECT_EQ(prog_.name(), "chain.fg");
  EXPECT_EQ(prog_.function_names(), std::vector<std::string>{"bn_chain"});
  EXPECT_EQ(f_.name(), "bn_chain");
  EXPECT_EQ(f_.argument_names(), (std::vector<std::string>{"x", "w", "mean"}));
  EXPECT_EQ(f_.output_names(), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(f_.signature(), "bn_chain(x: f32[N, 64], w: f32[32, 64], mean: f32[32]) -> (y: f32[N, 32], z: f32[N, 32])");
  ErrorKind kind = ErrorKind::Io;
  EXPECT_EQ(error_of([&] { prog_.function("nope"); }, &kind), "chain.fg has no fusion named 'nope' (it has: bn_chain)");
  EXPECT_EQ(kind, ErrorKind::Argument);
}

TEST_F(ApiTest, SpecErrorsHaveLocations) {
  ErrorKind kind = ErrorKind::Io;
  std::string message =
      error_of([&] { rt_.load_string("fusion f {\n  input x : f32[4]\n  output y = nope(x)\n}\n", "bad.fg"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Spec);
  EXPECT_EQ(message.rfind("bad.fg:3:", 0), 0u) << message;
  EXPECT_NE(message.find("error:"), std::string::npos) << message;
  EXPECT_NE(message.find("^"), std::string::npos) << message; // the caret line

  EXPECT_EQ(error_of([&] { rt_.load_file("/nonexistent/spec.fg"); }, &kind), "/nonexistent/spec.fg: no such file");
  EXPECT_EQ(kind, ErrorKind::Io);
  Program loaded = rt_.load_file(testing::source_path("specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg"));
  EXPECT_EQ(loaded.function_names(), std::vector<std::string>{"matmul_groupnorm_leakyrelu_sum"});
}

TEST_F(ApiTest, TensorNamesAndShapes) {
  auto a = args();
  a.pop_back();
  EXPECT_NE(argument_error(a, outs()).find("missing tensor 'mean'"), std::string::npos);
  a = args();
  a.push_back({"extra", address(kX), {1}});
  EXPECT_NE(argument_error(a, outs()).find("unknown tensor 'extra'"), std::string::npos);
  a = args();
  a.push_back(a[0]);
  EXPECT_EQ(argument_error(a, outs()), "fusion 'bn_chain': tensor 'x' is given twice");
  a = args();
  a[0].shape = {8, 64, 1};
  EXPECT_NE(argument_error(a, outs()).find("tensor 'x' has rank 3"), std::string::npos);
  a = args();
  a[1].shape = {32, 65};
  EXPECT_NE(argument_error(a, outs()).find("tensor 'w' has shape [32, 65] but the spec declares [32, 64]"),
            std::string::npos);
  a = args();
  a[2].shape = {-1};
  EXPECT_NE(argument_error(a, outs()).find("negative"), std::string::npos);
  a = args();
  a.push_back({"y", address(kY), {8, 32}});
  EXPECT_EQ(argument_error(a, outs()), "fusion 'bn_chain': 'y' is an output; pass it among the outputs");

  auto o = outs();
  o.pop_back();
  EXPECT_EQ(argument_error(args(), o), "fusion 'bn_chain': missing output 'z' (f32[N, 32])");
  o = outs();
  o[1].shape = {9, 32};
  EXPECT_EQ(argument_error(args(), o), "fusion 'bn_chain': output 'z' has shape [9, 32] but must be [8, 32]");
  o = outs();
  o.push_back({"q", address(kZ), {1}});
  EXPECT_EQ(argument_error(args(), o), "fusion 'bn_chain': unknown output 'q'");
  o = outs();
  o.push_back(o[0]);
  EXPECT_EQ(argument_error(args(), o), "fusion 'bn_chain': output 'y' is given twice");
  o = outs();
  o.push_back({"x", address(kX), {8, 64}});
  EXPECT_EQ(argument_error(args(), o), "fusion 'bn_chain': 'x' is an argument, not an output");
}

TEST_F(ApiTest, DimBoundTwoWays) {
  const char* spec = "fusion two {\n  input a : f32[N, 4]\n  input b : f32[N, 4]\n  output c = a + b\n}\n";
  Function f = rt_.load_string(spec, "two.fg").function("two");
  ErrorKind kind = ErrorKind::Io;
  std::string message = error_of(
      [&] {
        f.call({{"a", address(kX), {8, 4}}, {"b", address(kW), {9, 4}}}, {{"c", address(kY), {8, 4}}});
      },
      &kind);
  EXPECT_EQ(kind, ErrorKind::Argument);
  EXPECT_NE(message.find("dim N is bound two ways: 'a' gives 8 but 'b' gives 9"), std::string::npos) << message;
}

TEST_F(ApiTest, PointersAreCheckedBeforeTheDriver) {
  auto a = args();
  a[1].data = nullptr;
  EXPECT_EQ(argument_error(a, outs()), "fusion 'bn_chain': tensor 'w' is a null pointer");
  a = args();
  a[0].data = address(kX + 4);
  EXPECT_EQ(argument_error(a, outs()), "fusion 'bn_chain': tensor 'x' at 0x100004 is not 16-byte aligned");
  auto o = outs();
  o[0].data = address(kX + 16); // inside x
  EXPECT_EQ(argument_error(args(), o), "fusion 'bn_chain': output 'y' overlaps input 'x' in memory (written "
                                       "tensors must not alias other tensors)");
  a = args();
  a[2].data = address(kW + 64); // state inside w
  EXPECT_EQ(argument_error(a, outs()), "fusion 'bn_chain': state 'mean' overlaps param 'w' in memory (written "
                                       "tensors must not alias other tensors)");
  o = outs();
  o[1].data = address(kY + 16);
  EXPECT_NE(argument_error(args(), o).find("output 'y' overlaps output 'z'"), std::string::npos);
}

TEST_F(ApiTest, HugeTensorsAreFineUntilTheyOverflow) {
  // 2^31 and more elements are valid shapes (kernels index with 64 bits).
  auto a = args(int64_t{1} << 27);
  auto o = outs(int64_t{1} << 27);
  o[0].data = address(uintptr_t{1} << 40);
  o[1].data = address(uintptr_t{1} << 41);
  a[0].data = address(uintptr_t{1} << 42);
  ErrorKind kind = ErrorKind::Io;
  std::string message = error_of([&] { f_.call(a, o); }, &kind);
  // It reaches the driver: no driver here, or (on a GPU) the driver says the
  // fake pointers are not CUDA memory.
  EXPECT_TRUE(kind != ErrorKind::Argument || message.find("is not CUDA memory") != std::string::npos) << message;
  auto huge = args(int64_t{1} << 61);
  EXPECT_NE(argument_error(huge, outs(int64_t{1} << 61)).find("too large"), std::string::npos);
}

TEST_F(ApiTest, ZeroSizeCallsReturnWithoutLaunching) {
  // No driver is needed: nothing is launched.
  Function f = rt_.load_string(testing::kElementwiseSpec, "act.fg").function("scale_relu");
  f.call({{"x", address(kX), {0, 64}}, {"s", address(kW), {64}}}, {{"y", address(kY), {0, 64}}});
  f.call({{"x", nullptr, {0, 64}}, {"s", address(kW), {64}}}, {{"y", nullptr, {0, 64}}}); // empty may be null
  EXPECT_EQ(rt_.stats().calls, 0u);
  f.prepare({{"N", 0}});
  // A state tensor would not be updated: refused rather than silently skipped.
  EXPECT_EQ(argument_error(args(0), outs(0)), "fusion 'bn_chain': a tensor has zero elements but an output or "
                                              "state tensor does not; such calls are not supported");
}

TEST_F(ApiTest, PrepareChecksDims) {
  ErrorKind kind = ErrorKind::Io;
  EXPECT_NE(error_of([&] { f_.prepare({}); }, &kind).find("needs a value for dim N"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::Argument);
  EXPECT_NE(error_of([&] { f_.prepare({{"N", 1}, {"Q", 2}}); }).find("has no dim named Q"), std::string::npos);
}

// Without a driver a valid call fails cleanly as NoDriver; with one this test
// has nothing to show (the fake pointers are then rejected by the driver).
TEST_F(ApiTest, NoDriverIsAnErrorNotACrash) {
  ErrorKind kind = ErrorKind::Io;
  std::string message = error_of([&] { (void)rt_.device_name(); }, &kind);
  if (message == "(no error)")
    GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(kind, ErrorKind::NoDriver);
  EXPECT_EQ(error_of([&] { f_.call(args(), outs()); }, &kind), message);
  EXPECT_EQ(kind, ErrorKind::NoDriver);
  EXPECT_TRUE(message.rfind("no CUDA driver", 0) == 0 || message.rfind("no CUDA device", 0) == 0) << message;
}

} // namespace
} // namespace fusegen
