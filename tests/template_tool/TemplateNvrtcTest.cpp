// Every template compiles alone with NVRTC for the targets that ship, sm_80
// and sm_90a (the GEMM's wgmma path), with its default hooks (helpers.cu
// supplied as a header, as nvcc finds it beside the template; pieces such as
// gemm/*.cuh are embedded in the template's text).
#include "fusegen/TemplateText.h"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace fusegen::templates {
namespace {

std::string concat(const TemplateText& text) {
  std::string out(text.fragments[0]);
  for (size_t i = 0; i < text.hooks.size(); ++i) {
    out += text.hooks[i].default_text;
    out += text.fragments[i + 1];
  }
  return out;
}

// Compiles `source` for `arch`; "" on success, else why. `ptx` gets the PTX.
std::string compile(const std::string& name, const std::string& source, const std::string& arch,
                    std::string* ptx = nullptr) {
  const TemplateText* helpers = find_template_text(kAllTemplates, "helpers.cu");
  std::string helpers_text = concat(*helpers);
  const char* header_sources[] = {helpers_text.c_str()};
  const char* header_names[] = {"helpers.cu"};
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 1, header_sources, header_names) != NVRTC_SUCCESS)
    return "nvrtcCreateProgram failed";
  std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "--std=c++17", "-default-device"};
  nvrtcResult result = nvrtcCompileProgram(program, 3, options);
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  if (ptx && result == NVRTC_SUCCESS && nvrtcGetPTXSize(program, &size) == NVRTC_SUCCESS) {
    ptx->assign(size, '\0');
    nvrtcGetPTX(program, ptx->data());
  }
  nvrtcDestroyProgram(&program);
  return result == NVRTC_SUCCESS ? "" : "NVRTC failed:\n" + log;
}

TEST(TemplateNvrtc, EveryTemplateCompilesAlone) {
  ASSERT_GT(std::size(kAllTemplates), 1u);
  for (const TemplateText* text : kAllTemplates) {
    std::string source = concat(*text);
    for (const char* arch : {"sm_80", "sm_90a"})
      EXPECT_EQ(compile(std::string(text->file), source, arch), "") << text->file << " for " << arch;
  }
}

// The GEMM template's defaults are a configuration that ships (a strict
// linear on the cp.async path, 128-row blocks): its products are wgmma on
// sm_90a and mma.sync on sm_80, so both main loops are compiled above.
TEST(TemplateNvrtc, GemmDefaultsTakeWgmmaOnSm90aAndMmaSyncOnSm80) {
  const TemplateText* gemm = find_template_text(kAllTemplates, "gemm.cu");
  ASSERT_NE(gemm, nullptr);
  const std::string source = concat(*gemm);
  std::string ptx;
  // Virtual architectures, so that NVRTC keeps the PTX.
  ASSERT_EQ(compile("gemm.cu", source, "compute_90a", &ptx), "");
  EXPECT_NE(ptx.find("wgmma.mma_async"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async"), std::string::npos);
  ASSERT_EQ(compile("gemm.cu", source, "compute_80", &ptx), "");
  EXPECT_EQ(ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k8"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async"), std::string::npos);
}

} // namespace
} // namespace fusegen::templates
