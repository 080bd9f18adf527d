// How one generated fusion is launched: what each slot of the kernel argument
// block points to, the fills and kernels in launch order (grid, block,
// dynamic shared memory), where each workspace buffer lives and the outputs
// copied after the kernels. One description in two forms: with sizes as dim
// expressions (SymbolicLaunchPlan; the code generator builds it and prints
// the host launcher from it) and with sizes as numbers (LaunchPlan, evaluated
// from it once every dim is constant; what the JIT runtime launches and its
// disk cache stores).
#pragma once

#include "fusegen/Result.h"
#include "fusegen/SizeExpr.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fusegen {

// What args.buf[i] points to.
struct BufferBinding {
  enum class Role : uint8_t { Argument = 0, Output = 1, Workspace = 2 };
  Role role = Role::Workspace;
  std::string name; // argument or output name; the plan's name for workspace buffers
  friend bool operator==(const BufferBinding&, const BufferBinding&) = default;
};

// fusegen_fill(args.buf[buffer], value, count) before a kernel.
template <class Size> struct FillLaunchOf {
  uint32_t buffer = 0;
  uint32_t value_bits = 0; // the float's bits, so NaN and -0.0 survive
  Size count = {};         // floats
  friend bool operator==(const FillLaunchOf&, const FillLaunchOf&) = default;
};

template <class Size> struct KernelLaunchOf {
  std::string name; // extern "C" symbol
  uint8_t kind = 0; // KernelKind, for messages
  std::array<Size, 3> grid = {};
  int32_t block = 0;
  int64_t shared_bytes = 0;
  std::vector<FillLaunchOf<Size>> fills; // launched before the kernel, in order
  friend bool operator==(const KernelLaunchOf&, const KernelLaunchOf&) = default;
};

template <class Size> struct WorkspaceBindingOf {
  uint32_t buffer = 0;
  Size offset = {}; // bytes from the workspace base, 256-aligned
  Size bytes = {};
  friend bool operator==(const WorkspaceBindingOf&, const WorkspaceBindingOf&) = default;
};

// An output that has no buffer of its own (it is an argument, or the same
// value as another output): copied from `buffer` after the kernels.
template <class Size> struct OutputCopyOf {
  std::string output;
  uint32_t buffer = 0;
  Size bytes = {};
  friend bool operator==(const OutputCopyOf&, const OutputCopyOf&) = default;
};

template <class Size> struct LaunchPlanOf {
  std::string fusion;
  std::vector<BufferBinding> buffers;   // index = args.buf index
  std::vector<std::string> dim_symbols; // args.dim[i]; empty once specialized
  std::vector<KernelLaunchOf<Size>> kernels;
  std::vector<WorkspaceBindingOf<Size>> workspace;
  Size workspace_bytes = {};
  std::vector<OutputCopyOf<Size>> copies;
  friend bool operator==(const LaunchPlanOf&, const LaunchPlanOf&) = default;
};

using SymbolicLaunchPlan = LaunchPlanOf<SizeExpr>;
using LaunchPlan = LaunchPlanOf<int64_t>;
using FillLaunch = FillLaunchOf<int64_t>;
using KernelLaunchPlan = KernelLaunchOf<int64_t>;
using WorkspaceBinding = WorkspaceBindingOf<int64_t>;
using OutputCopy = OutputCopyOf<int64_t>;

// The plan with every size a number. Fails (an internal error naming the
// size) if one is not, i.e. the fusion was not specialized.
Result<LaunchPlan> evaluate_launch_plan(const SymbolicLaunchPlan& plan);

} // namespace fusegen
