// The runtime on a GPU: in-memory caching, concurrent first calls, the disk
// cache across processes, recovery from bad entries, pointer checks and
// context handling. Skips without a GPU.
#include "CacheEntry.h"
#include "DriverApi.h"

#include "support/GpuSupport.h"
#include "support/TestSupport.h"

#include "fusegen/Codegen.h"
#include "fusegen/Interpreter.h"
#include "fusegen/Planner.h"
#include "fusegen/RandomInputs.h"
#include "fusegen/Warmup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <thread>

namespace fusegen {
namespace {

using testing::TempDir;
using testing::WarningLog;

const std::string kSmall62 = "specs/kernelbench/small/62_matmul_groupnorm_leakyrelu_sum.fg";

class GpuRuntime : public ::testing::Test {
protected:
  void SetUp() override {
    FUSEGEN_SKIP_WITHOUT_GPU();
    loaded_ = testing::load_module(testing::kElementwiseSpec, "act.fg");
    ASSERT_TRUE(loaded_);
  }

  RuntimeOptions options() {
    RuntimeOptions o;
    o.cache_dir = cache_.path();
    o.warning_sink = log_.sink();
    return o;
  }

  Fusion concrete(int64_t n) const {
    Diagnostics diags;
    return *specialize(loaded_->fusion(), {{"N", n}}, diags);
  }

  // Runs the elementwise fusion and checks y = relu(x * s) + 1 exactly.
  void run_and_check(Runtime& rt, int64_t n, void* stream = nullptr) {
    Function f = rt.load_string(testing::kElementwiseSpec, "act.fg").function("scale_relu");
    Fusion c = concrete(n);
    std::map<std::string, HostTensor> inputs = make_random_arguments(c, 3);
    testing::DeviceResult got = testing::run_on_device(rt, f, c, inputs, stream);
    const HostTensor& x = inputs.at("x");
    const HostTensor& s = inputs.at("s");
    const std::vector<float>& y = got.outputs.at("y");
    ASSERT_EQ(y.size(), x.data.size());
    for (size_t i = 0; i < y.size(); ++i) {
      float h = static_cast<float>(x.data[i]) * static_cast<float>(s.data[i % 64]);
      ASSERT_EQ(y[i], (h > 0 ? h : 0.0f) + 1.0f) << "element " << i;
    }
  }

  std::string only_entry() const {
    std::string path;
    for (const auto& entry : std::filesystem::directory_iterator(cache_.path()))
      path = entry.path().string();
    return path;
  }

  // `fusion` at N = n against the reference interpreter (output y; 1e-4 strict,
  // 1e-2 tf32); `check_launches` sees the launches as generated.
  void expect_matches_reference(Runtime& rt, Program& program, const testing::LoadedModule& module,
                                const Fusion& fusion, int64_t n, Precision precision, uint64_t seed,
                                const std::function<void(const std::vector<KernelLaunch>&)>& check_launches) {
    SCOPED_TRACE(fusion.name + " N=" + std::to_string(n) + " " + precision_name(precision));
    Diagnostics diags;
    std::optional<Fusion> c = specialize(fusion, {{"N", n}}, diags);
    ASSERT_TRUE(c) << diags.render(module.sources);
    CodegenOptions codegen;
    codegen.precision = precision;
    Result<GeneratedCode> code = generate_cuda({plan_fusion(*c)}, codegen);
    ASSERT_TRUE(code) << code.error();
    check_launches(code.value().fusions.at(0).kernels);
    std::map<std::string, HostTensor> inputs = make_random_arguments(*c, seed);
    Result<InterpreterResult> want = interpret(fusion, inputs);
    ASSERT_TRUE(want) << want.error();
    testing::DeviceResult got = testing::run_on_device(rt, program.function(fusion.name), *c, inputs);
    const double tol = precision == Precision::TF32 ? 1e-2 : 1e-4;
    testing::Comparison cmp =
        testing::compare_to_reference(got.outputs.at("y"), want.value().outputs.at("y"), tol, tol);
    EXPECT_EQ(cmp.mismatches, 0u) << cmp.summary();
  }

  // Every fusion of the spec `text` at each N of `ns`, in both precisions,
  // against the reference interpreter (expect_matches_reference);
  // `check_launches` sees each one's launches as generated.
  void expect_every_fusion_matches_reference(
      const std::string& text, const std::string& file, std::initializer_list<int64_t> ns, uint64_t seed,
      const std::function<void(const Fusion&, Precision, const std::vector<KernelLaunch>&)>& check_launches) {
    auto module = testing::load_module(text, file);
    ASSERT_TRUE(module);
    for (Precision precision : {Precision::Strict, Precision::TF32}) {
      RuntimeOptions o = options();
      o.precision = precision;
      Runtime rt(0, o);
      Program program = rt.load_string(text, file);
      for (const Fusion& fusion : module->module.fusions)
        for (int64_t n : ns)
          expect_matches_reference(
              rt, program, *module, fusion, n, precision, seed,
              [&](const std::vector<KernelLaunch>& launches) { check_launches(fusion, precision, launches); });
    }
  }

  TempDir cache_;
  WarningLog log_;
  std::unique_ptr<testing::LoadedModule> loaded_;
};

// Past 2^31 elements the kernels index with 64 bits (the fake-driver test
// shows such calls launch); here the results are checked: x [2^25 + 1, 64]
// holds 2^31 + 64 elements, 8 GiB in and 8 GiB out. Skips when the GPU has
// no room.
TEST_F(GpuRuntime, PastTwoToThe31ElementsIsCorrect) {
  Runtime rt(0, options());
  const int64_t rows = (int64_t{1} << 25) + 1, count = rows * 64;
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  DeviceBuffer x, y, s;
  try {
    x = rt.allocate(bytes);
    y = rt.allocate(bytes);
    s = rt.allocate(64 * sizeof(float));
  } catch (const RuntimeError& e) {
    GTEST_SKIP() << "not enough GPU memory for two 8 GiB tensors: " << e.what();
  }
  // Small integers: every product and sum is exact, and the pattern (period
  // 1021, prime to 64) tells elements apart.
  std::vector<float> host(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    host[static_cast<size_t>(i)] = static_cast<float>(i % 1021) - 510.0f;
  std::vector<float> scale(64);
  for (int j = 0; j < 64; ++j)
    scale[static_cast<size_t>(j)] = static_cast<float>(j % 7) - 2.0f;
  rt.copy_to_device(x.data(), host.data(), bytes);
  rt.copy_to_device(s.data(), scale.data(), scale.size() * sizeof(float));
  rt.fill(y.data(), std::numeric_limits<float>::quiet_NaN(), static_cast<size_t>(count));
  Function f = rt.load_string(testing::kElementwiseSpec, "act.fg").function("scale_relu");
  f.call({{"x", x.data(), {rows, 64}}, {"s", s.data(), {64}}}, {{"y", y.data(), {rows, 64}}});
  rt.synchronize();
  rt.copy_to_host(host.data(), y.data(), bytes);
  for (int64_t i = 0; i < count; ++i) {
    const float h = (static_cast<float>(i % 1021) - 510.0f) * scale[static_cast<size_t>(i % 64)];
    ASSERT_EQ(host[static_cast<size_t>(i)], (h > 0 ? h : 0.0f) + 1.0f) << "element " << i;
  }
}

TEST_F(GpuRuntime, SecondCallCompilesNothing) {
  Runtime rt(0, options());
  run_and_check(rt, 256);
  Stats first = rt.stats();
  EXPECT_EQ(first.compiles, 1u);
  EXPECT_EQ(first.generations, 1u);
  EXPECT_EQ(first.calls, 1u);
  run_and_check(rt, 256);
  Stats second = rt.stats();
  EXPECT_EQ(second.compiles, 1u);
  EXPECT_EQ(second.generations, 1u);
  EXPECT_EQ(second.disk_loads, 0u);
  EXPECT_EQ(second.memory_hits, first.memory_hits + 1);
  EXPECT_EQ(second.calls, 2u);
  // Another shape is another compilation.
  run_and_check(rt, 100);
  EXPECT_EQ(rt.stats().compiles, 2u);
  EXPECT_EQ(log_.count(), 0u);
}

TEST_F(GpuRuntime, ConcurrentFirstCallsCompileOnce) {
  Runtime rt(0, options());
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] { run_and_check(rt, 512); });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(rt.stats().compiles, 1u);
  EXPECT_EQ(rt.stats().calls, 8u);
  // Different keys build side by side.
  threads.clear();
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { run_and_check(rt, 1000 + i); });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(rt.stats().compiles, 5u);
}

TEST_F(GpuRuntime, PerThreadDefaultStream) {
  Runtime rt(0, options());
  void* per_thread = reinterpret_cast<void*>(0x2); // CU_STREAM_PER_THREAD
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] { run_and_check(rt, 300, per_thread); });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(rt.stats().calls, 4u);
}

// Autotuning on the GPU: the GEMM chains at a size where every block is a
// candidate (wgmma 128x128, 128x64, mma.sync 64x64) match the reference in
// strict precision, and a runtime without autotuning then takes the
// autotuned entry from disk.
TEST_F(GpuRuntime, AutotunedKernelsMatchTheReference) {
  for (const std::string& spec : {kSmall62, std::string("specs/kernelbench/small/39_gemm_scale_batchnorm.fg")}) {
    SCOPED_TRACE(spec);
    auto module = testing::load_module(testing::read_text(testing::source_path(spec)), spec);
    ASSERT_TRUE(module);
    Diagnostics diags;
    std::optional<Fusion> c = specialize(module->fusion(), {{"N", 4500}}, diags);
    ASSERT_TRUE(c) << diags.render(module->sources);
    std::map<std::string, HostTensor> inputs = make_random_arguments(*c, 5);
    Result<InterpreterResult> want = interpret(module->fusion(), inputs);
    ASSERT_TRUE(want) << want.error();
    auto check = [&](Runtime& rt) {
      Function f = rt.load_file(testing::source_path(spec)).function(module->fusion().name);
      testing::DeviceResult got = testing::run_on_device(rt, f, *c, inputs);
      testing::expect_matches_reference(got, want.value(), 1e-4, spec);
    };
    RuntimeOptions tuned = options();
    tuned.precision = Precision::Strict;
    tuned.autotune = true;
    {
      Runtime rt(0, tuned);
      check(rt);
      EXPECT_EQ(rt.stats().tunings, 1u);
      EXPECT_GE(rt.stats().compiles, 3u);
    }
    RuntimeOptions plain = tuned;
    plain.autotune = false;
    Runtime rt(0, plain);
    check(rt);
    EXPECT_EQ(rt.stats().compiles, 0u);
    EXPECT_EQ(rt.stats().disk_loads, 1u);
  }
  EXPECT_EQ(log_.count(), 0u);
}

// Split-K on the GPU (clusters of blocks that share an output block's depth
// and add their sums in distributed shared memory): shares of unequal length
// (29 slices of 32 over 8 blocks, the last slice partial), partial row and
// column blocks and a row norm in the epilogue, against the reference in
// both precisions. Each kind of share the ranks push (templates/gemm.cu
// "split-K"): rows (split_linear, split_norm), a column norm's columns
// (split_stats at N = 50, where a block holds the batch) and columns with
// partial statistics (split_stats at N = 130).
TEST_F(GpuRuntime, SplitKMatchesTheReference) {
  const std::string text = R"(
fusion split_linear {
  input x : f32[N, 900]
  param w : f32[96, 900]
  param b : f32[96]
  output y = relu(linear(x, w, b))
}
fusion split_norm {
  input x : f32[N, 900]
  param w : f32[128, 900]
  param g : f32[128]
  param beta : f32[128]
  output y = group_norm(linear(x, w), num_groups=4, weight=g, bias=beta, eps=1e-5)
}
fusion split_stats {
  input x : f32[N, 900]
  param w : f32[128, 900]
  param g : f32[128]
  param beta : f32[128]
  state mean : f32[128]
  state var : f32[128]
  output y = batch_norm(linear(x, w), mean, var, weight=g, bias=beta, training=true, momentum=0.1, eps=1e-5)
}
)";
  expect_every_fusion_matches_reference(
      text, "split.fg", {50, 130}, 7, [](const Fusion&, Precision, const std::vector<KernelLaunch>& launches) {
        EXPECT_EQ(launches.at(0).cluster, 8); // the generator does split these (2 or 6 blocks of 64x64)
      });
  EXPECT_EQ(log_.count(), 0u);
}

// conv2d with few output channels runs on the narrow template (one row per
// thread); with more (over 32 in tf32 precision, over 64 in strict) it runs
// on gemm.cu. Both against the reference, in both
// precisions, with partial row blocks and statistics tiles (99 and 130
// positions), padding, stride, dilation and conv groups, a column count that
// is not a multiple of 4, and group_norm statistics from either template.
TEST_F(GpuRuntime, ConvOnEitherTemplateMatchesTheReference) {
  const std::string text = R"(
fusion narrow_padded {
  input x : f32[N, 4, 20, 18]
  param w : f32[6, 2, 3, 3]
  param b : f32[6]
  param s : f32[6, 1, 1]
  h = conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)
  output y = relu(h) * s
}
fusion narrow_stats {
  input x : f32[N, 4, 12, 15]
  param w : f32[8, 2, 3, 3]
  param b : f32[8]
  param g : f32[8]
  param beta : f32[8]
  h = conv2d(x, w, b, groups=2)
  h = group_norm(h, num_groups=4, weight=g, bias=beta, eps=1e-5)
  output y = clamp(max_pool2d(h * 2.0, kernel_size=2), min=-1.0, max=1.0)
}
fusion mid_stats {
  input x : f32[N, 3, 9, 11]
  param w : f32[40, 3, 3, 3]
  param g : f32[40]
  param beta : f32[40]
  h = conv2d(x, w, padding=1)
  output y = group_norm(h, num_groups=10, weight=g, bias=beta, eps=1e-5)
}
fusion wide_stats {
  input x : f32[N, 3, 9, 11]
  param w : f32[72, 3, 3, 3]
  param g : f32[72]
  param beta : f32[72]
  h = conv2d(x, w, padding=1)
  output y = group_norm(h, num_groups=18, weight=g, bias=beta, eps=1e-5)
}
)";
  // 40 columns: narrow in strict precision, tensor cores in tf32.
  auto expected_template = [](const std::string& fusion, Precision precision) -> std::string {
    if (fusion == "wide_stats" || (fusion == "mid_stats" && precision == Precision::TF32))
      return "gemm.cu";
    return "narrow_gemm.cu";
  };
  expect_every_fusion_matches_reference(
      text, "conv.fg", {1, 7, 130}, 11,
      [&](const Fusion& fusion, Precision precision, const std::vector<KernelLaunch>& launches) {
        EXPECT_EQ(launches.at(0).template_file, expected_template(fusion.name, precision));
      });
  EXPECT_EQ(log_.count(), 0u);
}

// A GEMM of 532 output blocks of 128x128 (4 waves of 132 and 4 blocks)
// leaves its last 4 blocks to a split tail: a second launch whose clusters of
// 4 blocks each take one (templates/gemm.cu "block_begin"), beside the first
// launch's last wave. The tail holds the partial last row block; against the
// reference with batch_norm statistics and with a row norm and row minimum
// in the epilogue, in both precisions. With 68000 rows strict precision also
// splits the weight once per call (templates/gemm.cu "b_split"), which both
// launches read.
TEST_F(GpuRuntime, SplitTailMatchesTheReference) {
  const std::string text = R"(
fusion tail_batch_norm {
  input x : f32[N, 256]
  param w : f32[128, 256]
  param b : f32[128]
  state mean : f32[128]
  state var : f32[128]
  output y = batch_norm(linear(x, w, b) * 0.5, mean, var, training=true, momentum=0.1, eps=1e-5)
}
fusion tail_row_min {
  input x : f32[N, 256]
  param w : f32[128, 256]
  param g : f32[128]
  param beta : f32[128]
  h = group_norm(linear(x, w), num_groups=4, weight=g, bias=beta, eps=1e-5)
  output y = min(h, dim=1, keepdim=true)
}
)";
  expect_every_fusion_matches_reference(
      text, "tail.fg", {68000}, 13, [](const Fusion&, Precision, const std::vector<KernelLaunch>& launches) {
        auto tail = std::find_if(launches.begin(), launches.end(),
                                 [](const KernelLaunch& l) { return l.name.ends_with("_k0_tail"); });
        ASSERT_NE(tail, launches.end());
        EXPECT_EQ(tail->cluster, 4);
        EXPECT_EQ(tail->grid[0].value, std::optional<int64_t>(16));
      });
  EXPECT_EQ(log_.count(), 0u);
}

TEST_F(GpuRuntime, WarmedCacheServesAFreshRuntime) {
  {
    Runtime rt(0, options());
    WarmupOptions warm;
    warm.arch = rt.arch();
    warm.cache_dir = cache_.path();
    WarmupReport report = warmup(loaded_->module, loaded_->sources, {{{"N", 64}}}, warm);
    ASSERT_EQ(report.count(WarmupOutcome::Compiled), 1u) << report.items[0].error;
  }
  Runtime rt(0, options());
  run_and_check(rt, 64);
  EXPECT_EQ(rt.stats().compiles, 0u);
  EXPECT_EQ(rt.stats().disk_loads, 1u);
}

// A warmed cache serves another process: the CLI, run as a child.
TEST_F(GpuRuntime, WarmedCacheServesAChildProcess) {
  Runtime rt(0, options());
  std::string spec = testing::source_path(kSmall62);
  std::string env = "env -u FUSEGEN_CACHE FUSEGEN_CACHE_DIR='" + cache_.path() + "' '" + testing::cli_path() + "' ";
  testing::CommandResult warm =
      testing::run_command(env + "warmup '" + spec + "' --dims N=128 --arch sm_" + std::to_string(rt.arch()));
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_NE(warm.output.find("1 compiled"), std::string::npos) << warm.output;
  testing::CommandResult run = testing::run_command(env + "run '" + spec + "' --device --dims N=128 --compare");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("kernels: 0 compiled, 1 from the disk cache"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("result: pass"), std::string::npos) << run.output;
}

TEST_F(GpuRuntime, CorruptEntryIsRebuiltOnTheGpu) {
  {
    Runtime warm(0, options());
    run_and_check(warm, 128);
  }
  std::string entry = only_entry();
  std::string bytes = testing::read_text(entry);
  bytes[bytes.size() - 64] ^= 0x10; // in the cubin
  testing::write_text(entry, bytes);

  Runtime rt(0, options());
  run_and_check(rt, 128);
  EXPECT_EQ(rt.stats().disk_rejects, 1u);
  EXPECT_EQ(rt.stats().compiles, 1u);
  ASSERT_EQ(log_.count(), 1u);
  EXPECT_NE(log_.lines()[0].find("checksum mismatch"), std::string::npos) << log_.lines()[0];
  Runtime again(0, options());
  run_and_check(again, 128);
  EXPECT_EQ(again.stats().disk_loads, 1u);
}

// An entry that is well formed but that the driver refuses to load (say,
// from a newer NVRTC): rebuilt, not a failed call.
TEST_F(GpuRuntime, EntryTheDriverRefusesIsRebuilt) {
  {
    Runtime warm(0, options());
    run_and_check(warm, 128);
  }
  std::string entry = only_entry();
  Result<runtime::CacheEntry> decoded = runtime::decode_entry(testing::read_text(entry));
  ASSERT_TRUE(decoded);
  decoded.value().image = std::string(4096, '\x42');
  testing::write_text(entry, runtime::encode_entry(decoded.value()));

  Runtime rt(0, options());
  run_and_check(rt, 128);
  EXPECT_EQ(rt.stats().disk_loads, 1u);
  EXPECT_EQ(rt.stats().disk_rejects, 1u);
  EXPECT_EQ(rt.stats().compiles, 1u);
  ASSERT_EQ(log_.count(), 1u);
  EXPECT_NE(log_.lines()[0].find("cuModuleLoadData"), std::string::npos) << log_.lines()[0];
}

TEST_F(GpuRuntime, PointersAreCheckedWithTheDriver) {
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec, "act.fg").function("scale_relu");
  DeviceBuffer x = rt.allocate(64 * 64 * 4), s = rt.allocate(64 * 4), y = rt.allocate(64 * 64 * 4);
  auto message = [&](const std::vector<TensorArg>& args, const std::vector<TensorOut>& outs) {
    try {
      f.call(args, outs);
    } catch (const RuntimeError& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Argument) << error.what();
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  alignas(16) static float host[64 * 64];
  EXPECT_NE(
      message({{"x", host, {64, 64}}, {"s", s.data(), {64}}}, {{"y", y.data(), {64, 64}}}).find("is not CUDA memory"),
      std::string::npos);
  EXPECT_NE(message({{"x", x.data(), {65, 64}}, {"s", s.data(), {64}}}, {{"y", y.data(), {65, 64}}})
                .find("extends past the end of its allocation"),
            std::string::npos);
  EXPECT_EQ(message({{"x", x.data(), {64, 64}}, {"s", s.data(), {64}}}, {{"y", y.data(), {64, 64}}}), "(no error)");
  EXPECT_EQ(rt.stats().calls, 1u);
}

// A bound call's launches compute what call() computes, bit for bit, on a
// chain of several kernels (split-K shares, dependent launches), with new
// tensors at each launch; the driver's pointer checks refuse what call()
// refuses, with its message.
TEST_F(GpuRuntime, BoundLaunchesMatchCalls) {
  auto module = testing::load_module(testing::read_text(testing::source_path(kSmall62)), kSmall62);
  ASSERT_TRUE(module);
  Diagnostics diags;
  std::optional<Fusion> c = specialize(module->fusion(), {{"N", 128}}, diags);
  ASSERT_TRUE(c) << diags.render(module->sources);
  Runtime rt(0, options());
  Function f = rt.load_file(testing::source_path(kSmall62)).function(module->fusion().name);
  std::vector<std::vector<int64_t>> shapes; // the refs point into these
  shapes.reserve(c->arguments.size() + c->outputs.size());
  std::vector<TensorRef> args, outs;
  for (ValueId id : c->arguments) {
    const Value& value = c->value(id);
    shapes.emplace_back();
    for (const Dim& d : value.type.shape)
      shapes.back().push_back(d.value());
    args.push_back({value.name, nullptr, shapes.back().data(), shapes.back().size()});
  }
  for (const FusionOutput& output : c->outputs) {
    shapes.emplace_back();
    for (const Dim& d : c->value(output.value).type.shape)
      shapes.back().push_back(d.value());
    outs.push_back({output.name, nullptr, shapes.back().data(), shapes.back().size()});
  }
  BoundCall bound = f.bind(args.data(), args.size(), outs.data(), outs.size());
  std::vector<DeviceBuffer> memory;
  // Uploads inputs of `seed` and makes NaN outputs: the refs and the pointers.
  auto tensors = [&](uint64_t seed, std::vector<const void*>& data, std::vector<const void*>& out_data) {
    std::map<std::string, HostTensor> inputs = make_random_arguments(*c, seed);
    for (TensorRef& arg : args) {
      const HostTensor& tensor = inputs.at(std::string(arg.name));
      std::vector<float> host(tensor.data.begin(), tensor.data.end());
      memory.push_back(rt.allocate(host.size() * sizeof(float)));
      rt.copy_to_device(memory.back().data(), host.data(), memory.back().bytes());
      arg.data = memory.back().data();
      data.push_back(arg.data);
    }
    for (TensorRef& out : outs) {
      const size_t count = static_cast<size_t>(numel_of(std::vector<int64_t>(out.shape, out.shape + out.rank)));
      memory.push_back(rt.allocate(count * sizeof(float)));
      rt.fill(memory.back().data(), std::numeric_limits<float>::quiet_NaN(), count);
      out.data = memory.back().data();
      out_data.push_back(out.data);
    }
  };
  auto download = [&](const void* device) {
    std::vector<float> host(static_cast<size_t>(numel_of(std::vector<int64_t>(outs[0].shape, outs[0].shape + 2))));
    rt.copy_to_host(host.data(), device, host.size() * sizeof(float));
    return host;
  };
  for (uint64_t seed : {3, 4}) {
    std::vector<const void*> data, out_data;
    tensors(seed, data, out_data);
    bound.launch(data.data(), out_data.data());
    rt.synchronize();
    std::vector<float> by_bound = download(out_data[0]);
    f.call(args.data(), args.size(), outs.data(), outs.size());
    rt.synchronize();
    std::vector<float> by_call = download(out_data[0]);
    EXPECT_EQ(std::memcmp(by_bound.data(), by_call.data(), by_call.size() * sizeof(float)), 0) << "seed " << seed;
    EXPECT_FALSE(std::isnan(by_bound[0]));
  }
  EXPECT_EQ(rt.stats().calls, 4u);
  EXPECT_EQ(rt.stats().compiles + rt.stats().disk_loads, 1u);

  std::vector<const void*> data, out_data;
  for (const TensorRef& arg : args)
    data.push_back(arg.data);
  for (const TensorRef& out : outs)
    out_data.push_back(out.data);
  std::vector<float> host(static_cast<size_t>(128 * 1024));
  data[0] = reinterpret_cast<const void*>((reinterpret_cast<uintptr_t>(host.data()) + 15) & ~uintptr_t{15});
  args[0].data = data[0];
  const auto message = testing::thrown_message;
  const std::string refused = message([&] { bound.launch(data.data(), out_data.data()); });
  EXPECT_NE(refused.find("is not CUDA memory"), std::string::npos) << refused;
  EXPECT_EQ(refused, message([&] { f.call(args.data(), args.size(), outs.data(), outs.size()); }));
  EXPECT_EQ(rt.stats().calls, 4u);
}

TEST_F(GpuRuntime, CallerContextStackIsUnchanged) {
  const runtime::DriverApi& api = runtime::driver();
  std::thread([&] {
    CUcontext before = reinterpret_cast<CUcontext>(0x1);
    ASSERT_EQ(api.cuCtxGetCurrent(&before), CUDA_SUCCESS);
    EXPECT_EQ(before, nullptr);
    Runtime rt(0, options());
    run_and_check(rt, 64);
    CUcontext after = reinterpret_cast<CUcontext>(0x1);
    ASSERT_EQ(api.cuCtxGetCurrent(&after), CUDA_SUCCESS);
    EXPECT_EQ(after, nullptr); // the primary context was pushed and popped

    // With the caller's context current, the runtime works in it.
    CUdevice device = 0;
    CUcontext primary = nullptr;
    ASSERT_EQ(api.cuDeviceGet(&device, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&primary, device), CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxPushCurrent_v2(primary), CUDA_SUCCESS);
    run_and_check(rt, 64);
    CUcontext current = nullptr;
    ASSERT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, primary);
    CUcontext popped = nullptr;
    api.cuCtxPopCurrent_v2(&popped);
    api.cuDevicePrimaryCtxRelease_v2(device);
  }).join();
}

TEST_F(GpuRuntime, PrepareLoadsWithoutLaunching) {
  Runtime rt(0, options());
  Function f = rt.load_string(testing::kElementwiseSpec, "act.fg").function("scale_relu");
  f.prepare({{"N", 640}});
  EXPECT_EQ(rt.stats().compiles, 1u);
  EXPECT_EQ(rt.stats().calls, 0u);
  run_and_check(rt, 640);
  EXPECT_EQ(rt.stats().compiles, 1u);
}

} // namespace
} // namespace fusegen
