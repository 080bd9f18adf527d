// The fake-driver tests' fixture (FakeDriver.cpp holds its out-of-line
// parts and main(), which loads the fake libcuda before any test): the fake's
// state, the arguments of a recorded launch, device tensors for a fusion, and
// a fixture that checks every test frees what it allocated.
#pragma once

#include "FakeCuda.h"

#include "CacheEntry.h"
#include "DriverApi.h"
#include "Generate.h"
#include "fusegen/LaunchPlan.h"

#include "support/TestSupport.h"

#include "fusegen/KernelLimits.h"
#include "fusegen/Runtime.h"

#include <gtest/gtest.h>

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

using testing::TempDir;
using testing::WarningLog;

// Set by main() from the loaded fake.
extern fakecuda::State* g_fake;
extern void (*g_reset)();
inline void reset_fake() { g_reset(); }

struct FusegenArgsHost {
  unsigned long long buf[kFusegenMaxBuffers];
  long long dim[kFusegenMaxDims];
};

inline FusegenArgsHost args_of(const fakecuda::Launch& launch) {
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

inline Fusion specialized(const testing::LoadedModule& loaded, int64_t n) {
  Diagnostics diags;
  std::optional<Fusion> concrete = specialize(loaded.fusion(), {{"N", n}}, diags);
  EXPECT_TRUE(concrete) << diags.render(loaded.sources);
  return concrete ? *concrete : Fusion{};
}

} // namespace fusegen
