// The runtime's launches against a fake libcuda (FakeCuda.h), so they are
// tested on machines without a GPU: the launch sequence matches the plan and
// the generated launcher (fills, grids, FusegenArgs), dependent launches,
// the quick path across shapes and contexts, sizes past 2^31 elements, zero
// sizes, output copies, and `fusegen run --device` end to end.
#include "FakeDriver.h"

namespace fusegen {
namespace {

// Every KernelBench chain: the launches are the plan's, with the arguments
// the generated host launcher would pass.
TEST_F(FakeDriver, LaunchesFollowThePlan) {
  for (const std::string& spec : testing::kernelbench_specs()) {
    SCOPED_TRACE(spec);
    reset_fake();
    auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
    ASSERT_TRUE(loaded);
    const int64_t n = 8;
    Fusion concrete = specialized(*loaded, n);
    runtime::GeneratedUnit unit =
        runtime::generate_unit(loaded->fusion(), {{"N", n}}, loaded->fusion().precision, 90, &loaded->sources);
    const LaunchPlan& plan = unit.launch;

    Runtime rt(0, options());
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    void* stream = reinterpret_cast<void*>(0x5000);
    reset_fake();
    f.call(t.args, t.outs, stream);

    std::vector<fakecuda::Launch> kernels = kernel_launches();
    ASSERT_EQ(kernels.size(), plan.kernels.size());
    size_t fills = 0;
    for (const auto& k : plan.kernels)
      fills += k.fills.size();
    EXPECT_EQ(g_fake->launches.size(), plan.kernels.size() + fills);
    unsigned long long workspace = 0;
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const KernelLaunchPlan& expected = plan.kernels[k];
      const fakecuda::Launch& got = kernels[k];
      EXPECT_EQ(got.kernel, expected.name);
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(got.grid[i], static_cast<unsigned>(expected.grid[static_cast<size_t>(i)]));
      EXPECT_EQ(got.block[0], static_cast<unsigned>(expected.block));
      EXPECT_EQ(got.shared_bytes, static_cast<unsigned>(expected.shared_bytes));
      EXPECT_EQ(got.stream, stream);
      FusegenArgsHost args = args_of(got);
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const BufferBinding& binding = plan.buffers[b];
        if (binding.role == BufferBinding::Role::Workspace)
          continue;
        const void* want = nullptr;
        for (const TensorArg& a : t.args)
          if (a.name == binding.name && binding.role == BufferBinding::Role::Argument)
            want = a.data;
        for (const TensorOut& o : t.outs)
          if (o.name == binding.name && binding.role == BufferBinding::Role::Output)
            want = o.data;
        EXPECT_EQ(args.buf[b], reinterpret_cast<uintptr_t>(want)) << "buffer " << binding.name;
      }
      for (const WorkspaceBinding& slot : plan.workspace) {
        unsigned long long base = args.buf[slot.buffer] - static_cast<unsigned long long>(slot.offset);
        if (workspace == 0)
          workspace = base;
        EXPECT_EQ(base, workspace) << "workspace buffer " << slot.buffer << " of kernel " << k;
      }
      for (size_t b = plan.buffers.size(); b < 32; ++b)
        EXPECT_EQ(args.buf[b], 0u);
    }
    if (plan.workspace_bytes > 0) {
      EXPECT_NE(workspace, 0u);
      EXPECT_EQ(workspace % 256, 0u);
    }
    // Fills run right before their kernel and write their buffer.
    size_t position = 0;
    for (const KernelLaunchPlan& k : plan.kernels) {
      for (const FillLaunch& fill : k.fills) {
        const fakecuda::Launch& l = g_fake->launches.at(position++);
        EXPECT_EQ(l.kernel, "fusegen_fill");
        EXPECT_EQ(l.stream, stream);
        EXPECT_EQ(l.block[0], 256u);
        EXPECT_GE(static_cast<long long>(l.grid[0]) * 256, fill.count);
      }
      EXPECT_EQ(g_fake->launches.at(position++).kernel, k.name);
    }
    // On sm_90 (the fake device) every launch after a call's first is a
    // programmatic dependent launch: it waits for the one before it on the GPU.
    for (size_t i = 0; i < g_fake->launches.size(); ++i)
      EXPECT_EQ(g_fake->launches[i].programmatic, i > 0) << "launch " << i << ": " << g_fake->launches[i].kernel;
    // The caller's thread has no context before or after.
    CUcontext current = reinterpret_cast<CUcontext>(0x1);
    runtime::driver().cuCtxGetCurrent(&current);
    EXPECT_EQ(current, nullptr);
    EXPECT_EQ(count_calls("cuCtxPushCurrent_v2"), count_calls("cuCtxPopCurrent_v2"));
  }
}

// Dependent launches need sm_90: on an sm_80 device every launch is an
// ordinary one; the next call's first launch is ordinary on sm_90 too.
TEST_F(FakeDriver, DependentLaunchesOnlyWithinACallOnSm90) {
  const std::string spec = "specs/kernelbench/75_gemm_groupnorm_min_biasadd.fg"; // a fill and two kernels
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  Fusion concrete = specialized(*loaded, 128);
  for (int major : {8, 9}) {
    SCOPED_TRACE("sm_" + std::to_string(major) + "0");
    reset_fake();
    g_fake->compute_major = major;
    testing::TempDir cache;
    RuntimeOptions o = options();
    o.cache_dir = cache.path();
    Runtime rt(0, o);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    f.call(t.args, t.outs, nullptr);
    f.call(t.args, t.outs, nullptr);
    const std::vector<fakecuda::Launch>& l = g_fake->launches;
    ASSERT_EQ(l.size(), 6u) << "fill, GEMM, bias add, twice";
    for (size_t i = 0; i < l.size(); ++i)
      EXPECT_EQ(l[i].programmatic, major >= 9 && i % 3 != 0) << "launch " << i << ": " << l[i].kernel;
  }
  EXPECT_EQ(log_.count(), 0u);
}

TEST_F(FakeDriver, SecondCallOnlyLaunches) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  Tensors t(rt, specialized(*loaded, 64));
  const int loads_before = g_fake->module_loads;
  f.call(t.args, t.outs);
  EXPECT_EQ(g_fake->module_loads, loads_before + 1);
  reset_fake();
  f.call(t.args, t.outs);
  EXPECT_EQ(count_calls("cuModuleLoadData"), 0u);
  EXPECT_EQ(count_calls("cuMemAlloc_v2"), 0u);
  EXPECT_EQ(count_calls("cuLaunchKernel"), 1u);
  EXPECT_EQ(rt.stats().compiles, 1u);
  EXPECT_EQ(rt.stats().memory_hits, 1u);
  EXPECT_EQ(rt.stats().calls, 2u);
}

// The quick path keeps the last loaded fusion per function: alternating
// shapes, another context and the TensorRef overload all launch the right
// kernels on the right tensors, and loads happen once per (dims, context).
TEST_F(FakeDriver, AlternatingShapesAndContexts) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  struct {
    int device = 0; // the fake's context: the device it is on
  } user_context;   // outlives the runtime, whose modules unload in it
  const auto other = reinterpret_cast<CUcontext>(&user_context);
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  const int loads = g_fake->module_loads; // counted over the process
  Tensors small(rt, specialized(*loaded, 16)), large(rt, specialized(*loaded, 48));
  auto launched_on = [&](const Tensors& t) {
    std::vector<fakecuda::Launch> launches = kernel_launches();
    ASSERT_FALSE(launches.empty());
    FusegenArgsHost args = args_of(launches.back());
    std::set<unsigned long long> given;
    for (const TensorArg& a : t.args)
      given.insert(reinterpret_cast<uintptr_t>(a.data));
    for (const TensorOut& o : t.outs)
      given.insert(reinterpret_cast<uintptr_t>(o.data));
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(given.count(args.buf[i])) << "buffer " << i;
  };
  for (int round = 0; round < 3; ++round) {
    f.call(small.args, small.outs);
    launched_on(small);
    f.call(large.args, large.outs);
    launched_on(large);
  }
  EXPECT_EQ(g_fake->module_loads, loads + 2);
  EXPECT_EQ(rt.stats().compiles, 2u);
  EXPECT_EQ(rt.stats().calls, 6u);
  EXPECT_EQ(rt.stats().memory_hits, 4u);

  // By reference, in another order.
  std::vector<TensorRef> args, outs;
  for (auto it = small.args.rbegin(); it != small.args.rend(); ++it)
    args.push_back({it->name, it->data, it->shape.data(), it->shape.size()});
  for (const TensorOut& o : small.outs)
    outs.push_back({o.name, o.data, o.shape.data(), o.shape.size()});
  f.call(args.data(), args.size(), outs.data(), outs.size());
  launched_on(small);
  EXPECT_EQ(rt.stats().memory_hits, 5u);

  // In a context of the caller's: loaded again there, and the primary
  // context's module is not taken for it.
  const runtime::DriverApi& api = runtime::driver();
  ASSERT_EQ(api.cuCtxPushCurrent_v2(other), CUDA_SUCCESS);
  f.call(small.args, small.outs);
  EXPECT_EQ(g_fake->module_loads, loads + 3);
  EXPECT_EQ(kernel_launches().back().context, static_cast<void*>(other));
  f.call(small.args, small.outs);
  EXPECT_EQ(g_fake->module_loads, loads + 3);
  CUcontext popped = nullptr;
  ASSERT_EQ(api.cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  f.call(small.args, small.outs);
  EXPECT_NE(kernel_launches().back().context, static_cast<void*>(other));
  EXPECT_EQ(g_fake->module_loads, loads + 3);
  EXPECT_EQ(rt.stats().calls, 10u);
}

// Past 2^31 elements. The generated code bakes sizes in as 64-bit constants
// and indexes with long long (templates/*.cu, codegen's EmitContext), and
// grids are grid-stride loops with capped block counts, so such calls are
// launched, not refused. (Whether the results are right at that size is for
// a GPU to check; here the launch is.) (Pointer checks are off: the fake cannot allocate
// 8 GiB; the addresses are never dereferenced.)
TEST_F(FakeDriver, PastTwoToThe31ElementsIsLaunched) {
  RuntimeOptions o = options();
  o.check_pointers = false;
  Runtime rt(0, o);
  auto* x = reinterpret_cast<void*>(uintptr_t{1} << 40);
  auto* s = reinterpret_cast<void*>(uintptr_t{2} << 40);
  auto* y = reinterpret_cast<void*>(uintptr_t{3} << 40);
  const int64_t n = (int64_t{1} << 25) + 1; // x and y: 2^31 + 64 elements
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  runtime::GeneratedUnit unit =
      runtime::generate_unit(loaded->fusion(), {{"N", n}}, Precision::Strict, 90, &loaded->sources);
  EXPECT_NE(unit.source.find("2147483712LL"), std::string::npos); // numel, as a 64-bit constant
  reset_fake();
  rt.load_string(testing::kElementwiseSpec)
      .function("scale_relu")
      .call({{"x", x, {n, 64}}, {"s", s, {64}}}, {{"y", y, {n, 64}}});
  std::vector<fakecuda::Launch> kernels = kernel_launches();
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_LE(kernels[0].grid[0], 65536u);
  FusegenArgsHost args = args_of(kernels[0]);
  EXPECT_NE(std::find(std::begin(args.buf), std::end(args.buf), reinterpret_cast<uintptr_t>(x)), std::end(args.buf));

  // A GEMM chain: x is [N, 512], so 2^31 + 512 elements; its row tiles need
  // more than 65535 blocks along y, which the plan caps (the kernel loops).
  const std::string spec = "specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  auto gemm = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  const int64_t rows = (int64_t{1} << 22) + 1;
  std::vector<TensorArg> gemm_args;
  uintptr_t next = uintptr_t{8} << 40;
  for (ValueId id : gemm->fusion().arguments) {
    std::vector<int64_t> shape;
    for (const Dim& d : gemm->fusion().value(id).type.shape)
      shape.push_back(d.is_constant() ? d.value() : rows);
    gemm_args.push_back({gemm->fusion().value(id).name, reinterpret_cast<void*>(next += uintptr_t{1} << 40), shape});
  }
  reset_fake();
  rt.load_file(testing::source_path(spec))
      .function(gemm->fusion().name)
      .call(gemm_args, {{"y", reinterpret_cast<void*>(uintptr_t{1} << 46), {rows, 256}}});
  kernels = kernel_launches();
  // The weight split once (so many rows), then 32769 x 2 blocks of 128x128:
  // 496 waves of 132 and 66 blocks, which a split tail takes (clusters of 2).
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].kernel, "fusegen_matmul_groupnorm_leakyrelu_sum_k0_split_b");
  EXPECT_EQ(kernels[1].kernel, "fusegen_matmul_groupnorm_leakyrelu_sum_k0");
  EXPECT_LE(kernels[1].grid[1], 65535u);
  EXPECT_EQ(kernels[2].kernel, "fusegen_matmul_groupnorm_leakyrelu_sum_k0_tail");
  EXPECT_EQ(kernels[2].grid[0], 132u);
  EXPECT_EQ(kernels[2].grid[1], 1u);
  EXPECT_TRUE(kernels[2].programmatic);
}

TEST_F(FakeDriver, ZeroSizeCallsTouchNothing) {
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  DeviceBuffer s = rt.allocate(64 * 4);
  reset_fake();
  f.call({{"x", nullptr, {0, 64}}, {"s", s.data(), {64}}}, {{"y", nullptr, {0, 64}}});
  EXPECT_TRUE(g_fake->calls.empty());
}

// Outputs without a buffer of their own (an argument, or another output's
// value) are copied after the kernels.
TEST_F(FakeDriver, OutputsSharingAValueAreCopied) {
  const char* spec = "fusion idy {\n  input x : f32[N, 4]\n  h = relu(x)\n  output y = x\n  output a = h\n"
                     "  output b = h\n}\n";
  auto loaded = testing::load_module(spec);
  Runtime rt(0, options());
  Function f = rt.load_string(spec).function("idy");
  Tensors t(rt, specialized(*loaded, 2));
  std::vector<float> x = {1, -2, 3, -4, 5, -6, 7, -8};
  rt.copy_to_device(t.memory[0].data(), x.data(), 32);
  std::vector<float> a = {9, 9, 9, 9, 9, 9, 9, 9}; // stands in for the kernel's result
  rt.copy_to_device(t.outs[1].data, a.data(), 32);
  f.call(t.args, t.outs);
  std::vector<float> y(8), b(8);
  rt.copy_to_host(y.data(), t.outs[0].data, 32);
  rt.copy_to_host(b.data(), t.outs[2].data, 32);
  EXPECT_EQ(y, x);
  EXPECT_EQ(b, a);
  EXPECT_EQ(count_calls("cuMemcpyDtoDAsync_v2"), 2u);
}

// `fusegen run --device --compare` end to end on the fake: the pipeline runs,
// and since no kernel really runs the NaN-poisoned outputs fail the compare.
TEST_F(FakeDriver, CliDeviceRunWithPoisonedOutputs) {
  std::string spec = testing::source_path("specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg");
  testing::CommandResult run = testing::run_command(
      "env -u FUSEGEN_CACHE LD_LIBRARY_PATH='" FUSEGEN_FAKE_CUDA_DIR "' FUSEGEN_CACHE_DIR='" + cache_.path() + "' '" +
      testing::cli_path() + "' run '" + spec + "' --device --dims N=16 --compare");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("on Fake GPU (sm_90, driver 12040)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("kernels: 1 compiled, 0 from the disk cache"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("compare output y: max_abs_err=0 max_rel_err=0 mismatches=4096/4096"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("result: FAIL"), std::string::npos) << run.output;
}

} // namespace
} // namespace fusegen
