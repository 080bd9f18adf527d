#include "support/Nvrtc.h"

#ifdef FUSEGEN_HAVE_NVRTC
#include <nvrtc.h>
#endif

#include <vector>

namespace fusegen::testing {

#ifdef FUSEGEN_HAVE_NVRTC
bool have_nvrtc() { return true; }

std::string nvrtc_compile(const std::string& source, const std::string& name, int arch, Precision precision,
                          const std::string& helpers) {
  const char* header_sources[] = {helpers.c_str()};
  const char* header_names[] = {"helpers.cu"};
  nvrtcProgram program;
  int headers = helpers.empty() ? 0 : 1;
  if (nvrtcCreateProgram(&program, source.c_str(), name.c_str(), headers, header_sources, header_names) !=
      NVRTC_SUCCESS)
    return "NVRTC failed: nvrtcCreateProgram";
  std::vector<std::string> options = nvrtc_options({arch, true}, precision);
  std::vector<const char*> raw;
  for (const std::string& option : options)
    raw.push_back(option.c_str());
  nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(raw.size()), raw.data());
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  nvrtcDestroyProgram(&program);
  return result == NVRTC_SUCCESS ? "" : "NVRTC failed:\n" + log;
}
#else
bool have_nvrtc() { return false; }
std::string nvrtc_compile(const std::string&, const std::string&, int, Precision, const std::string&) {
  return "NVRTC is not available";
}
#endif

} // namespace fusegen::testing
