#include "support/GpuSupport.h"

#include "support/TestSupport.h"

#include <gtest/gtest.h>

#include <limits>

namespace fusegen::testing {

std::string gpu_unavailable() {
  static const std::string why = [] {
    try {
      RuntimeOptions options;
      options.disk_cache = false;
      Runtime rt(0, options);
      (void)rt.device_name();
      return std::string();
    } catch (const RuntimeError& error) {
      return std::string(error.what());
    }
  }();
  return why;
}

DeviceResult run_on_device(Runtime& rt, const Function& f, const Fusion& concrete,
                           const std::map<std::string, HostTensor>& inputs, void* stream) {
  std::vector<DeviceBuffer> memory;
  std::vector<TensorArg> arguments;
  for (ValueId id : concrete.arguments) {
    const Value& arg = concrete.value(id);
    const HostTensor& tensor = inputs.at(arg.name);
    std::vector<float> host(tensor.data.begin(), tensor.data.end());
    memory.push_back(rt.allocate(host.size() * sizeof(float)));
    rt.copy_to_device(memory.back().data(), host.data(), memory.back().bytes());
    arguments.push_back({arg.name, memory.back().data(), tensor.shape});
  }
  std::vector<TensorOut> outputs;
  for (const FusionOutput& output : concrete.outputs) {
    std::vector<int64_t> shape;
    for (const Dim& d : concrete.value(output.value).type.shape)
      shape.push_back(d.value());
    size_t count = static_cast<size_t>(numel_of(shape));
    memory.push_back(rt.allocate(count * sizeof(float)));
    rt.fill(memory.back().data(), std::numeric_limits<float>::quiet_NaN(), count);
    outputs.push_back({output.name, memory.back().data(), shape});
  }
  f.call(arguments, outputs, stream);
  rt.synchronize(stream);
  DeviceResult result;
  auto download = [&](const void* device, const std::vector<int64_t>& shape) {
    std::vector<float> host(static_cast<size_t>(numel_of(shape)));
    rt.copy_to_host(host.data(), device, host.size() * sizeof(float));
    return host;
  };
  for (const TensorOut& out : outputs)
    result.outputs[out.name] = download(out.data, out.shape);
  for (const TensorArg& arg : arguments)
    if (concrete.find_argument(arg.name)->kind == ValueKind::State)
      result.state[arg.name] = download(arg.data, arg.shape);
  return result;
}

std::map<std::string, std::string> expect_matches_reference(const DeviceResult& got, const InterpreterResult& want,
                                                            double tol, const std::string& context) {
  std::map<std::string, std::string> summaries;
  auto check = [&](const char* kind, const std::map<std::string, std::vector<float>>& device,
                   const std::map<std::string, HostTensor>& reference) {
    for (const auto& [name, tensor] : reference) {
      Comparison cmp = compare_to_reference(device.at(name), tensor, tol, tol);
      EXPECT_EQ(cmp.mismatches, 0u) << context << " " << kind << " " << name << ": " << cmp.summary();
      summaries[std::string(kind) + "_" + name] = cmp.summary();
    }
  };
  check("output", got.outputs, want.outputs);
  check("state", got.state, want.state);
  return summaries;
}

} // namespace fusegen::testing
