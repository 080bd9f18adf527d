// Test helper: compiles CUDA source with NVRTC (options from
// fusegen::nvrtc_options) and returns the log on failure. Without the CUDA
// toolkit, tests that need it skip with a visible message.
#pragma once

#include "fusegen/NvrtcOptions.h"

#include <string>

namespace fusegen::testing {

bool have_nvrtc();
// Empty on success; otherwise "NVRTC failed:" and the log. `helpers` is the
// text offered as "helpers.cu" for templates compiled alone.
std::string nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          Precision precision = Precision::Strict, const std::string& helpers = "");

} // namespace fusegen::testing

#define FUSEGEN_SKIP_WITHOUT_NVRTC()                                                               \
  do {                                                                                             \
    if (!::fusegen::testing::have_nvrtc())                                                         \
      GTEST_SKIP() << "skipped: no CUDA toolkit (NVRTC) on this machine";                          \
  } while (0)
