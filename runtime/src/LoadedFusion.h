// One specialized fusion loaded into a CUDA context: its module, kernel
// handles and workspaces, and the launch sequence the generated host
// launcher would run (fills, kernels, output copies), through the driver API.
#pragma once

#include "CacheEntry.h"
#include "Device.h"
#include "DriverApi.h"

#include "fusegen/IR.h"

#include <array>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace fusegen::runtime {

class LoadedFusion {
public:
  // Loads `entry`'s image into `context` (which must be current) and looks up
  // every kernel. Throws RuntimeError (Driver, or Compile for launch shapes
  // the device cannot run).
  LoadedFusion(const DriverApi& api, CUcontext context, const DeviceInfo& device, const CacheEntry& entry,
               const Fusion& concrete);
  ~LoadedFusion();
  LoadedFusion(const LoadedFusion&) = delete;
  LoadedFusion& operator=(const LoadedFusion&) = delete;

  // Shapes of the specialized fusion's arguments and outputs, in order.
  const std::vector<std::vector<int64_t>>& argument_shapes() const { return argument_shapes_; }
  const std::vector<std::vector<int64_t>>& output_shapes() const { return output_shapes_; }

  // Enqueues the fusion on `stream`. `arguments` and `outputs` are device
  // addresses in the fusion's argument and output order (all of them). The
  // context must be current.
  void launch(std::span<const CUdeviceptr> arguments, std::span<const CUdeviceptr> outputs, CUstream stream);

  // Frees the workspace kept for `stream` (not the per-thread default
  // stream), whose work must have finished: for a stream about to be
  // destroyed, such as autotuning's.
  void release_workspace(CUstream stream);

private:
  struct Kernel {
    CUfunction function = nullptr;
    const KernelLaunchPlan* plan = nullptr;
  };
  // The workspace for work on `stream`: one per stream (and per thread for
  // the per-thread default stream), so concurrent calls never share one.
  CUdeviceptr workspace_for(CUstream stream);
  // One launch on `stream`; `dependent`: as a programmatic dependent launch.
  void launch_kernel(CUfunction function, const std::array<unsigned, 3>& grid, unsigned block, unsigned shared_bytes,
                     CUstream stream, void** params, bool dependent);

  const DriverApi& api_;
  CUcontext context_;
  LaunchPlan plan_;
  // sm_90 and later: the kernels after the first of a call are launched as
  // programmatic dependents (each waits for the one before it on the GPU,
  // not behind it in the launch queue).
  bool dependent_launches_ = false;
  std::vector<std::vector<int64_t>> argument_shapes_;
  std::vector<std::vector<int64_t>> output_shapes_;
  std::vector<int> buffer_source_;     // per args.buf index: argument index, or -1 - output index, or kWorkspace
  std::vector<int64_t> buffer_offset_; // workspace offset of workspace buffers
  std::vector<size_t> copy_output_;    // per output copy: the output's index
  CUmodule module_ = nullptr;
  CUfunction fill_ = nullptr;
  std::vector<Kernel> kernels_;

  std::mutex workspace_mutex_;
  std::map<std::pair<CUstream, uint64_t>, CUdeviceptr> workspaces_; // (stream, thread serial or 0)
};

} // namespace fusegen::runtime
