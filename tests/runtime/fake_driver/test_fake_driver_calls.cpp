// Calls against the fake libcuda: bound calls launch as calls do, TensorRef
// misuse, workspaces per stream and thread, pointer checks, and bad calls
// refused before anything reaches the GPU.
#include "FakeDriver.h"

namespace fusegen {
namespace {

// A bound call launches what call() launches, with the same checks and
// messages: bound in another order than the signature's, across contexts,
// with bad pointers, with shapes that do not fit, and at zero size.
TEST_F(FakeDriver, BoundCallsLaunchAsCallsDo) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  Tensors t(rt, specialized(*loaded, 64)); // x: [64, 64], s: [64], y: [64, 64]
  auto refs = [](const auto& tensors) {
    std::vector<TensorRef> out;
    for (const auto& tensor : tensors)
      out.push_back({tensor.name, tensor.data, tensor.shape.data(), tensor.shape.size()});
    return out;
  };
  std::vector<TensorRef> args = refs(t.args), outs = refs(t.outs);
  std::swap(args[0], args[1]); // s, x
  const auto message = testing::thrown_message;

  const int loads = g_fake->module_loads;
  BoundCall bound = f.bind(args.data(), args.size(), outs.data(), outs.size());
  EXPECT_EQ(g_fake->module_loads, loads + 1);
  EXPECT_EQ(bound.argument_count(), 2u);
  EXPECT_EQ(bound.output_count(), 1u);
  f.call(t.args, t.outs);
  const std::vector<unsigned char> by_call = kernel_launches().back().params;
  reset_fake();
  const void* data[] = {t.args[1].data, t.args[0].data};
  const void* out_data[] = {t.outs[0].data};
  bound.launch(data, out_data);
  ASSERT_EQ(kernel_launches().size(), 1u);
  EXPECT_EQ(kernel_launches()[0].params, by_call);
  EXPECT_EQ(count_calls("cuModuleLoadData"), 0u);
  EXPECT_EQ(count_calls("cuPointerGetAttributes"), 3u); // the pointer checks, as call() makes them
  EXPECT_EQ(rt.stats().calls, 2u);

  // New tensors of the same shapes.
  Tensors other(rt, specialized(*loaded, 64));
  const void* other_data[] = {other.args[1].data, other.args[0].data};
  const void* other_out[] = {other.outs[0].data};
  bound.launch(other_data, other_out);
  FusegenArgsHost launched = args_of(kernel_launches().back());
  std::set<unsigned long long> given;
  for (const void* p : {other_data[0], other_data[1], other_out[0]})
    given.insert(reinterpret_cast<uintptr_t>(p));
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(given.count(launched.buf[i])) << "buffer " << i;

  // Pointers call() refuses: the same messages, nothing launched.
  alignas(16) static float host[64 * 64];
  auto refused = [&](const void* x, const void* s, const void* y) {
    const void* bound_data[] = {s, x};
    const void* bound_out[] = {y};
    std::string by_bound = message([&] { bound.launch(bound_data, bound_out); });
    std::string called = message([&] {
      f.call({{"x", x, {64, 64}}, {"s", s, {64}}}, {{"y", const_cast<void*>(y), {64, 64}}});
    });
    EXPECT_EQ(by_bound, called);
    return by_bound;
  };
  const size_t launches = kernel_launches().size();
  EXPECT_EQ(refused(nullptr, t.args[1].data, t.outs[0].data), "fusion 'scale_relu': tensor 'x' is a null pointer");
  EXPECT_NE(refused(static_cast<const char*>(t.args[0].data) + 4, t.args[1].data, t.outs[0].data).find("aligned"),
            std::string::npos);
  EXPECT_NE(refused(t.args[0].data, t.args[1].data, t.args[0].data).find("overlap"), std::string::npos);
  EXPECT_NE(refused(host, t.args[1].data, t.outs[0].data).find("is not CUDA memory"), std::string::npos);
  EXPECT_EQ(kernel_launches().size(), launches);
  EXPECT_EQ(message([&] { bound.launch(nullptr, out_data); }),
            "fusion 'scale_relu': a bound call's arguments array is null");
  EXPECT_EQ(message([&] { BoundCall().launch(data, out_data); }), "launch of a BoundCall that no Function::bind made");

  // In a context of the caller's: call()'s path, which loads the kernels there.
  struct {
    int device = 0; // the fake's context: the device it is on
  } user_context;   // outlives the runtime, whose modules unload in it
  const auto context = reinterpret_cast<CUcontext>(&user_context);
  const runtime::DriverApi& api = runtime::driver();
  ASSERT_EQ(api.cuCtxPushCurrent_v2(context), CUDA_SUCCESS);
  const int loads_in_primary = g_fake->module_loads;
  bound.launch(data, out_data);
  EXPECT_EQ(kernel_launches().back().context, static_cast<void*>(context));
  EXPECT_EQ(g_fake->module_loads, loads_in_primary + 1); // not the primary context's module
  CUcontext popped = nullptr;
  ASSERT_EQ(api.cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  bound.launch(data, out_data);
  EXPECT_NE(kernel_launches().back().context, static_cast<void*>(context));

  // Shapes that do not fit: bound without loading; each launch says what call() says.
  const int64_t wide[] = {64, 65};
  std::vector<TensorRef> unfit = args;
  unfit[1].shape = wide;
  const int loads_before = g_fake->module_loads;
  BoundCall wrong = f.bind(unfit.data(), unfit.size(), outs.data(), outs.size());
  EXPECT_EQ(g_fake->module_loads, loads_before);
  EXPECT_EQ(message([&] { wrong.launch(data, out_data); }),
            message([&] { f.call(unfit.data(), unfit.size(), outs.data(), outs.size()); }));
  EXPECT_NE(message([&] { wrong.launch(data, out_data); }).find("'x'"), std::string::npos);

  // Zero size: nothing launched, as with call().
  const int64_t empty[] = {0, 64};
  std::vector<TensorRef> none = refs(t.args), none_out = refs(t.outs);
  none[0].shape = empty;
  none_out[0].shape = empty;
  BoundCall zero = f.bind(none.data(), none.size(), none_out.data(), none_out.size());
  reset_fake();
  const void* zero_data[] = {nullptr, t.args[1].data};
  const void* zero_out[] = {nullptr};
  zero.launch(zero_data, zero_out);
  EXPECT_TRUE(kernel_launches().empty());
}

// Misuse of the TensorRef overload is an error naming the fusion.
TEST_F(FakeDriver, TensorRefMisuse) {
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  const int64_t shape[] = {4, 64};
  TensorRef x{"x", nullptr, nullptr, 2};
  auto message = [&](const std::function<void()>& call) {
    try {
      call();
    } catch (const RuntimeError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Argument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { f.call(nullptr, 2, nullptr, 0); }),
            "fusion 'scale_relu': 2 arguments given, but their array is null");
  EXPECT_EQ(message([&] { f.call(&x, 1, nullptr, 0); }), "fusion 'scale_relu': tensor 'x' has rank 2 but no shape");
  x.shape = shape;
  EXPECT_EQ(message([&] { f.call(&x, 1, nullptr, 0); }), "fusion 'scale_relu': missing tensor 's' (param [64])");
  EXPECT_EQ(count_calls("cuLaunchKernel"), 0u);
}

TEST_F(FakeDriver, WorkspacePerStreamAndThread) {
  const std::string spec = "specs/kernelbench/small/39_gemm_scale_batchnorm.fg"; // a workspace over 128 rows
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  runtime::GeneratedUnit unit =
      runtime::generate_unit(loaded->fusion(), {{"N", 256}}, Precision::Strict, 90, &loaded->sources);
  ASSERT_GT(unit.launch.workspace_bytes, 0);
  Runtime rt(0, options());
  Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
  Tensors t(rt, specialized(*loaded, 256));
  int before = g_fake->live_allocations;
  const size_t zeroed = count_calls("cuMemsetD8Async");
  auto* a = reinterpret_cast<void*>(0x1000);
  auto* b = reinterpret_cast<void*>(0x2000);
  f.call(t.args, t.outs, a);
  f.call(t.args, t.outs, a);
  EXPECT_EQ(g_fake->live_allocations, before + 1);
  // Each workspace is zeroed once, when it is allocated (arrival counters).
  EXPECT_EQ(count_calls("cuMemsetD8Async"), zeroed + 1);
  f.call(t.args, t.outs, b);
  EXPECT_EQ(g_fake->live_allocations, before + 2);
  EXPECT_EQ(count_calls("cuMemsetD8Async"), zeroed + 2);
  auto* per_thread = reinterpret_cast<void*>(0x2); // CU_STREAM_PER_THREAD
  std::thread([&] { f.call(t.args, t.outs, per_thread); }).join();
  std::thread([&] { f.call(t.args, t.outs, per_thread); }).join();
  EXPECT_EQ(g_fake->live_allocations, before + 4);
}

TEST_F(FakeDriver, PointerChecks) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  Tensors t(rt, specialized(*loaded, 64));
  auto error = [&](const std::vector<TensorArg>& args, const std::vector<TensorOut>& outs) {
    try {
      f.call(args, outs);
    } catch (const RuntimeError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Argument);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  alignas(16) static float host[64 * 64];
  auto args = t.args;
  args[0].data = host;
  EXPECT_NE(error(args, t.outs).find("tensor 'x' at 0x"), std::string::npos);
  EXPECT_NE(error(args, t.outs).find("is not CUDA memory"), std::string::npos);
  DeviceBuffer small = rt.allocate(64 * 4);
  args = t.args;
  args[0].data = small.data();
  EXPECT_NE(error(args, t.outs).find("extends past the end of its allocation (256 bytes at"), std::string::npos);
  EXPECT_EQ(error(t.args, t.outs), "(no error)");
  RuntimeOptions unchecked = options();
  unchecked.check_pointers = false;
  Runtime trusting(0, unchecked);
  args = t.args;
  args[0].data = host;
  EXPECT_NO_THROW(trusting.load_string(testing::kElementwiseSpec).function("scale_relu").call(args, t.outs));
}

// Every bad call is refused with an Argument error naming the tensor before
// anything reaches the GPU: nothing is compiled, loaded, allocated or
// launched. Then the good call works.
TEST_F(FakeDriver, BadCallsLaunchNothing) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  Function two = rt.load_string("fusion two {\n  input a : f32[N, 4]\n  input b : f32[N, 4]\n  output c = a + b\n}\n")
                     .function("two");
  Tensors t(rt, specialized(*loaded, 64)); // x: [64, 64], s: [64], y: [64, 64]
  DeviceBuffer elsewhere = rt.allocate(64 * 64 * 4);
  DeviceBuffer pinned = rt.allocate(64 * 64 * 4);
  DeviceBuffer small = rt.allocate(64 * 4);
  alignas(16) static float host[64 * 64];
  auto bytes_at = [](const void* p, uintptr_t offset) {
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) + offset);
  };

  struct Case {
    std::string what;
    std::function<void()> call;
    std::string error;
  };
  std::vector<Case> cases;
  auto with_args = [&](std::string what, std::function<void(std::vector<TensorArg>&)> change, std::string error) {
    std::vector<TensorArg> args = t.args;
    change(args);
    cases.push_back({std::move(what), [&f, &t, args] { f.call(args, t.outs); }, std::move(error)});
  };
  auto with_outs = [&](std::string what, std::function<void(std::vector<TensorOut>&)> change, std::string error) {
    std::vector<TensorOut> outs = t.outs;
    change(outs);
    cases.push_back({std::move(what), [&f, &t, outs] { f.call(t.args, outs); }, std::move(error)});
  };
  with_args(
      "missing tensor", [](auto& a) { a.pop_back(); }, "missing tensor 's'");
  with_args(
      "extra tensor",
      [&](auto& a) {
        a.push_back({"extra", small.data(), {64}});
      },
      "unknown tensor 'extra'");
  with_args(
      "wrong rank",
      [](auto& a) {
        a[0].shape = {64, 64, 1};
      },
      "tensor 'x' has rank 3");
  with_args(
      "wrong size", [](auto& a) { a[1].shape = {65}; }, "tensor 's' has shape [65] but the spec declares [64]");
  with_args(
      "null pointer", [](auto& a) { a[0].data = nullptr; }, "tensor 'x' is a null pointer");
  with_args(
      "misaligned", [&](auto& a) { a[0].data = bytes_at(a[0].data, 4); }, "is not 16-byte aligned");
  with_args(
      "host memory", [&](auto& a) { a[0].data = host; }, "is not CUDA memory");
  with_args(
      "pinned host memory", [&](auto& a) { a[0].data = pinned.data(); }, "is host memory, not device memory");
  with_args(
      "another device", [&](auto& a) { a[0].data = elsewhere.data(); },
      "is on device 1, but this runtime runs on device 0");
  with_args(
      "past its allocation", [&](auto& a) { a[0].data = small.data(); }, "extends past the end of its allocation");
  with_outs(
      "output of the wrong size",
      [](auto& o) {
        o[0].shape = {32, 64};
      },
      "output 'y' has shape [32, 64] but must be [64, 64]");
  with_outs(
      "output aliasing an input", [&](auto& o) { o[0].data = const_cast<void*>(t.args[0].data); },
      "output 'y' overlaps input 'x' in memory");
  with_outs(
      "output overlapping an input", [&](auto& o) { o[0].data = bytes_at(t.args[0].data, 256); },
      "output 'y' overlaps input 'x' in memory");
  with_outs(
      "output on another device", [&](auto& o) { o[0].data = elsewhere.data(); }, "is on device 1");
  cases.push_back({"dim bound two ways",
                   [&] {
                     two.call({{"a", t.memory[0].data(), {8, 4}}, {"b", t.memory[1].data(), {9, 4}}},
                              {{"c", t.memory[2].data(), {8, 4}}});
                   },
                   "dim N is bound two ways: 'a' gives 8 but 'b' gives 9"});

  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    reset_fake();
    g_fake->allocation_device[reinterpret_cast<uintptr_t>(elsewhere.data())] = 1;
    g_fake->allocation_device[reinterpret_cast<uintptr_t>(pinned.data())] = fakecuda::kHostMemory;
    std::string message = "(no error)";
    try {
      c.call();
    } catch (const RuntimeError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Argument) << e.what();
      message = e.what();
    }
    EXPECT_NE(message.find(c.error), std::string::npos) << message;
    EXPECT_EQ(count_calls("cuModuleLoadData"), 0u);
    EXPECT_EQ(count_calls("cuMemAlloc_v2"), 0u);
    EXPECT_EQ(count_calls("cuLaunchKernel"), 0u);
    EXPECT_EQ(count_calls("cuMemcpyDtoDAsync_v2"), 0u);
  }
  EXPECT_EQ(rt.stats().compiles, 0u);
  EXPECT_EQ(rt.stats().calls, 0u);
  reset_fake();
  f.call(t.args, t.outs);
  EXPECT_EQ(count_calls("cuLaunchKernel"), 1u);
}

} // namespace
} // namespace fusegen
