// Helpers for the GPU tests: skipping without a GPU, and running a fusion on
// the device with given host inputs.
#pragma once

#include "fusegen/HostTensor.h"
#include "fusegen/Interpreter.h"
#include "fusegen/Runtime.h"

#include <map>
#include <string>
#include <vector>

namespace fusegen::testing {

// Why no CUDA device can be used here, or empty when one can.
std::string gpu_unavailable();

struct DeviceResult {
  std::map<std::string, std::vector<float>> outputs;
  std::map<std::string, std::vector<float>> state;
};

// Copies `inputs` to the device, poisons the outputs with NaN, calls `f`
// on `stream`, synchronizes and copies every output and state tensor back.
DeviceResult run_on_device(Runtime& rt, const Function& f, const Fusion& concrete,
                           const std::map<std::string, HostTensor>& inputs, void* stream = nullptr);

// EXPECTs every output and state tensor of `got` within atol = rtol = `tol`
// of the reference; failures start with `context`. Returns each tensor's
// comparison summary by "output_<name>" / "state_<name>" (for RecordProperty).
std::map<std::string, std::string> expect_matches_reference(const DeviceResult& got, const InterpreterResult& want,
                                                            double tol, const std::string& context);

} // namespace fusegen::testing

#define FUSEGEN_SKIP_WITHOUT_GPU()                                                                                     \
  do {                                                                                                                 \
    std::string fusegen_why_ = ::fusegen::testing::gpu_unavailable();                                                  \
    if (!fusegen_why_.empty())                                                                                         \
      GTEST_SKIP() << "skipped: no GPU (" << fusegen_why_ << ")";                                                      \
  } while (0)
