// An outside consumer of the installed fusegen package (C++ API): loads a
// spec, prints the fusion's signature and, on a machine with a GPU, runs it
// and checks the result. Without a GPU it says so and succeeds, since the
// point there is that the package builds, links and loads specs.
#include "fusegen/Runtime.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr const char* kSpec = R"(
fusion scale_relu {
  input x : f32[N, 64]
  output y = relu(x) * 2.0
}
)";

int run() {
  fusegen::RuntimeOptions options;
  options.disk_cache = false;
  fusegen::Runtime runtime(0, options);
  fusegen::Function f = runtime.load_string(kSpec, "consumer.fg").function("scale_relu");
  std::printf("consumer: %s\n", f.signature().c_str());
  const int64_t n = 3;
  std::vector<std::vector<int64_t>> shapes = f.output_shapes({{"x", nullptr, {n, 64}}});
  std::printf("consumer: output y has %zu dims for N=%lld\n", shapes.at(0).size(), static_cast<long long>(n));

  std::vector<float> x(static_cast<size_t>(n * 64));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 7) - 3.0f;
  fusegen::DeviceBuffer dx, dy;
  try {
    dx = runtime.allocate(x.size() * sizeof(float));
    dy = runtime.allocate(x.size() * sizeof(float));
  } catch (const fusegen::RuntimeError& e) {
    if (e.kind() != fusegen::ErrorKind::NoDriver)
      throw;
    std::printf("consumer: no GPU here (%s); loading and shape checks passed\n", e.what());
    return 0;
  }
  runtime.copy_to_device(dx.data(), x.data(), x.size() * sizeof(float));
  f.call({{"x", dx.data(), {n, 64}}}, {{"y", dy.data(), {n, 64}}});
  std::vector<float> y(x.size());
  runtime.copy_to_host(y.data(), dy.data(), y.size() * sizeof(float));
  for (size_t i = 0; i < x.size(); ++i)
    if (std::fabs(y[i] - 2.0f * std::fmax(x[i], 0.0f)) > 1e-6f) {
      std::printf("consumer: wrong result at %zu: %g\n", i, static_cast<double>(y[i]));
      return 1;
    }
  std::printf("consumer: ran on %s, results correct\n", runtime.device_name().c_str());
  return 0;
}

} // namespace

int main() {
  try {
    return run();
  } catch (const fusegen::RuntimeError& e) {
    std::fprintf(stderr, "consumer: error (%s): %s\n", fusegen::error_kind_name(e.kind()), e.what());
    return 1;
  }
}
