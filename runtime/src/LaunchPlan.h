// Everything needed to launch one specialized fusion from a loaded module,
// with every size a number: what the disk cache stores next to the cubin and
// what a launch reads. Built from the planner's buffers and the generator's
// launch metadata (Codegen.h); mirrors the host launcher the generator writes.
#pragma once

#include "fusegen/Codegen.h"
#include "fusegen/Plan.h"
#include "fusegen/Result.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fusegen::runtime {

// What args.buf[i] points to.
struct BufferBinding {
  enum class Role : uint8_t { Argument = 0, Output = 1, Workspace = 2 };
  Role role = Role::Workspace;
  std::string name; // argument or output name; the plan's name for workspace buffers
  friend bool operator==(const BufferBinding&, const BufferBinding&) = default;
};

// fusegen_fill(args.buf[buffer], value, count) before a kernel.
struct FillLaunch {
  uint32_t buffer = 0;
  uint32_t value_bits = 0; // the float's bits, so NaN and -0.0 survive
  int64_t count = 0;
  friend bool operator==(const FillLaunch&, const FillLaunch&) = default;
};

struct KernelLaunchPlan {
  std::string name; // extern "C" symbol
  uint8_t kind = 0; // KernelKind, for messages
  std::array<int64_t, 3> grid = {1, 1, 1};
  int32_t block = 0;
  int64_t shared_bytes = 0;
  std::vector<FillLaunch> fills;
  friend bool operator==(const KernelLaunchPlan&, const KernelLaunchPlan&) = default;
};

struct WorkspaceBinding {
  uint32_t buffer = 0;
  int64_t offset = 0; // bytes from the workspace base, 256-aligned
  int64_t bytes = 0;
  friend bool operator==(const WorkspaceBinding&, const WorkspaceBinding&) = default;
};

// An output that has no buffer of its own (it is an argument, or the same
// value as another output): copied from `buffer` after the kernels.
struct OutputCopy {
  std::string output;
  uint32_t buffer = 0;
  int64_t bytes = 0;
  friend bool operator==(const OutputCopy&, const OutputCopy&) = default;
};

struct LaunchPlan {
  std::string fusion;
  std::vector<BufferBinding> buffers;   // index = args.buf index
  std::vector<std::string> dim_symbols; // args.dim[i]; empty once specialized
  std::vector<KernelLaunchPlan> kernels;
  std::vector<WorkspaceBinding> workspace;
  int64_t workspace_bytes = 0;
  std::vector<OutputCopy> copies;
  friend bool operator==(const LaunchPlan&, const LaunchPlan&) = default;
};

// Fails (an internal error) if a size is not a number, i.e. the plan was not
// specialized, or if the plan exceeds the kernel argument block.
Result<LaunchPlan> make_launch_plan(const Plan& plan, const GeneratedFusion& generated);

} // namespace fusegen::runtime
