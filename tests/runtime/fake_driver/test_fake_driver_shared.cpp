// Kernels with large dynamic shared memory against the fake libcuda (which,
// like the driver, refuses a launch above 48 KiB without the opt-in): a
// long row cached whole in shared memory loads and launches on 8.0 and 9.0,
// up to each one's limit.
#include "FakeDriver.h"

namespace fusegen {
namespace {

constexpr const char* kLongRows = R"(
fusion rows_20k {
  input x : f32[N, 20000]
  output y = log_softmax(x, dim=1)
}
fusion rows_25k {
  input x : f32[N, 25000]
  output y = softmax(x, dim=1)
}
)";

// A block caches up to half the device's opt-in limit (two blocks per SM):
// 20000 floats (78 KiB) are cached on both; 25000 (98 KiB) fit half of 9.0's
// 227 KiB but not half of 8.0's 163 KiB, so 8.0 caches the first 20608
// (80.5 KiB, half of 163 KiB less 1 KiB) and reloads the rest. 160 rows
// fill the SMs, so 9.0 does not spread them over clusters.
TEST_F(FakeDriver, LongRowsCachedUpToTheDevicesSharedMemory) {
  auto loaded = testing::load_module(kLongRows);
  ASSERT_TRUE(loaded);
  struct Case {
    size_t fusion;
    int major;
    unsigned shared_bytes;
  };
  for (const Case& c : {Case{0, 9, 80000u}, Case{0, 8, 80000u}, Case{1, 9, 100000u}, Case{1, 8, 20608u * 4}}) {
    const std::string& name = loaded->fusion(c.fusion).name;
    SCOPED_TRACE(name + " on sm_" + std::to_string(c.major) + "0");
    reset_fake();
    g_fake->compute_major = c.major;
    testing::TempDir cache;
    RuntimeOptions o = options();
    o.cache_dir = cache.path();
    Runtime rt(0, o);
    Function f = rt.load_string(kLongRows).function(name);
    Diagnostics diags;
    std::optional<Fusion> concrete = specialize(loaded->fusion(c.fusion), {{"N", 160}}, diags);
    ASSERT_TRUE(concrete);
    Tensors t(rt, *concrete);
    f.call(t.args, t.outs, nullptr);
    std::vector<fakecuda::Launch> kernels = kernel_launches();
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].shared_bytes, c.shared_bytes);
    EXPECT_EQ(kernels[0].block[0], 512u);
    EXPECT_EQ(count_calls("cuFuncSetAttribute"), 1u); // every case is over 48 KiB
  }
  EXPECT_EQ(log_.count(), 0u);
}

} // namespace
} // namespace fusegen
