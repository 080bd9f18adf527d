// Driver errors, cache entries and streams against the fake libcuda: errors
// name the call, an entry the driver refuses or whose launch plan does not fit
// is rebuilt, the caller's context is used and left current, and stream
// waits order a call after its producer.
#include "FakeDriver.h"

namespace fusegen {
namespace {

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
  LaunchPlan good;
  runtime::CacheEntry rewritten = rebuilt_after(
      [&](runtime::CacheEntry& entry) {
        good = entry.launch;
        ASSERT_FALSE(entry.launch.buffers.empty());
        entry.launch.buffers[0].role = BufferBinding::Role::Argument;
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

} // namespace
} // namespace fusegen
