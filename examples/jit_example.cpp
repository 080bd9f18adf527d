// A complete JIT example: load a spec, put tensors on the GPU, call the
// fusion twice (the second call reuses the compiled kernels), read the
// result back. See docs/jit-api.md.
//
//   jit_example [SPEC] [N]
//
// Without SPEC it runs KernelBench level 2 problem 62 at its small shapes
// (Linear -> GroupNorm -> LeakyReLU -> x + x) from the spec text below.
#include "fusegen/Runtime.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr const char* kSpec = R"(
fusion matmul_groupnorm_leakyrelu_sum {
  input  x    : f32[N, 512]
  param  w    : f32[256, 512]
  param  b    : f32[256]
  param  gn_w : f32[256]
  param  gn_b : f32[256]
  h = linear(x, w, b)
  h = group_norm(h, num_groups=8, weight=gn_w, bias=gn_b, eps=1e-5)
  h = leaky_relu(h, negative_slope=0.01)
  output y = h + h
}
)";

std::vector<float> random_values(size_t count, float scale, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> values(count);
  for (float& v : values)
    v = uniform(engine);
  return values;
}

int run(const std::string& spec_path, int64_t n) {
  fusegen::Runtime rt; // device 0; disk cache in ~/.cache/fusegen unless FUSEGEN_CACHE=0
  fusegen::Program prog = spec_path.empty() ? rt.load_string(kSpec, "example.fg") : rt.load_file(spec_path);
  fusegen::Function f = prog.function(prog.function_names().front());
  std::printf("%s on %s (sm_%d)\n", f.signature().c_str(), rt.device_name().c_str(), rt.arch());

  // The example spec's tensors; a different spec needs its own.
  const int64_t in = 512, out = 256;
  std::vector<float> x = random_values(static_cast<size_t>(n * in), 1.0f, 1);
  std::vector<float> w = random_values(static_cast<size_t>(out * in), 0.044f, 2); // ~1/sqrt(512)
  std::vector<float> b = random_values(static_cast<size_t>(out), 0.044f, 3);
  std::vector<float> gn_w(static_cast<size_t>(out), 1.0f), gn_b(static_cast<size_t>(out), 0.0f);

  auto upload = [&](const std::vector<float>& host) {
    fusegen::DeviceBuffer buffer = rt.allocate(host.size() * sizeof(float));
    rt.copy_to_device(buffer.data(), host.data(), buffer.bytes());
    return buffer;
  };
  fusegen::DeviceBuffer dx = upload(x), dw = upload(w), db = upload(b), dgw = upload(gn_w), dgb = upload(gn_b);
  fusegen::DeviceBuffer dy = rt.allocate(static_cast<size_t>(n * out) * sizeof(float));

  for (int i = 0; i < 2; ++i)
    f.call({{"x", dx.data(), {n, in}},
            {"w", dw.data(), {out, in}},
            {"b", db.data(), {out}},
            {"gn_w", dgw.data(), {out}},
            {"gn_b", dgb.data(), {out}}},
           {{"y", dy.data(), {n, out}}},
           /*stream=*/nullptr);
  rt.synchronize();

  std::vector<float> y(static_cast<size_t>(n * out));
  rt.copy_to_host(y.data(), dy.data(), y.size() * sizeof(float));
  std::printf("y[0..3] = %g %g %g %g\n", y[0], y[1], y[2], y[3]);
  fusegen::Stats stats = rt.stats();
  std::printf("compiles %llu, disk loads %llu, in-memory hits %llu\n", static_cast<unsigned long long>(stats.compiles),
              static_cast<unsigned long long>(stats.disk_loads), static_cast<unsigned long long>(stats.memory_hits));
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::string spec = argc > 1 ? argv[1] : "";
  int64_t n = argc > 2 ? std::atoll(argv[2]) : 128;
  try {
    return run(spec, n);
  } catch (const fusegen::RuntimeError& error) {
    std::fprintf(stderr, "jit_example: %s error: %s\n", fusegen::error_kind_name(error.kind()), error.what());
    return 1;
  }
}
