// The runtime's driver-API side against a fake libcuda (FakeCuda.h), so it is
// tested on machines without a GPU: the launch sequence matches the plan and
// the generated launcher (fills, grids, FusegenArgs), workspaces per stream,
// contexts left as found, pointer checks, driver errors naming the call,
// a cache entry the driver refuses, output copies, and every resource freed.
#include "FakeCuda.h"

#include "CacheEntry.h"
#include "DriverApi.h"
#include "Generate.h"
#include "LaunchPlan.h"

#include "support/TestSupport.h"

#include "fusegen/KernelLimits.h"
#include "fusegen/Runtime.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace fusegen {
namespace {

using testing::TempDir;
using testing::WarningLog;

fakecuda::State* g_fake = nullptr;
void (*g_reset)() = nullptr;
void reset_fake() { g_reset(); }

struct FusegenArgsHost {
  unsigned long long buf[kFusegenMaxBuffers];
  long long dim[kFusegenMaxDims];
};

FusegenArgsHost args_of(const fakecuda::Launch& launch) {
  FusegenArgsHost args{};
  EXPECT_EQ(launch.params.size(), sizeof args);
  std::memcpy(&args, launch.params.data(), std::min(sizeof args, launch.params.size()));
  return args;
}

class FakeDriver : public ::testing::Test {
protected:
  void SetUp() override {
    reset_fake();
    baseline_allocations_ = g_fake->live_allocations;
  }
  void TearDown() override {
    // Everything the runtimes of a test allocated is gone with them.
    EXPECT_EQ(g_fake->live_allocations, baseline_allocations_);
    EXPECT_EQ(g_fake->live_modules, 0);
    EXPECT_EQ(g_fake->primary_retains, 0);
  }
  RuntimeOptions options() {
    RuntimeOptions o;
    o.cache_dir = cache_.path();
    o.warning_sink = log_.sink();
    return o;
  }
  std::vector<fakecuda::Launch> kernel_launches() const {
    std::vector<fakecuda::Launch> out;
    for (const fakecuda::Launch& l : g_fake->launches)
      if (l.kernel != "fusegen_fill")
        out.push_back(l);
    return out;
  }
  size_t count_calls(const std::string& name) const {
    return static_cast<size_t>(std::count(g_fake->calls.begin(), g_fake->calls.end(), name));
  }
  // The one disk cache entry a call of the elementwise fusion (N = 32) on
  // a runtime of its own writes.
  std::string warmed_entry(const testing::LoadedModule& loaded);
  // Warms that entry, applies `damage` to it, then calls the fusion on a
  // fresh runtime: the entry is read once, rejected with one warning
  // containing `why` and rebuilt by one compile. Returns the entry written back.
  runtime::CacheEntry rebuilt_after(const std::function<void(runtime::CacheEntry&)>& damage, const std::string& why);

  TempDir cache_;
  WarningLog log_;
  int baseline_allocations_ = 0;
};

// Device tensors for every argument and output of a specialized fusion.
struct Tensors {
  std::vector<DeviceBuffer> memory;
  std::vector<TensorArg> args;
  std::vector<TensorOut> outs;
  Tensors(Runtime& rt, const Fusion& concrete) {
    for (ValueId id : concrete.arguments) {
      const Value& v = concrete.value(id);
      std::vector<int64_t> shape;
      for (const Dim& d : v.type.shape)
        shape.push_back(d.value());
      memory.push_back(rt.allocate(static_cast<size_t>(numel_of(shape)) * 4));
      args.push_back({v.name, memory.back().data(), shape});
    }
    for (const FusionOutput& o : concrete.outputs) {
      std::vector<int64_t> shape;
      for (const Dim& d : concrete.value(o.value).type.shape)
        shape.push_back(d.value());
      memory.push_back(rt.allocate(static_cast<size_t>(numel_of(shape)) * 4));
      outs.push_back({o.name, memory.back().data(), shape});
    }
  }
};

Fusion specialized(const testing::LoadedModule& loaded, int64_t n) {
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(loaded.fusion(), {{"N", n}}, diags);
  EXPECT_TRUE(concrete) << diags.render(loaded.sources);
  return concrete ? *concrete : Fusion{};
}

std::string FakeDriver::warmed_entry(const testing::LoadedModule& loaded) {
  {
    Runtime warm(0, options());
    Tensors t(warm, specialized(loaded, 32));
    warm.load_string(testing::kElementwiseSpec).function("scale_relu").call(t.args, t.outs);
  }
  std::string entry;
  for (const auto& file : std::filesystem::directory_iterator(cache_.path()))
    entry = file.path().string();
  return entry;
}

runtime::CacheEntry FakeDriver::rebuilt_after(const std::function<void(runtime::CacheEntry&)>& damage,
                                              const std::string& why) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  const std::string entry = warmed_entry(*loaded);
  Result<runtime::CacheEntry> decoded = runtime::decode_entry(testing::read_text(entry));
  if (!decoded) {
    ADD_FAILURE() << "the warmed entry does not decode: " << decoded.error();
    return {};
  }
  damage(decoded.value());
  testing::write_text(entry, runtime::encode_entry(decoded.value()));

  Runtime rt(0, options());
  Tensors t(rt, specialized(*loaded, 32));
  rt.load_string(testing::kElementwiseSpec).function("scale_relu").call(t.args, t.outs);
  EXPECT_EQ(rt.stats().disk_loads, 1u);
  EXPECT_EQ(rt.stats().disk_rejects, 1u);
  EXPECT_EQ(rt.stats().compiles, 1u);
  EXPECT_EQ(rt.stats().calls, 1u);
  EXPECT_EQ(log_.count(), 1u);
  if (log_.count() > 0) {
    EXPECT_NE(log_.lines()[0].find(why), std::string::npos) << log_.lines()[0];
  }
  Result<runtime::CacheEntry> rewritten = runtime::decode_entry(testing::read_text(entry));
  if (!rewritten) {
    ADD_FAILURE() << "the rebuilt entry does not decode: " << rewritten.error();
    return {};
  }
  return rewritten.value();
}

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
    const runtime::LaunchPlan& plan = unit.launch;

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
      const runtime::KernelLaunchPlan& expected = plan.kernels[k];
      const fakecuda::Launch& got = kernels[k];
      EXPECT_EQ(got.kernel, expected.name);
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(got.grid[i], static_cast<unsigned>(expected.grid[static_cast<size_t>(i)]));
      EXPECT_EQ(got.block[0], static_cast<unsigned>(expected.block));
      EXPECT_EQ(got.shared_bytes, static_cast<unsigned>(expected.shared_bytes));
      EXPECT_EQ(got.stream, stream);
      FusegenArgsHost args = args_of(got);
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const runtime::BufferBinding& binding = plan.buffers[b];
        if (binding.role == runtime::BufferBinding::Role::Workspace)
          continue;
        const void* want = nullptr;
        for (const TensorArg& a : t.args)
          if (a.name == binding.name && binding.role == runtime::BufferBinding::Role::Argument)
            want = a.data;
        for (const TensorOut& o : t.outs)
          if (o.name == binding.name && binding.role == runtime::BufferBinding::Role::Output)
            want = o.data;
        EXPECT_EQ(args.buf[b], reinterpret_cast<uintptr_t>(want)) << "buffer " << binding.name;
      }
      for (const runtime::WorkspaceBinding& slot : plan.workspace) {
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
    for (const runtime::KernelLaunchPlan& k : plan.kernels) {
      for (const runtime::FillLaunch& fill : k.fills) {
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

// Autotuning compiles the heuristic's kernels and each GEMM block, times
// them with events on a stream of its own (the fake clock charges each
// launch by its grid), keeps the fastest, and stores it as the autotuned
// entry, which a later runtime without autotuning uses.
TEST_F(FakeDriver, AutotuneKeepsTheFastestBlockAndStoresIt) {
  const std::string spec = "specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  const int64_t n = 128;
  std::map<std::string, std::string> grid_of; // candidate ("64x64:8") -> the GEMM kernel's grid
  std::string gemm_kernel;
  for (GemmBlock block : kGemmBlocks)
    for (int split : kGemmSplits) {
      block.split_k = split;
      try {
        runtime::GeneratedUnit unit =
            runtime::generate_unit(loaded->fusion(), {{"N", n}}, Precision::Strict, 90, &loaded->sources, block);
        const runtime::KernelLaunchPlan& k = unit.launch.kernels.at(0);
        gemm_kernel = k.name;
        grid_of[format_gemm_block(block)] =
            std::to_string(k.grid[0]) + "," + std::to_string(k.grid[1]) + "," + std::to_string(k.grid[2]);
      } catch (const RuntimeError&) {
        // a candidate the kernel cannot take (128x256 is tf32 only)
      }
    }
  // 128x128, 128x64 and 64x64, each unsplit and split by 2, 4 and 8 (a few
  // have the same grid; 128x128 unsplit has a grid of its own).
  ASSERT_EQ(grid_of.size(), 12u);
  EXPECT_EQ(grid_of["64x64:8"], "32,2,1");
  auto set_costs = [&] {
    for (const auto& [candidate, grid] : grid_of)
      g_fake->launch_ms[grid] = 1.0;
    g_fake->launch_ms[grid_of["128x128"]] = 0.5; // not the heuristic's pick at N=128 (too few blocks)...
    g_fake->launch_ms[grid_of["128x64"]] = 2.0;  // ...which is 64x64:8
  };
  auto gemm_grid_of_last_call = [&] {
    for (auto it = g_fake->launches.rbegin(); it != g_fake->launches.rend(); ++it)
      if (it->kernel == gemm_kernel)
        return std::to_string(it->grid[0]) + "," + std::to_string(it->grid[1]) + "," + std::to_string(it->grid[2]);
    return std::string("(none)");
  };
  Fusion concrete = specialized(*loaded, n);
  RuntimeOptions tuned_options = options();
  tuned_options.autotune = true;
  {
    Runtime rt(0, tuned_options);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    set_costs();
    f.call(t.args, t.outs, nullptr);
    EXPECT_EQ(gemm_grid_of_last_call(), grid_of["128x128"]);
    Stats s = rt.stats();
    EXPECT_EQ(s.tunings, 1u);
    // The heuristic's and six forced candidates: 128x128, 128x64 and 64x64,
    // each unsplit and with its largest split, 8 (64x64:8 is the same code as
    // the heuristic's; 128x256 is refused before compiling: tf32 only).
    EXPECT_EQ(s.compiles, 7u);
    EXPECT_EQ(s.disk_writes, 1u);
    EXPECT_EQ(g_fake->live_streams, 0);
    EXPECT_EQ(g_fake->live_events, 0);
    f.call(t.args, t.outs, nullptr); // tuned once per (fusion, dims)
    EXPECT_EQ(rt.stats().tunings, 1u);
  }
  {
    RuntimeOptions plain = options();
    plain.autotune = false;
    Runtime rt(0, plain);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    f.call(t.args, t.outs, nullptr);
    EXPECT_EQ(gemm_grid_of_last_call(), grid_of["128x128"]);
    Stats s = rt.stats();
    EXPECT_EQ(s.compiles, 0u);
    EXPECT_EQ(s.disk_loads, 1u);
    EXPECT_EQ(s.tunings, 0u);
  }
  EXPECT_EQ(log_.count(), 0u);
}

// Tuning leaves nothing allocated behind: the scratch tensors, streams,
// events and the workspaces the candidates kept for the timing stream are
// gone, so a tuned call holds what an untuned one does.
TEST_F(FakeDriver, AutotuneFreesWhatItTimedWith) {
  // Over 128 rows the batch_norm's intermediates go through a workspace.
  const std::string spec = "specs/kernelbench/small/39_gemm_scale_batchnorm.fg";
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  Fusion concrete = specialized(*loaded, 256);
  auto allocations_of_a_call = [&](bool autotune, const std::string& cache_dir) {
    RuntimeOptions o = options();
    o.cache_dir = cache_dir;
    o.autotune = autotune;
    Runtime rt(0, o);
    Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
    Tensors t(rt, concrete);
    const int before = g_fake->live_allocations;
    f.call(t.args, t.outs, nullptr);
    EXPECT_EQ(rt.stats().tunings, autotune ? 1u : 0u);
    return g_fake->live_allocations - before;
  };
  TempDir tuned_cache, plain_cache;
  const int tuned = allocations_of_a_call(true, tuned_cache.path());
  const int plain = allocations_of_a_call(false, plain_cache.path());
  EXPECT_EQ(tuned, plain);
  EXPECT_GT(plain, 0); // the call's own workspace
  EXPECT_EQ(g_fake->live_streams, 0);
  EXPECT_EQ(g_fake->live_events, 0);
}

// A batch_norm fused into its GEMM (128 rows: one block holds them) takes
// only blocks that hold every row: autotuning skips the other candidates,
// which the generator refuses, and still tunes the call.
TEST_F(FakeDriver, AutotuneSkipsBlocksAFusedBatchNormCannotTake) {
  const std::string spec = "specs/kernelbench/small/39_gemm_scale_batchnorm.fg";
  auto loaded = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
  ASSERT_TRUE(loaded);
  TempDir cache;
  RuntimeOptions o = options();
  o.cache_dir = cache.path();
  o.autotune = true;
  Runtime rt(0, o);
  Function f = rt.load_file(testing::source_path(spec)).function(loaded->fusion().name);
  Tensors t(rt, specialized(*loaded, 128));
  f.call(t.args, t.outs, nullptr);
  EXPECT_EQ(rt.stats().tunings, 1u);
  EXPECT_EQ(rt.stats().calls, 1u);
}

// A fusion without a GEMM has one candidate: nothing is timed, and the
// entry is still stored as autotuned so later runs do not try again.
TEST_F(FakeDriver, AutotuneWithOneCandidateTimesNothing) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  ASSERT_TRUE(loaded);
  RuntimeOptions o = options();
  o.autotune = true;
  Runtime rt(0, o);
  Function f = rt.load_string(testing::kElementwiseSpec).function(loaded->fusion().name);
  Tensors t(rt, specialized(*loaded, 16));
  reset_fake();
  f.call(t.args, t.outs, nullptr);
  EXPECT_EQ(count_calls("cuEventCreate"), 0u);
  Stats s = rt.stats();
  EXPECT_EQ(s.tunings, 1u);
  EXPECT_EQ(s.compiles, 1u); // GEMM blocks are the only candidates besides the heuristic's
  EXPECT_EQ(s.disk_writes, 1u);
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
  auto* a = reinterpret_cast<void*>(0x1000);
  auto* b = reinterpret_cast<void*>(0x2000);
  f.call(t.args, t.outs, a);
  f.call(t.args, t.outs, a);
  EXPECT_EQ(g_fake->live_allocations, before + 1);
  f.call(t.args, t.outs, b);
  EXPECT_EQ(g_fake->live_allocations, before + 2);
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

TEST_F(FakeDriver, DriverErrorsNameTheCall) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec).function("scale_relu");
  Tensors t(rt, specialized(*loaded, 64));
  g_fake->fail_function = "cuLaunchKernel";
  g_fake->fail_result = CUDA_ERROR_LAUNCH_FAILED;
  try {
    f.call(t.args, t.outs);
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Driver);
    EXPECT_STREQ(e.what(), "cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED (fake driver error)");
  }
  f.call(t.args, t.outs); // the runtime is still usable
  try {
    (void)rt.allocate(size_t{1} << 40);
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (fake driver error)");
  }
  RuntimeOptions o = options();
  try {
    (void)Runtime(3, o).device_name();
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoDriver);
    EXPECT_STREQ(e.what(), "no CUDA device 3 (this machine has 1)");
  }
}

// A well-formed entry whose image the driver refuses: one warning, rebuilt.
TEST_F(FakeDriver, EntryTheDriverRefusesIsRebuilt) {
  runtime::CacheEntry rewritten = rebuilt_after([](runtime::CacheEntry& entry) { entry.image = std::string(512, 'Z'); },
                                                "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE");
  EXPECT_EQ(rewritten.image.substr(1, 3), "ELF");
}

// A disk hit trusts the stored launch plan (it is not regenerated); one that
// does not fit the fusion (here a buffer naming no tensor) is rebuilt, not
// an error of the call.
TEST_F(FakeDriver, EntryWithAnUnfitLaunchPlanIsRebuilt) {
  runtime::LaunchPlan good;
  runtime::CacheEntry rewritten = rebuilt_after(
      [&](runtime::CacheEntry& entry) {
        good = entry.launch;
        ASSERT_FALSE(entry.launch.buffers.empty());
        entry.launch.buffers[0].role = runtime::BufferBinding::Role::Argument;
        entry.launch.buffers[0].name = "no_such_tensor";
      },
      "names no argument or output");
  EXPECT_EQ(rewritten.launch, good);
}

TEST_F(FakeDriver, CallerContextIsUsedAndLeftCurrent) {
  auto loaded = testing::load_module(testing::kElementwiseSpec);
  const runtime::DriverApi& api = runtime::driver();
  CUcontext primary = nullptr;
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxPushCurrent_v2(primary), CUDA_SUCCESS);
  {
    Runtime rt(0, options());
    Tensors t(rt, specialized(*loaded, 64));
    reset_fake();
    rt.load_string(testing::kElementwiseSpec).function("scale_relu").call(t.args, t.outs);
    EXPECT_EQ(count_calls("cuCtxPushCurrent_v2"), 0u); // already current: nothing pushed
    ASSERT_EQ(kernel_launches().size(), 1u);
    EXPECT_EQ(kernel_launches()[0].context, primary);
  }
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  EXPECT_EQ(current, primary);
  api.cuCtxPopCurrent_v2(&current);
  api.cuDevicePrimaryCtxRelease_v2(0);
}

// What fusegen_runtime_stream_wait does (runtime::stream_wait): an event
// recorded on the producer's stream and a wait for it on the call's stream,
// in the primary context (pushed and popped), with one event made and reused;
// for the same stream (null and CU_STREAM_LEGACY are one) not a driver call.
TEST_F(FakeDriver, StreamWaitsOrderTheCallAfterTheProducer) {
  void* producer = reinterpret_cast<void*>(uintptr_t{0x5000});
  void* consumer = reinterpret_cast<void*>(uintptr_t{0x6000});
  runtime::StreamWaits* waits = runtime::stream_waits_create(0);
  runtime::stream_wait(*waits, nullptr, nullptr);
  runtime::stream_wait(*waits, nullptr, CU_STREAM_LEGACY);
  runtime::stream_wait(*waits, CU_STREAM_LEGACY, nullptr);
  runtime::stream_wait(*waits, consumer, consumer);
  runtime::stream_wait(*waits, CU_STREAM_PER_THREAD, CU_STREAM_PER_THREAD);
  EXPECT_TRUE(g_fake->calls.empty());

  runtime::stream_wait(*waits, nullptr, producer);
  runtime::stream_wait(*waits, consumer, CU_STREAM_PER_THREAD);
  runtime::stream_wait(*waits, CU_STREAM_LEGACY, consumer);
  runtime::stream_wait(*waits, CU_STREAM_PER_THREAD, nullptr);
  ASSERT_EQ(g_fake->stream_waits.size(), 4u);
  const std::vector<std::pair<void*, void*>> expected = {{nullptr, producer},
                                                         {consumer, CU_STREAM_PER_THREAD},
                                                         {CU_STREAM_LEGACY, consumer},
                                                         {CU_STREAM_PER_THREAD, nullptr}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const fakecuda::StreamWait& wait = g_fake->stream_waits[i];
    EXPECT_EQ(wait.stream, expected[i].first) << i;
    EXPECT_TRUE(wait.recorded) << i;
    EXPECT_EQ(wait.producer, expected[i].second) << i;
    EXPECT_NE(wait.context, nullptr) << i;
    EXPECT_EQ(wait.event, g_fake->stream_waits[0].event) << i; // one event, reused
  }
  EXPECT_EQ(count_calls("cuEventCreate"), 1u);
  EXPECT_EQ(count_calls("cuEventRecord"), 4u);
  EXPECT_EQ(count_calls("cuDeviceGetCount"), 1u); // the device is opened once
  EXPECT_EQ(count_calls("cuDevicePrimaryCtxRetain"), 1u);
  EXPECT_EQ(count_calls("cuCtxPushCurrent_v2"), count_calls("cuCtxPopCurrent_v2"));
  EXPECT_EQ(g_fake->primary_retains, 1);
  EXPECT_EQ(g_fake->live_events, 1);
  CUcontext current = nullptr;
  runtime::driver().cuCtxGetCurrent(&current);
  EXPECT_EQ(current, nullptr); // left as found
  // The event and the retain go with it (TearDown checks the retain).
  runtime::stream_waits_destroy(waits);
  EXPECT_EQ(g_fake->live_events, 0);
}

TEST_F(FakeDriver, StreamWaitsUseTheCallersContext) {
  const runtime::DriverApi& api = runtime::driver();
  CUcontext primary = nullptr;
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxPushCurrent_v2(primary), CUDA_SUCCESS);
  runtime::StreamWaits* waits = runtime::stream_waits_create(0);
  reset_fake();
  runtime::stream_wait(*waits, nullptr, reinterpret_cast<void*>(uintptr_t{0x5000}));
  EXPECT_EQ(count_calls("cuCtxPushCurrent_v2"), 0u); // already current: nothing pushed or retained
  EXPECT_EQ(count_calls("cuDevicePrimaryCtxRetain"), 0u);
  ASSERT_EQ(g_fake->stream_waits.size(), 1u);
  EXPECT_EQ(g_fake->stream_waits[0].context, primary);
  runtime::stream_waits_destroy(waits);
  EXPECT_EQ(g_fake->live_events, 0);
  CUcontext current = nullptr;
  api.cuCtxPopCurrent_v2(&current);
  EXPECT_EQ(current, primary);
  api.cuDevicePrimaryCtxRelease_v2(0);
}

TEST_F(FakeDriver, StreamWaitErrorsNameTheCall) {
  void* producer = reinterpret_cast<void*>(uintptr_t{0x5000});
  runtime::StreamWaits* waits = runtime::stream_waits_create(0);
  g_fake->fail_function = "cuStreamWaitEvent";
  g_fake->fail_result = CUDA_ERROR_LAUNCH_FAILED;
  try {
    runtime::stream_wait(*waits, nullptr, producer);
    ADD_FAILURE() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Driver);
    EXPECT_STREQ(e.what(), "cuStreamWaitEvent: CUDA_ERROR_LAUNCH_FAILED (fake driver error)");
  }
  CUcontext current = nullptr;
  runtime::driver().cuCtxGetCurrent(&current);
  EXPECT_EQ(current, nullptr); // popped on the way out

  runtime::stream_wait(*waits, nullptr, producer); // and still usable
  EXPECT_EQ(g_fake->stream_waits.size(), 1u);
  runtime::stream_waits_destroy(waits);

  runtime::StreamWaits* elsewhere = runtime::stream_waits_create(3);
  try {
    runtime::stream_wait(*elsewhere, nullptr, producer);
    ADD_FAILURE() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoDriver);
    EXPECT_STREQ(e.what(), "no CUDA device 3 (this machine has 1)");
  }
  runtime::stream_waits_destroy(elsewhere);
  EXPECT_EQ(g_fake->live_events, 0);
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

int main(int argc, char** argv) {
  // Loaded first, the fake is what the runtime's dlopen("libcuda.so.1") finds.
  void* fake = dlopen(FUSEGEN_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (!fake) {
    std::fprintf(stderr, "cannot load the fake driver %s: %s\n", FUSEGEN_FAKE_CUDA_PATH, dlerror());
    return 1;
  }
  auto state = reinterpret_cast<fakecuda::State* (*)()>(dlsym(fake, "fakecuda_state"));
  fusegen::g_fake = state();
  fusegen::g_reset = reinterpret_cast<void (*)()>(dlsym(fake, "fakecuda_reset"));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
