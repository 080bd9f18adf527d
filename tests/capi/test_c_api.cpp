// The C API: statuses and messages for every kind of misuse and bad input,
// introspection and output shapes, all without a GPU.
#include "fusegen.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

extern "C" int fusegen_header_is_c(void);

namespace {

constexpr const char* kSpec = R"(fusion pool_scale {
  input  x : f32[N, 4, 8, 8]
  param  s : f32[4, 1, 1]
  state  count : f32[1]
  h = max_pool2d(x, kernel_size=2)
  output y = h * s
  output z = relu(h)
}
)";

struct Handles {
  fusegen_runtime* rt = nullptr;
  fusegen_program* prog = nullptr;
  fusegen_function* fn = nullptr;
  ~Handles() {
    // Any order: each handle keeps what it needs alive.
    fusegen_runtime_destroy(rt);
    fusegen_function_destroy(fn);
    fusegen_program_destroy(prog);
  }
};

void open(Handles& h, const char* text = kSpec, const char* fusion = "pool_scale") {
  ASSERT_EQ(fusegen_runtime_create(0, nullptr, &h.rt), FUSEGEN_OK) << fusegen_last_error();
  ASSERT_EQ(fusegen_program_load_string(h.rt, text, "spec.fg", &h.prog), FUSEGEN_OK) << fusegen_last_error();
  ASSERT_EQ(fusegen_program_function(h.prog, fusion, &h.fn), FUSEGEN_OK) << fusegen_last_error();
}

fusegen_tensor tensor(const char* name, void* data, const std::vector<int64_t>& shape) {
  return {name, data, shape.data(), static_cast<int32_t>(shape.size()), FUSEGEN_FLOAT32};
}

TEST(CApi, VersionsAndStatusNames) {
  EXPECT_STREQ(fusegen_version(), FUSEGEN_VERSION);
  EXPECT_EQ(fusegen_c_api_version(), FUSEGEN_C_API_VERSION);
  EXPECT_STREQ(fusegen_status_name(FUSEGEN_ERROR_ARGUMENT), "argument");
  EXPECT_STREQ(fusegen_status_name(FUSEGEN_ERROR_NO_DRIVER), "no-driver");
  EXPECT_STREQ(fusegen_status_name(1234), "unknown");
  EXPECT_EQ(fusegen_header_is_c(), 1);
}

TEST(CApi, NullHandlesAndOutPointersAreInvalidNotCrashes) {
  fusegen_program* prog = nullptr;
  fusegen_function* fn = nullptr;
  EXPECT_EQ(fusegen_runtime_create(0, nullptr, nullptr), FUSEGEN_ERROR_INVALID);
  EXPECT_NE(std::string(fusegen_last_error()).find("out is NULL"), std::string::npos);
  EXPECT_EQ(fusegen_runtime_create(-1, nullptr, (fusegen_runtime**)&prog), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_program_load_string(nullptr, "x", nullptr, &prog), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(prog, nullptr);
  EXPECT_EQ(fusegen_program_function(nullptr, "f", &fn), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_function_call(nullptr, nullptr, 0, nullptr, 0, nullptr), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_program_function_count(nullptr), -1);
  EXPECT_EQ(fusegen_program_function_name(nullptr, 0), nullptr);
  EXPECT_EQ(fusegen_function_tensor_count(nullptr), -1);
  EXPECT_EQ(fusegen_function_signature(nullptr), nullptr);
  EXPECT_STREQ(fusegen_runtime_cache_dir(nullptr), "");
  fusegen_stats stats;
  EXPECT_EQ(fusegen_runtime_stats(nullptr, &stats), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_runtime_tuning_count(nullptr), -1);
  fusegen_tuning tuning;
  EXPECT_EQ(fusegen_runtime_tuning(nullptr, 0, &tuning), FUSEGEN_ERROR_INVALID);
  fusegen_runtime_destroy(nullptr);
  fusegen_program_destroy(nullptr);
  fusegen_function_destroy(nullptr);
}

// A runtime that tuned nothing lists no tunings; indexes past the end and a
// NULL out-pointer are misuse (the tunings themselves: tests/python and the
// fake-driver tests).
TEST(CApi, TuningsOfAFreshRuntime) {
  fusegen_runtime* rt = nullptr;
  ASSERT_EQ(fusegen_runtime_create(0, nullptr, &rt), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_tuning_count(rt), 0);
  fusegen_tuning tuning;
  EXPECT_EQ(fusegen_runtime_tuning(rt, 0, &tuning), FUSEGEN_ERROR_INVALID);
  EXPECT_NE(std::string(fusegen_last_error()).find("tuning index 0 is out of range"), std::string::npos)
      << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_tuning(rt, -1, &tuning), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_runtime_tuning(rt, 0, nullptr), FUSEGEN_ERROR_INVALID);
  fusegen_runtime_destroy(rt);
}

TEST(CApi, BadOptionsAreInvalid) {
  fusegen_runtime_options options;
  fusegen_runtime_options_init(&options);
  options.precision = 7;
  fusegen_runtime* rt = nullptr;
  EXPECT_EQ(fusegen_runtime_create(0, &options, &rt), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(fusegen_last_error()).find("precision 7"), std::string::npos);
}

TEST(CApi, SpecErrorsCarryFileLineColumn) {
  fusegen_runtime* rt = nullptr;
  ASSERT_EQ(fusegen_runtime_create(0, nullptr, &rt), FUSEGEN_OK);
  fusegen_program* prog = nullptr;
  EXPECT_EQ(fusegen_program_load_string(rt, "fusion f {\n  input x : f32[4]\n  output y = frobnicate(x)\n}\n",
                                        "bad.fg", &prog),
            FUSEGEN_ERROR_SPEC);
  EXPECT_EQ(prog, nullptr);
  EXPECT_NE(std::string(fusegen_last_error()).find("bad.fg:3:14"), std::string::npos) << fusegen_last_error();
  EXPECT_EQ(fusegen_program_load_file(rt, "/nonexistent/spec.fg", &prog), FUSEGEN_ERROR_IO);
  EXPECT_NE(std::string(fusegen_last_error()).find("no such file"), std::string::npos);
  fusegen_runtime_destroy(rt);
}

TEST(CApi, SuccessClearsTheLastError) {
  Handles h;
  open(h);
  fusegen_function* missing = nullptr;
  EXPECT_EQ(fusegen_program_function(h.prog, "nope", &missing), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("it has: pool_scale"), std::string::npos);
  fusegen_stats stats;
  EXPECT_EQ(fusegen_runtime_stats(h.rt, &stats), FUSEGEN_OK);
  EXPECT_STREQ(fusegen_last_error(), "");
}

TEST(CApi, LastErrorIsPerThread) {
  Handles h;
  open(h);
  fusegen_function* missing = nullptr;
  EXPECT_EQ(fusegen_program_function(h.prog, "nope", &missing), FUSEGEN_ERROR_ARGUMENT);
  std::string other;
  std::thread([&] { other = fusegen_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(fusegen_last_error()), "");
}

TEST(CApi, ProgramAndFunctionIntrospection) {
  Handles h;
  open(h);
  EXPECT_EQ(fusegen_program_function_count(h.prog), 1);
  EXPECT_STREQ(fusegen_program_function_name(h.prog, 0), "pool_scale");
  EXPECT_EQ(fusegen_program_function_name(h.prog, 1), nullptr);
  EXPECT_STREQ(fusegen_function_name(h.fn), "pool_scale");
  EXPECT_STREQ(fusegen_function_signature(h.fn), "pool_scale(x: f32[N, 4, 8, 8], s: f32[4, 1, 1], count: f32[1]) -> "
                                                 "(y: f32[N, 4, 4, 4], z: f32[N, 4, 4, 4])");
  ASSERT_EQ(fusegen_function_tensor_count(h.fn), 5);
  const char* names[] = {"x", "s", "count", "y", "z"};
  int32_t kinds[] = {FUSEGEN_TENSOR_INPUT, FUSEGEN_TENSOR_PARAM, FUSEGEN_TENSOR_STATE, FUSEGEN_TENSOR_OUTPUT,
                     FUSEGEN_TENSOR_OUTPUT};
  for (int32_t i = 0; i < 5; ++i) {
    fusegen_tensor_info info;
    ASSERT_EQ(fusegen_function_tensor_info(h.fn, i, &info), FUSEGEN_OK);
    EXPECT_STREQ(info.name, names[i]);
    EXPECT_EQ(info.kind, kinds[i]);
  }
  fusegen_tensor_info x;
  ASSERT_EQ(fusegen_function_tensor_info(h.fn, 0, &x), FUSEGEN_OK);
  ASSERT_EQ(x.rank, 4);
  EXPECT_STREQ(x.dims[0], "N");
  EXPECT_STREQ(x.dims[3], "8");
  EXPECT_EQ(fusegen_function_tensor_info(h.fn, 5, &x), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_function_tensor_info(h.fn, -1, &x), FUSEGEN_ERROR_INVALID);
}

TEST(CApi, OutputShapesFollowTheArguments) {
  Handles h;
  open(h);
  std::vector<int64_t> xs{3, 4, 8, 8}, ss{4, 1, 1}, cs{1};
  fusegen_tensor args[] = {tensor("x", nullptr, xs), tensor("s", nullptr, ss), tensor("count", nullptr, cs)};
  int64_t shapes[8] = {};
  ASSERT_EQ(fusegen_function_output_shapes(h.fn, args, 3, shapes, 8), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(std::vector<int64_t>(shapes, shapes + 8), (std::vector<int64_t>{3, 4, 4, 4, 3, 4, 4, 4}));
  EXPECT_EQ(fusegen_function_output_shapes(h.fn, args, 3, shapes, 7), FUSEGEN_ERROR_INVALID);
  std::vector<int64_t> wrong{3, 5, 8, 8};
  args[0] = tensor("x", nullptr, wrong);
  EXPECT_EQ(fusegen_function_output_shapes(h.fn, args, 3, shapes, 8), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("'x'"), std::string::npos) << fusegen_last_error();
}

// Bound calls: misuse is Invalid; tensors that do not fit bind without
// loading and each launch fails as fusegen_function_call does.
TEST(CApi, BoundCallsCheckAsCallsDo) {
  Handles h;
  open(h);
  alignas(16) static float memory[4096];
  std::vector<int64_t> xs{2, 4, 8, 8}, ss{4, 1, 1}, cs{1}, ys{2, 4, 4, 4}, wrong{2, 5, 8, 8};
  fusegen_tensor args[] = {tensor("x", nullptr, wrong), tensor("s", nullptr, ss), tensor("count", nullptr, cs)};
  fusegen_tensor outs[] = {tensor("y", nullptr, ys), tensor("z", nullptr, ys)};
  fusegen_bound_call* bound = nullptr;
  EXPECT_EQ(fusegen_function_bind(h.fn, args, 3, outs, 2, nullptr), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_function_bind(nullptr, args, 3, outs, 2, &bound), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(bound, nullptr);
  EXPECT_EQ(fusegen_function_bind(h.fn, nullptr, 3, outs, 2, &bound), FUSEGEN_ERROR_INVALID);
  fusegen_tensor typed[] = {args[0], args[1], args[2]};
  typed[1].dtype = 3;
  EXPECT_EQ(fusegen_function_bind(h.fn, typed, 3, outs, 2, &bound), FUSEGEN_ERROR_ARGUMENT); // as a call
  EXPECT_NE(std::string(fusegen_last_error()).find("float32"), std::string::npos);

  ASSERT_EQ(fusegen_function_bind(h.fn, args, 3, outs, 2, &bound), FUSEGEN_OK) << fusegen_last_error();
  const void* data[] = {memory, memory + 1024, memory + 1040};
  const void* out_data[] = {memory + 2048, memory + 3072};
  for (int i = 0; i < 3; ++i)
    args[i].data = const_cast<void*>(data[i]);
  for (int i = 0; i < 2; ++i)
    outs[i].data = const_cast<void*>(out_data[i]);
  EXPECT_EQ(fusegen_function_call(h.fn, args, 3, outs, 2, nullptr), FUSEGEN_ERROR_ARGUMENT);
  const std::string by_call = fusegen_last_error();
  EXPECT_NE(by_call.find("'x'"), std::string::npos) << by_call;
  EXPECT_EQ(fusegen_bound_call_launch(bound, data, out_data, nullptr), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_EQ(fusegen_last_error(), by_call);
  EXPECT_EQ(fusegen_bound_call_launch(nullptr, data, out_data, nullptr), FUSEGEN_ERROR_INVALID);
  EXPECT_EQ(fusegen_bound_call_launch(bound, nullptr, out_data, nullptr), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("arguments array is null"), std::string::npos);
  fusegen_bound_call_destroy(bound);
  fusegen_bound_call_destroy(nullptr);

  // Tensors that fit: binding loads the kernels, which needs the driver.
  args[0] = tensor("x", nullptr, xs);
  bound = nullptr;
  fusegen_status status = fusegen_function_bind(h.fn, args, 3, outs, 2, &bound);
  EXPECT_TRUE(status == FUSEGEN_ERROR_NO_DRIVER || status == FUSEGEN_OK) << fusegen_last_error();
  fusegen_bound_call_destroy(bound);
}

TEST(CApi, BadCallsAreRejectedBeforeTheDriver) {
  Handles h;
  open(h);
  alignas(16) static float memory[4096];
  std::vector<int64_t> xs{2, 4, 8, 8}, ss{4, 1, 1}, cs{1}, ys{2, 4, 4, 4};
  fusegen_tensor args[] = {tensor("x", memory, xs), tensor("s", memory + 1024, ss),
                           tensor("count", memory + 1040, cs)};
  fusegen_tensor outs[] = {tensor("y", memory + 2048, ys), tensor("z", memory + 3072, ys)};

  // Missing tensor, unknown output, wrong dtype, misaligned, null arrays.
  EXPECT_EQ(fusegen_function_call(h.fn, args, 2, outs, 2, nullptr), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("count"), std::string::npos) << fusegen_last_error();
  fusegen_tensor bad_out[] = {outs[0], tensor("w", memory + 3072, ys)};
  EXPECT_EQ(fusegen_function_call(h.fn, args, 3, bad_out, 2, nullptr), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("unknown output 'w'"), std::string::npos);
  fusegen_tensor typed[] = {args[0], args[1], args[2]};
  typed[1].dtype = 3;
  EXPECT_EQ(fusegen_function_call(h.fn, typed, 3, outs, 2, nullptr), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("float32"), std::string::npos);
  fusegen_tensor misaligned[] = {tensor("x", memory + 1, xs), args[1], args[2]};
  EXPECT_EQ(fusegen_function_call(h.fn, misaligned, 3, outs, 2, nullptr), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("aligned"), std::string::npos);
  EXPECT_EQ(fusegen_function_call(h.fn, nullptr, 3, outs, 2, nullptr), FUSEGEN_ERROR_INVALID);
  fusegen_tensor unnamed[] = {args[0], args[1], args[2]};
  unnamed[0].name = nullptr;
  EXPECT_EQ(fusegen_function_call(h.fn, unnamed, 3, outs, 2, nullptr), FUSEGEN_ERROR_INVALID);
  fusegen_tensor shapeless[] = {args[0], args[1], args[2]};
  shapeless[0].shape = nullptr;
  EXPECT_EQ(fusegen_function_call(h.fn, shapeless, 3, outs, 2, nullptr), FUSEGEN_ERROR_INVALID);

  // A call that passes every check needs the driver; on a machine without
  // one it says so (with one, host memory is refused as not device memory).
  fusegen_status status = fusegen_function_call(h.fn, args, 3, outs, 2, nullptr);
  EXPECT_TRUE(status == FUSEGEN_ERROR_NO_DRIVER || status == FUSEGEN_ERROR_ARGUMENT)
      << fusegen_status_name(status) << ": " << fusegen_last_error();
}

// fusegen_runtime_stream_wait: the same stream (NULL and CU_STREAM_LEGACY are
// one) needs nothing, not even the device, so it succeeds on a runtime of a
// device that no machine has; other streams need that device. The waits
// themselves are checked on the fake driver (tests/runtime/fake_driver, and
// python_package through the Python package).
TEST(CApi, StreamWaitNeedsNothingForTheSameStream) {
  EXPECT_EQ(fusegen_runtime_stream_wait(nullptr, nullptr, nullptr), FUSEGEN_ERROR_INVALID);
  fusegen_runtime* rt = nullptr;
  ASSERT_EQ(fusegen_runtime_create(1000, nullptr, &rt), FUSEGEN_OK) << fusegen_last_error();
  void* legacy = reinterpret_cast<void*>(uintptr_t{1});
  void* per_thread = reinterpret_cast<void*>(uintptr_t{2});
  void* stream = reinterpret_cast<void*>(uintptr_t{0x5000});
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, nullptr, nullptr), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, nullptr, legacy), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, legacy, nullptr), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, per_thread, per_thread), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, stream, stream), FUSEGEN_OK) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, nullptr, per_thread), FUSEGEN_ERROR_NO_DRIVER);
  EXPECT_NE(std::string(fusegen_last_error()).find("no CUDA"), std::string::npos) << fusegen_last_error();
  EXPECT_EQ(fusegen_runtime_stream_wait(rt, stream, nullptr), FUSEGEN_ERROR_NO_DRIVER);
  fusegen_runtime_destroy(rt);
}

TEST(CApi, PrepareChecksDims) {
  Handles h;
  open(h);
  const char* names[] = {"N", "N"};
  int64_t values[] = {2, 3};
  EXPECT_EQ(fusegen_function_prepare(h.fn, names, values, 2), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_NE(std::string(fusegen_last_error()).find("given twice"), std::string::npos);
  const char* unknown[] = {"M"};
  EXPECT_EQ(fusegen_function_prepare(h.fn, unknown, values, 1), FUSEGEN_ERROR_ARGUMENT);
  EXPECT_EQ(fusegen_function_prepare(h.fn, nullptr, values, 1), FUSEGEN_ERROR_INVALID);
}

} // namespace
