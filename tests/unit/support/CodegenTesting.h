// Helpers of the code generation tests (test_codegen_gemm.cpp,
// test_codegen_skinny_gemm.cpp, test_codegen_reduce.cpp): plans of a spec,
// generated code, a kernel's text and hook constants, and compiling the GEMM
// kernels with NVRTC and nvcc.
#pragma once

#include "fusegen/Codegen.h"
#include "fusegen/Planner.h"
#include "fusegen/Specialize.h"

#include <cstddef>
#include <string>
#include <vector>

namespace fusegen::testing {

// Plans of every fusion of a spec; each specialized with the bindings of its
// own symbols when `dims` is not empty.
std::vector<Plan> plans_of(const std::string& text, const DimBindings& dims = {});
GeneratedCode generate(const std::vector<Plan>& plans, Precision precision = Precision::Strict, int arch = 90,
                       std::optional<StrictProduct> strict_product = std::nullopt);
bool contains(const std::string& text, const std::string& part);
std::string read_file(const std::string& path);
// The text of one kernel's template instance.
std::string kernel_text(const GeneratedCode& code, const std::string& kernel);
// The helpers and the GEMM kernels of a generated file (every kernel whose
// main is a *gemm_main), without the other kernels and the host launchers.
std::string gemm_source(const GeneratedCode& code);
size_t gemm_kernel_count(const GeneratedCode& code);
// NVRTC for sm_80 and sm_90; `all_archs` false: sm_90 only.
void expect_compiles(const std::string& source, const std::string& what, bool all_archs = true);
// nvcc -Werror all-warnings and no register spills reported by ptxas (one
// line per kernel); nothing without nvcc.
void expect_nvcc_clean(const std::string& source, const std::string& what, size_t kernels);
// The plans' GEMM kernels generated for sm_90 compile for sm_90 (NVRTC and
// nvcc) and, with all_archs, generated for sm_80 compile for sm_80.
void expect_gemm_compiles(const std::vector<Plan>& plans, Precision precision, const std::string& what, bool all_archs);
const KernelLaunch& launch_of(const GeneratedCode& code, size_t fusion, size_t kernel);
// The launch of `kernel` (its name without "fusegen_").
const KernelLaunch& launch_named(const GeneratedCode& code, size_t fusion, const char* kernel);
std::vector<KernelKind> kinds_of(const Plan& plan);
// The value of the constant hook `constexpr int|bool <name> = <value>;` in a
// kernel's text, or "missing" (with a failure).
std::string constant_of(const std::string& kernel, const std::string& name);
// gemm.cu's variant as one comparable line: inner product, block, slice
// depth, stages, 16-byte loads of A / B, split-K.
std::string variant_of(const std::string& kernel);
// The launch's dynamic shared memory is the kernel's kDynamicSharedFloats
// floats, and the host launcher raises the limit above 48 KiB.
void expect_dynamic_shared_memory(const GeneratedCode& code, size_t fusion, const std::string& kernel);

} // namespace fusegen::testing
