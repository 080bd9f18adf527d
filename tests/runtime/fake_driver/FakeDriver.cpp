// The fake-driver tests' fixture, out of line, and main(): the fake libcuda
// is loaded before any test, so the runtime's dlopen("libcuda.so.1") finds it.
#include "FakeDriver.h"

#include <dlfcn.h>

namespace fusegen {

fakecuda::State* g_fake = nullptr;
void (*g_reset)() = nullptr;

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
