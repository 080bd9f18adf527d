// Helpers of the code generation tests: see CodegenTesting.h.
#include "support/CodegenTesting.h"

#include "fusegen/Frontend.h"
#include "support/Nvrtc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace fusegen::testing {

// Plans of every fusion of a spec; each specialized with the bindings of its
// own symbols when `dims` is not empty.
std::vector<Plan> plans_of(const std::string& text, const DimBindings& dims) {
  SourceManager sources;
  uint32_t file = sources.add_buffer("test.fg", text);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  EXPECT_TRUE(module) << diags.render(sources);
  if (!module)
    return {};
  std::vector<Plan> plans;
  for (const Fusion& fusion : module->fusions) {
    if (dims.empty()) {
      plans.push_back(plan_fusion(fusion));
      continue;
    }
    DimBindings own;
    for (const std::string& symbol : fusion.symbols())
      if (dims.count(symbol))
        own[symbol] = dims.at(symbol);
    std::optional<Fusion> concrete = specialize(fusion, own, diags);
    EXPECT_TRUE(concrete) << diags.render(sources);
    if (concrete)
      plans.push_back(plan_fusion(*concrete));
  }
  return plans;
}

GeneratedCode generate(const std::vector<Plan>& plans, Precision precision, int arch,
                       std::optional<StrictProduct> strict_product) {
  CodegenOptions options;
  options.source_name = "test.fg";
  options.precision = precision;
  options.arch = arch;
  options.strict_product = strict_product;
  Result<GeneratedCode> code = generate_cuda(plans, options);
  EXPECT_TRUE(code) << code.error();
  return code ? code.value() : GeneratedCode{};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of one kernel's template instance.
std::string kernel_text(const GeneratedCode& code, const std::string& kernel) {
  std::string open = "namespace fusegen_" + kernel + "_impl {";
  std::string close = "} // namespace fusegen_" + kernel + "_impl";
  size_t begin = code.source.find(open), end = code.source.find(close);
  EXPECT_NE(begin, std::string::npos) << kernel;
  if (begin == std::string::npos || end == std::string::npos)
    return "";
  return code.source.substr(begin, end - begin);
}

// The helpers and the GEMM kernels of a generated file, without the other
// kinds' kernels and the host launchers: what this suite is about.
std::string gemm_source(const GeneratedCode& code) {
  const std::string marker = "\nnamespace fusegen_";
  size_t first = code.source.find(marker);
  std::string out = code.source.substr(0, first);
  for (size_t at = first; at != std::string::npos; at = code.source.find(marker, at + 1)) {
    size_t end = code.source.find("\n} // namespace fusegen_", at);
    std::string block = code.source.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (contains(block, "gemm_main(args);"))
      out += block + "\n} // namespace\n";
  }
  return out;
}

size_t gemm_kernel_count(const GeneratedCode& code) {
  size_t count = 0;
  for (const GeneratedFusion& fusion : code.fusions)
    for (const KernelLaunch& launch : fusion.kernels)
      count += launch.kind == KernelKind::Gemm ? 1 : 0;
  return count;
}

// NVRTC for sm_80 and sm_90; specialized variants (`all_archs` false) for
// sm_90 only, to keep the suite's compile time down.
void expect_compiles(const std::string& source, const std::string& what, bool all_archs) {
  if (!have_nvrtc())
    return;
  for (int arch : {80, 90}) {
    if (!all_archs && arch != 90)
      continue;
    EXPECT_EQ(nvrtc_compile(source, what + ".cu", arch), "") << what << " for sm_" << arch;
  }
}

// nvcc -Werror all-warnings and no register spills reported by ptxas (one
// line per kernel); skipped without nvcc.
void expect_nvcc_clean(const std::string& source, const std::string& what, size_t kernels) {
#ifdef FUSEGEN_NVCC_PATH
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("fusegen_codegen_gemm_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / (what + ".cu"), log = dir / (what + ".log");
  std::ofstream(file) << source;
  std::string command = std::string(FUSEGEN_NVCC_PATH) + " -arch=sm_90a -Werror all-warnings -Xptxas -v -c " +
                        file.string() + " -o " + (dir / (what + ".o")).string() + " > " + log.string() + " 2>&1";
  int status = std::system(command.c_str());
  std::string text = read_file(log.string());
  EXPECT_EQ(status, 0) << what << ":\n" << text;
  size_t reports = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (contains(line, "bytes spill")) {
      ++reports;
      EXPECT_TRUE(contains(line, " 0 bytes spill stores, 0 bytes spill loads")) << what << ": " << line;
    }
  EXPECT_GE(reports, kernels) << what << ": ptxas reported fewer kernels than expected\n" << text;
  fs::remove_all(dir);
#else
  (void)source;
  (void)what;
  (void)kernels;
#endif
}

// The plans' GEMM kernels generated for sm_90 compile for sm_90 (NVRTC and
// nvcc) and, with all_archs, generated for sm_80 compile for sm_80 (sm_90
// code may use thread-block clusters).
void expect_gemm_compiles(const std::vector<Plan>& plans, Precision precision, const std::string& what,
                          bool all_archs) {
  GeneratedCode code = generate(plans, precision);
  std::string source = gemm_source(code);
  EXPECT_FALSE(contains(source, "FUSEGEN_HOOK(\"")) << "hook annotation left";
  EXPECT_FALSE(contains(source, " fusegen_gemm(")) << "entry not renamed";
  expect_compiles(source, what, /*all_archs=*/false);
  if (all_archs && have_nvrtc()) {
    EXPECT_EQ(nvrtc_compile(gemm_source(generate(plans, precision, 80)), what + ".cu", 80), "") << what << " for sm_80";
  }
  expect_nvcc_clean(source, what, gemm_kernel_count(code));
}

const KernelLaunch& launch_of(const GeneratedCode& code, size_t fusion, size_t kernel) {
  return code.fusions.at(fusion).kernels.at(kernel);
}

// The launch of `kernel` (its name without "fusegen_"): a GEMM can come
// after a pass that splits its weight (`kernel` a C string: see op_named).
const KernelLaunch& launch_named(const GeneratedCode& code, size_t fusion, const char* kernel) {
  for (const KernelLaunch& launch : code.fusions.at(fusion).kernels)
    if (launch.name == "fusegen_" + std::string(kernel))
      return launch;
  ADD_FAILURE() << "no launch of " << kernel;
  return code.fusions.at(fusion).kernels.at(0);
}

std::vector<KernelKind> kinds_of(const Plan& plan) {
  std::vector<KernelKind> kinds;
  for (const KernelStep& step : plan.kernels)
    kinds.push_back(step.kind);
  return kinds;
}

// The value of the constant hook `constexpr int|bool <name> = <value>;` (a
// line of its own) in a kernel's text, or "missing" (with a failure).
std::string constant_of(const std::string& kernel, const std::string& name) {
  for (const char* type : {"int", "bool"}) {
    std::string key = std::string("\nconstexpr ") + type + " " + name + " = ";
    if (size_t at = kernel.find(key); at != std::string::npos) {
      at += key.size();
      return kernel.substr(at, kernel.find(';', at) - at);
    }
  }
  ADD_FAILURE() << "no constant " << name << " in the kernel";
  return "missing";
}

// The template variant a kernel was emitted with, as one comparable line:
// inner product, block, slice depth, pipeline stages, 16-byte loads of A / B,
// and the split-K where there is one.
std::string variant_of(const std::string& kernel) {
  std::string split = constant_of(kernel, "kSplitK");
  return "inner " + constant_of(kernel, "kInnerProduct") + ", block " + constant_of(kernel, "kBlockM") + "x" +
         constant_of(kernel, "kBlockN") + ", tile_k " + constant_of(kernel, "kTileK") + ", stages " +
         constant_of(kernel, "kStages") + ", vectors " + constant_of(kernel, "kAVector") + "/" +
         constant_of(kernel, "kBVector") + (split == "1" ? "" : ", split " + split);
}

// The launch's dynamic shared memory is the kernel's kDynamicSharedFloats
// floats (nonzero: tensor cores); the host launcher launches with it and,
// above the default 48 KiB, first raises the kernel's limit to it.
void expect_dynamic_shared_memory(const GeneratedCode& code, size_t fusion, const std::string& kernel) {
  const KernelLaunch& launch = launch_named(code, fusion, kernel.c_str());
  std::string floats = constant_of(kernel_text(code, kernel), "kDynamicSharedFloats");
  EXPECT_EQ(std::to_string(launch.shared_bytes), std::to_string(std::stoll(floats) * 4))
      << kernel << ": launch.shared_bytes vs kDynamicSharedFloats = " << floats << " floats";
  EXPECT_GT(launch.shared_bytes, 0) << kernel << ": tensor cores use dynamic shared memory";
  std::string bytes = std::to_string(launch.shared_bytes);
  std::string raise = "::fusegen_" + kernel + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " + bytes + ");";
  EXPECT_EQ(contains(code.source, raise), launch.shared_bytes > 48 * 1024)
      << kernel << ": cudaFuncSetAttribute to " << bytes << " bytes expected only above 48 KiB";
  size_t call = code.source.find("::fusegen_" + kernel + "<<<");
  std::string line = call == std::string::npos ? "" : code.source.substr(call, code.source.find('\n', call) - call);
  EXPECT_TRUE(contains(line, "dim3(256), " + bytes + ", stream>>>"))
      << kernel << ": expected a launch with " << bytes << " bytes, got: " << line;
}

} // namespace fusegen::testing
