// Every template compiles alone with NVRTC for sm_80 and sm_90, with its
// default hooks (helpers.cu supplied as a header, as nvcc finds it beside
// the template).
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

std::string compile(const std::string& name, const std::string& source, const std::string& arch) {
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
  nvrtcDestroyProgram(&program);
  return result == NVRTC_SUCCESS ? "" : "NVRTC failed:\n" + log;
}

TEST(TemplateNvrtc, EveryTemplateCompilesAlone) {
  ASSERT_GT(std::size(kAllTemplates), 1u);
  for (const TemplateText* text : kAllTemplates) {
    std::string source = concat(*text);
    for (const char* arch : {"sm_80", "sm_90"})
      EXPECT_EQ(compile(std::string(text->file), source, arch), "") << text->file << " for " << arch;
  }
}

} // namespace
} // namespace fusegen::templates
