// The cache key: deterministic text, every field part of the entry name, and
// the NVRTC target choice it records (cubin, or PTX for newer devices).
#include "CacheKey.h"
#include "Nvrtc.h"

#include "fusegen/Sha256.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

namespace fusegen::runtime {
namespace {

CacheKey sample_key() {
  CacheKey key;
  key.fusegen_version = "0.1.0";
  key.generator = std::string(64, 'b');
  key.nvrtc_version = "13.0";
  key.nvrtc_options = {"--gpu-architecture=sm_90", "-default-device"};
  key.arch = 90;
  key.target = "sm_90";
  key.fusion = "gemm";
  key.fingerprint = std::string(64, 'a');
  key.dims = {{"N", 1024}, {"M", 8}};
  key.precision = Precision::Strict;
  return key;
}

TEST(CacheKey, MaterialIsDeterministicAndComplete) {
  CacheKey key = sample_key();
  EXPECT_EQ(key.material(), sample_key().material());
  EXPECT_EQ(key.material(), "fusegen-cache-key\n"
                            "schema=4\n"
                            "fusegen=0.1.0\n"
                            "generator=" +
                                std::string(64, 'b') +
                                "\n"
                                "nvrtc=13.0\n"
                                "arch=sm_90\n"
                                "target=sm_90\n"
                                "fusion=gemm\n"
                                "fingerprint=" +
                                std::string(64, 'a') +
                                "\n"
                                "dims=M=8,N=1024\n"
                                "precision=strict\n"
                                "tuning=heuristic\n"
                                "products=default\n"
                                "option=--gpu-architecture=sm_90\n"
                                "option=-default-device\n");
  EXPECT_EQ(key.file_name(), sha256_hex(key.material()) + ".fgc");
}

TEST(CacheKey, EveryFieldChangesTheEntryName) {
  const std::vector<std::function<void(CacheKey&)>> changes = {
      [](CacheKey& k) { k.schema = 5; },
      [](CacheKey& k) { k.fusegen_version = "0.2.0"; },
      [](CacheKey& k) { k.nvrtc_version = "12.4"; },
      [](CacheKey& k) { k.nvrtc_options.push_back("--ftz=false"); },
      [](CacheKey& k) { k.nvrtc_options[1] = "-G"; },
      [](CacheKey& k) { k.arch = 80; },
      [](CacheKey& k) { k.target = "compute_90"; },
      [](CacheKey& k) { k.fusion = "gemm2"; },
      [](CacheKey& k) { k.fingerprint[0] = 'c'; },
      [](CacheKey& k) { k.dims["N"] = 1025; },
      [](CacheKey& k) { k.dims.erase("M"); },
      [](CacheKey& k) { k.precision = Precision::TF32; },
      [](CacheKey& k) { k.generator[5] = 'c'; },
      [](CacheKey& k) { k.autotuned = true; },
      [](CacheKey& k) { k.strict_product = StrictProduct::ThreeTF32; },
      [](CacheKey& k) { k.strict_product = StrictProduct::FP16x3; },
  };
  std::set<std::string> names = {sample_key().file_name()};
  for (const auto& change : changes) {
    CacheKey key = sample_key();
    change(key);
    EXPECT_TRUE(names.insert(key.file_name()).second) << key.material();
  }
}

TEST(CacheKey, GeneratorIdentityIsABuildTimeSha256) {
  const std::string identity = generator_identity();
  ASSERT_EQ(identity.size(), 64u);
  EXPECT_EQ(identity.find_first_not_of("0123456789abcdef"), std::string::npos) << identity;
}

TEST(CacheKey, DescribesTheFirstDifference) {
  CacheKey other = sample_key();
  other.arch = 80;
  EXPECT_EQ(describe_key_difference(other.material(), sample_key().material()), "arch=sm_80 (expected arch=sm_90)");
  EXPECT_EQ(describe_key_difference(sample_key().material(), sample_key().material()), "same key");
  EXPECT_EQ(key_field(sample_key().material(), "dims"), "M=8,N=1024");
  EXPECT_EQ(key_field(sample_key().material(), "nothing"), "");
  EXPECT_EQ(dims_text({}), "-");
}

TEST(NvrtcTarget, CubinWhenKnownPtxWhenNewer) {
  NvrtcInfo info;
  info.major = 12;
  info.minor = 4;
  info.archs = {75, 80, 86, 89, 90};
  auto target = [&](int arch) {
    Result<NvrtcTarget> t = choose_target(arch, info);
    return t ? target_name(t.value()) : "error: " + t.error();
  };
  EXPECT_EQ(target(90), "sm_90");
  EXPECT_EQ(target(80), "sm_80");
  EXPECT_EQ(target(87), "sm_86");       // same major: binary compatible
  EXPECT_EQ(target(100), "compute_90"); // newer than NVRTC: PTX, JIT-compiled by the driver
  EXPECT_EQ(target(120), "compute_90");
  EXPECT_EQ(target(70).rfind("error: sm_70 is older", 0), 0u) << target(70);
  EXPECT_FALSE(choose_target(90, NvrtcInfo{}));
}

TEST(NvrtcTarget, RealNvrtcKnowsHopper) {
  const NvrtcInfo& info = nvrtc_info();
  EXPECT_GT(info.major, 0);
  ASSERT_FALSE(info.archs.empty());
  Result<NvrtcTarget> target = choose_target(90, info);
  ASSERT_TRUE(target) << target.error();
  EXPECT_TRUE(target.value().cubin);
  EXPECT_EQ(target.value().arch, 90);
}

} // namespace
} // namespace fusegen::runtime

namespace fusegen::runtime {
namespace {

TEST(Nvrtc, FailureCarriesTheLogAndTheLine) {
  const std::string source = "extern \"C\" __global__ void k(float* p) {\n"
                             "  p[0] = undefined_name;\n"
                             "}\n";
  Result<std::string> image =
      nvrtc_compile(source, "/tmp/broken.cu", nvrtc_options({90, true}, Precision::Strict), false);
  ASSERT_FALSE(image);
  EXPECT_NE(image.error().find("nvrtcCompileProgram: NVRTC_ERROR_COMPILATION"), std::string::npos) << image.error();
  EXPECT_NE(image.error().find("/tmp/broken.cu(2): error"), std::string::npos) << image.error();
  EXPECT_EQ(first_error_line(image.error(), source), "  2 |   p[0] = undefined_name;\n");
  EXPECT_EQ(first_error_line("no errors here", source), "");
  EXPECT_EQ(first_error_line("x.cu(99): error: far", source), "");
}

TEST(Nvrtc, CompilesCubinAndPtx) {
  const std::string source = "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n";
  Result<std::string> cubin = nvrtc_compile(source, "k.cu", nvrtc_options({90, true}, Precision::Strict), false);
  ASSERT_TRUE(cubin) << cubin.error();
  EXPECT_EQ(cubin.value().substr(0, 4), "\x7f"
                                        "ELF");
  Result<std::string> ptx = nvrtc_compile(source, "k.cu", nvrtc_options({90, false}, Precision::Strict), true);
  ASSERT_TRUE(ptx) << ptx.error();
  EXPECT_NE(ptx.value().find(".target sm_90"), std::string::npos);
  EXPECT_EQ(ptx.value().back(), '\0'); // cuModuleLoadData wants NUL-terminated PTX
}

} // namespace
} // namespace fusegen::runtime
