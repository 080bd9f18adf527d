// CUDA code generation: plans -> one self-contained .cu (kernels, device
// helpers, host launchers) plus a header, and each fusion's launch plan
// (LaunchPlan.h), from which the host launcher is printed and which the JIT
// runtime evaluates. Deterministic: the same plans and options give identical bytes.
#pragma once

#include "fusegen/KernelLimits.h"
#include "fusegen/LaunchPlan.h"
#include "fusegen/Plan.h"
#include "fusegen/Result.h"
#include "fusegen/SizeExpr.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusegen {

// Limits of the kernel argument block shared by every generated kernel.
inline constexpr int kMaxKernelBuffers = kFusegenMaxBuffers;
inline constexpr int kMaxKernelDims = kFusegenMaxDims;

// A GEMM kernel's block: rows x columns of the output per thread block, and
// split_k > 1: that many blocks (a thread-block cluster, sm_90) share each
// output block, each multiplying a share of the depth (split-K).
struct GemmBlock {
  int rows = 0, cols = 0;
  int split_k = 1;
  bool operator==(const GemmBlock&) const = default;
};

// The blocks the GEMM template supports, largest first, and its splits: the
// autotuner's candidates. Which of them a kernel can take depends on its
// operands, precision, arch and extents (docs/kernels-gemm.md).
inline constexpr GemmBlock kGemmBlocks[] = {{128, 256}, {128, 128}, {128, 64}, {64, 64}};
inline constexpr int kGemmSplits[] = {1, 2, 4, 8};

// "128x64", or "64x64:8" with split-K.
std::string format_gemm_block(const GemmBlock& block);

struct CodegenOptions {
  int arch = 90;                      // sm_XY as XY; 80 and above
  std::optional<Precision> precision; // overrides each fusion's own
  std::string source_name = "spec";   // for the file comment
  // Every GEMM kernel takes this block instead of the heuristic's choice; a
  // block a kernel cannot take is an error naming it. Set by autotuning.
  std::optional<GemmBlock> gemm_block;
  // Strict GEMMs multiply this way where they can instead of the target's
  // choice (FP16x3 where the target lacks it is 3xTF32).
  std::optional<StrictProduct> strict_product;
  // Offline files (`fusegen generate`): an #error stops nvcc's device pass
  // for any architecture but the target's (__CUDA_ARCH__ 900 for sm_90a),
  // since the kernels are planned for that target alone.
  // The runtime compiles what it generated for its own target and leaves it
  // out.
  bool arch_guard = false;
};

// A buffer filled with a constant before a kernel runs (e.g. +inf before a
// row minimum accumulated with atomics).
struct BufferFill {
  BufferId buffer = 0;
  float value = 0;
};

struct KernelLaunch {
  std::string name; // C symbol
  KernelKind kind = KernelKind::Elementwise;
  std::string template_file; // what it was generated from, e.g. "gemm.cu"
  std::array<SizeExpr, 3> grid;
  int block = 0;            // threads per block (1-D)
  int64_t shared_bytes = 0; // dynamic shared memory
  int cluster = 1;          // blocks per thread-block cluster along x (compiled in; > 1 for split-K)
  // What the emitter chose where it had a choice (`fusegen plan` prints it),
  // e.g. "128x128 blocks, fp16x3 products".
  std::string variant;
  std::vector<BufferFill> fills;
};

// Where each workspace buffer lives: byte offset from the workspace base,
// 256-byte aligned.
struct WorkspaceSlot {
  BufferId buffer = 0;
  SizeExpr offset;
  SizeExpr bytes;
};

struct GeneratedFusion {
  std::string name;
  Precision precision = Precision::Strict;
  std::vector<std::string> dim_symbols;  // args.dim[i] holds dim_symbols[i]
  std::vector<std::string> buffer_names; // args.buf[i] is buffer i of the plan
  std::vector<KernelLaunch> kernels;     // in launch order
  std::vector<WorkspaceSlot> workspace;
  SizeExpr workspace_bytes;
  // The launch sequence (buffers, fills, kernels, workspace, output copies)
  // with sizes over the dims: the host launcher is printed from it.
  SymbolicLaunchPlan launch;
};

struct GeneratedCode {
  std::string source; // the .cu
  std::string header; // launcher declarations
  std::vector<GeneratedFusion> fusions;
};

// Generates code for the plans (one per fusion of a spec). Errors (an op or
// shape no kernel template supports) name the fusion and node.
Result<GeneratedCode> generate_cuda(const std::vector<Plan>& plans, const CodegenOptions& options);

} // namespace fusegen
