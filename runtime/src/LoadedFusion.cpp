#include "LoadedFusion.h"

#include "fusegen/KernelLimits.h"
#include "fusegen/Runtime.h"
#include "fusegen/Target.h"

#include <atomic>
#include <bit>
#include <cassert>
#include <limits>

namespace fusegen::runtime {
namespace {

constexpr int kWorkspaceSource = std::numeric_limits<int>::max();
constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;
constexpr int kFillBlock = 256;
constexpr int kDefaultSharedLimit = 48 * 1024; // beyond this a kernel must opt in

// The host image of the generated FusegenArgs (templates/helpers.cu).
struct FusegenArgsHost {
  unsigned long long buf[kFusegenMaxBuffers];
  long long dim[kFusegenMaxDims];
};
static_assert(sizeof(FusegenArgsHost) == 8 * kFusegenMaxBuffers + 8 * kFusegenMaxDims,
              "must match FusegenArgs in templates/helpers.cu (no padding)");

std::vector<int64_t> concrete_shape(const Shape& shape) {
  std::vector<int64_t> out;
  for (const Dim& d : shape)
    out.push_back(d.is_constant() ? d.value() : -1);
  return out;
}

// Never reused (unlike std::thread::id): a new thread must not inherit the
// workspace of an exited one whose work may still be running.
uint64_t this_thread_serial() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t serial = next++;
  return serial;
}

bool supports_dependent_launches(int arch) {
  Result<Target> target = target_for_arch(arch);
  return target && target.value().dependent_launches;
}

} // namespace

LoadedFusion::LoadedFusion(const DriverApi& api, CUcontext context, const DeviceInfo& device, const CacheEntry& entry,
                           const Fusion& concrete)
    : api_(api), context_(context), plan_(entry.launch), dependent_launches_(supports_dependent_launches(device.arch)) {
  for (ValueId id : concrete.arguments)
    argument_shapes_.push_back(concrete_shape(concrete.value(id).type.shape));
  for (const FusionOutput& output : concrete.outputs)
    output_shapes_.push_back(concrete_shape(concrete.value(output.value).type.shape));

  // Specialized code bakes every dim in; args.dim stays zero.
  if (!plan_.dim_symbols.empty())
    throw RuntimeError(ErrorKind::Compile,
                       "internal error: fusion '" + plan_.fusion + "' still has symbolic dims after specialization");
  // Where each args.buf slot points: a caller's argument or output, or the workspace.
  for (const BufferBinding& binding : plan_.buffers) {
    int source = kWorkspaceSource;
    if (binding.role == BufferBinding::Role::Argument) {
      for (size_t i = 0; i < concrete.arguments.size(); ++i)
        if (concrete.value(concrete.arguments[i]).name == binding.name)
          source = static_cast<int>(i);
    } else if (binding.role == BufferBinding::Role::Output) {
      for (size_t i = 0; i < concrete.outputs.size(); ++i)
        if (concrete.outputs[i].name == binding.name)
          source = -1 - static_cast<int>(i);
    }
    if (binding.role != BufferBinding::Role::Workspace && source == kWorkspaceSource)
      throw RuntimeError(ErrorKind::Compile, "internal error: buffer '" + binding.name + "' of fusion '" +
                                                 plan_.fusion + "' names no argument or output");
    buffer_source_.push_back(source);
  }
  for (const OutputCopy& copy : plan_.copies) {
    size_t index = concrete.outputs.size();
    for (size_t i = 0; i < concrete.outputs.size(); ++i)
      if (concrete.outputs[i].name == copy.output)
        index = i;
    if (index == concrete.outputs.size())
      throw RuntimeError(ErrorKind::Compile, "internal error: fusion '" + plan_.fusion +
                                                 "' copies to unknown output '" + copy.output + "'");
    copy_output_.push_back(index);
  }
  buffer_offset_.assign(plan_.buffers.size(), -1);
  for (const WorkspaceBinding& slot : plan_.workspace)
    buffer_offset_.at(slot.buffer) = slot.offset;
  for (size_t i = 0; i < plan_.buffers.size(); ++i)
    if (buffer_source_[i] == kWorkspaceSource && buffer_offset_[i] < 0)
      throw RuntimeError(ErrorKind::Compile, "internal error: workspace buffer '" + plan_.buffers[i].name +
                                                 "' of fusion '" + plan_.fusion + "' has no slot");

  for (const KernelLaunchPlan& k : plan_.kernels) {
    if (k.grid[0] > kMaxGridX || k.grid[1] > kMaxGridYZ || k.grid[2] > kMaxGridYZ || k.grid[0] < 0 || k.grid[1] < 0 ||
        k.grid[2] < 0)
      throw RuntimeError(ErrorKind::Compile, "kernel " + k.name + " needs a grid of " + std::to_string(k.grid[0]) +
                                                 " x " + std::to_string(k.grid[1]) + " x " + std::to_string(k.grid[2]) +
                                                 " blocks, beyond CUDA's limits");
    if (k.shared_bytes > device.max_shared_optin)
      throw RuntimeError(ErrorKind::Compile, "kernel " + k.name + " needs " + std::to_string(k.shared_bytes) +
                                                 " bytes of shared memory; " + device.name + " allows " +
                                                 std::to_string(device.max_shared_optin));
    for (const FillLaunch& fill : k.fills)
      if ((fill.count + kFillBlock - 1) / kFillBlock > kMaxGridX)
        throw RuntimeError(ErrorKind::Compile, "a fill before kernel " + k.name + " is too large");
  }

  FUSEGEN_CU(api_, cuModuleLoadData, &module_, entry.image.data());
  try {
    FUSEGEN_CU(api_, cuModuleGetFunction, &fill_, module_, "fusegen_fill");
    for (const KernelLaunchPlan& k : plan_.kernels) {
      Kernel kernel;
      kernel.plan = &k;
      FUSEGEN_CU(api_, cuModuleGetFunction, &kernel.function, module_, k.name.c_str());
      if (k.shared_bytes > kDefaultSharedLimit)
        FUSEGEN_CU(api_, cuFuncSetAttribute, kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   static_cast<int>(k.shared_bytes));
      kernels_.push_back(kernel);
    }
  } catch (...) {
    api_.cuModuleUnload(module_);
    throw;
  }
}

LoadedFusion::~LoadedFusion() {
  // Best effort: the context may already be gone at process exit.
  CUcontext current = nullptr;
  bool pushed = api_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != context_ &&
                api_.cuCtxPushCurrent_v2(context_) == CUDA_SUCCESS;
  for (const auto& [key, memory] : workspaces_)
    api_.cuMemFree_v2(memory);
  api_.cuModuleUnload(module_);
  if (pushed) {
    CUcontext popped = nullptr;
    api_.cuCtxPopCurrent_v2(&popped);
  }
}

void LoadedFusion::release_workspace(CUstream stream) {
  std::lock_guard<std::mutex> lock(workspace_mutex_);
  auto it = workspaces_.find(std::make_pair(stream, uint64_t{0}));
  if (it == workspaces_.end())
    return;
  api_.cuMemFree_v2(it->second); // best effort, as in the destructor
  workspaces_.erase(it);
}

CUdeviceptr LoadedFusion::workspace_for(CUstream stream) {
  // Work on one stream runs in order, so it can reuse one workspace; the
  // per-thread default stream is a different stream in every thread.
  uint64_t thread = stream == CU_STREAM_PER_THREAD ? this_thread_serial() : 0;
  std::lock_guard<std::mutex> lock(workspace_mutex_);
  auto [it, inserted] = workspaces_.emplace(std::make_pair(stream, thread), CUdeviceptr{0});
  if (inserted) {
    CUresult result = api_.cuMemAlloc_v2(&it->second, static_cast<size_t>(plan_.workspace_bytes));
    if (result != CUDA_SUCCESS) {
      workspaces_.erase(it);
      throw RuntimeError(ErrorKind::Driver, api_.describe(result, "cuMemAlloc_v2") + " (workspace of " +
                                                std::to_string(plan_.workspace_bytes) + " bytes for fusion '" +
                                                plan_.fusion + "')");
    }
    // Zeroed once, in stream order: the arrival counters of kernels that
    // finalize their own statistics start at zero and are left at zero
    // (templates/helpers.cu fusegen_arrive_last).
    result = api_.cuMemsetD8Async(it->second, 0, static_cast<size_t>(plan_.workspace_bytes), stream);
    if (result != CUDA_SUCCESS) {
      api_.cuMemFree_v2(it->second); // best effort
      workspaces_.erase(it);
      throw RuntimeError(ErrorKind::Driver, api_.describe(result, "cuMemsetD8Async") + " (zeroing the workspace of " +
                                                std::to_string(plan_.workspace_bytes) + " bytes for fusion '" +
                                                plan_.fusion + "')");
    }
  }
  return it->second;
}

void LoadedFusion::launch_kernel(CUfunction function, const std::array<unsigned, 3>& grid, unsigned block,
                                 unsigned shared_bytes, CUstream stream, void** params, bool dependent) {
  if (!dependent) {
    FUSEGEN_CU(api_, cuLaunchKernel, function, grid[0], grid[1], grid[2], block, 1, 1, shared_bytes, stream, params,
               nullptr);
    return;
  }
  // A programmatic dependent launch: the kernel may start before the one
  // before it in the stream has finished; it waits for it in
  // fusegen_grid_dependencies() (templates/helpers.cu) before touching memory.
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = block;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = shared_bytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  FUSEGEN_CU(api_, cuLaunchKernelEx, &config, function, params, nullptr);
}

void LoadedFusion::launch(std::span<const CUdeviceptr> arguments, std::span<const CUdeviceptr> outputs,
                          CUstream stream) {
  CUdeviceptr workspace = plan_.workspace_bytes > 0 ? workspace_for(stream) : 0;
  FusegenArgsHost args{};
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    int source = buffer_source_[i];
    assert(source == kWorkspaceSource || (source >= 0 ? static_cast<size_t>(source) < arguments.size()
                                                      : static_cast<size_t>(-1 - source) < outputs.size()));
    args.buf[i] = source == kWorkspaceSource ? workspace + static_cast<CUdeviceptr>(buffer_offset_[i])
                  : source >= 0              ? arguments[static_cast<size_t>(source)]
                                             : outputs[static_cast<size_t>(-1 - source)];
  }
  void* kernel_params[] = {&args};
  bool first = true; // the first launch waits for the stream's earlier work as usual
  auto launch_one = [&](CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned block,
                        unsigned shared_bytes, void** params) {
    launch_kernel(function, {gx, gy, gz}, block, shared_bytes, stream, params, dependent_launches_ && !first);
    first = false;
  };
  for (const Kernel& kernel : kernels_) {
    const KernelLaunchPlan& k = *kernel.plan;
    for (const FillLaunch& fill : k.fills) {
      if (fill.count == 0)
        continue;
      CUdeviceptr data = args.buf[fill.buffer];
      float value = std::bit_cast<float>(fill.value_bits);
      long long count = fill.count;
      void* fill_params[] = {&data, &value, &count};
      auto blocks = static_cast<unsigned>((fill.count + kFillBlock - 1) / kFillBlock);
      launch_one(fill_, blocks, 1, 1, kFillBlock, 0, fill_params);
    }
    if (k.grid[0] == 0 || k.grid[1] == 0 || k.grid[2] == 0)
      continue; // an empty domain
    launch_one(kernel.function, static_cast<unsigned>(k.grid[0]), static_cast<unsigned>(k.grid[1]),
               static_cast<unsigned>(k.grid[2]), static_cast<unsigned>(k.block), static_cast<unsigned>(k.shared_bytes),
               kernel_params);
  }
  for (size_t c = 0; c < plan_.copies.size(); ++c) {
    const OutputCopy& copy = plan_.copies[c];
    assert(copy_output_[c] < outputs.size());
    FUSEGEN_CU(api_, cuMemcpyDtoDAsync_v2, outputs[copy_output_[c]], args.buf[copy.buffer],
               static_cast<size_t>(copy.bytes), stream);
  }
}

} // namespace fusegen::runtime
