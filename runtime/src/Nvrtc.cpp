#include "Nvrtc.h"

#include <nvrtc.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <sstream>

namespace fusegen::runtime {
namespace {

NvrtcInfo query_nvrtc() {
  NvrtcInfo info;
  nvrtcVersion(&info.major, &info.minor);
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    info.archs.resize(static_cast<size_t>(count));
    if (nvrtcGetSupportedArchs(info.archs.data()) != NVRTC_SUCCESS)
      info.archs.clear();
  }
  std::sort(info.archs.begin(), info.archs.end());
  return info;
}

std::string nvrtc_error(const char* function, nvrtcResult result) {
  return std::string(function) + ": " + nvrtcGetErrorString(result);
}

struct ProgramDeleter {
  void operator()(nvrtcProgram program) const { nvrtcDestroyProgram(&program); }
};
using ProgramHandle = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

} // namespace

const NvrtcInfo& nvrtc_info() {
  static const NvrtcInfo info = query_nvrtc();
  return info;
}

Result<NvrtcTarget> choose_target(int arch, const NvrtcInfo& info) {
  if (info.archs.empty())
    return Error{"NVRTC " + info.version() + " reports no supported architectures"};
  if (std::find(info.archs.begin(), info.archs.end(), arch) != info.archs.end())
    return NvrtcTarget{arch, true};
  if (arch > info.archs.back())
    return NvrtcTarget{info.archs.back(), false};
  for (auto it = info.archs.rbegin(); it != info.archs.rend(); ++it)
    if (*it < arch && *it / 10 == arch / 10)
      return NvrtcTarget{*it, true};
  for (auto it = info.archs.rbegin(); it != info.archs.rend(); ++it)
    if (*it < arch)
      return NvrtcTarget{*it, false};
  return Error{"sm_" + std::to_string(arch) + " is older than every architecture NVRTC " + info.version() +
               " supports (oldest: sm_" + std::to_string(info.archs.front()) + ")"};
}

std::string target_name(const NvrtcTarget& target) {
  return (target.cubin ? "sm_" : "compute_") + std::to_string(target.arch);
}

Result<std::string> nvrtc_compile(const std::string& source, const std::string& program_name,
                                  const std::vector<std::string>& options, bool ptx) {
  nvrtcProgram raw = nullptr;
  nvrtcResult created = nvrtcCreateProgram(&raw, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
  if (created != NVRTC_SUCCESS)
    return Error{nvrtc_error("nvrtcCreateProgram", created)};
  ProgramHandle program(raw);
  std::vector<const char*> option_ptrs;
  for (const std::string& option : options)
    option_ptrs.push_back(option.c_str());
  nvrtcResult compiled = nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(program.get(), &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      if (nvrtcGetProgramLog(program.get(), log.data()) != NVRTC_SUCCESS)
        log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
        log.pop_back();
    }
    return Error{nvrtc_error("nvrtcCompileProgram", compiled) + (log.empty() ? "" : "\n" + log)};
  }
  size_t size = 0;
  nvrtcResult sized = ptx ? nvrtcGetPTXSize(program.get(), &size) : nvrtcGetCUBINSize(program.get(), &size);
  if (sized != NVRTC_SUCCESS)
    return Error{nvrtc_error(ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize", sized)};
  std::string image(size, '\0');
  nvrtcResult got = ptx ? nvrtcGetPTX(program.get(), image.data()) : nvrtcGetCUBIN(program.get(), image.data());
  if (got != NVRTC_SUCCESS)
    return Error{nvrtc_error(ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN", got)};
  return image;
}

std::string first_error_line(const std::string& log, const std::string& source) {
  size_t at = log.find("): error");
  if (at == std::string::npos)
    return "";
  size_t open = log.rfind('(', at);
  if (open == std::string::npos)
    return "";
  int line = 0;
  auto [end, ec] = std::from_chars(log.data() + open + 1, log.data() + at, line);
  if (ec != std::errc() || end != log.data() + at || line <= 0)
    return "";
  std::istringstream lines(source);
  std::string text;
  for (int i = 0; i < line; ++i)
    if (!std::getline(lines, text))
      return "";
  return "  " + std::to_string(line) + " | " + text + "\n";
}

} // namespace fusegen::runtime
