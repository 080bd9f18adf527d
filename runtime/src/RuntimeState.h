// The shared state behind Runtime, Program, Function and DeviceBuffer: the
// device (opened on first use), the contexts, the kernel provider (disk
// cache, NVRTC) and the in-memory cache of loaded fusions.
#pragma once

#include "Device.h"
#include "KernelProvider.h"
#include "LoadedFusion.h"
#include "OnceCache.h"
#include "Warnings.h"

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"
#include "fusegen/Runtime.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fusegen {

struct ProgramState {
  std::string name;
  SourceManager sources; // diagnostics at call time point into the spec
  Module module;
};

struct FunctionState {
  std::shared_ptr<const ProgramState> program;
  const Fusion* fusion = nullptr; // owned by program
  std::string fingerprint;
};

struct RuntimeState {
  RuntimeState(int ordinal, RuntimeOptions options);
  ~RuntimeState();

  // The device, opened on first use. Throws RuntimeError (NoDriver).
  const runtime::DeviceInfo& device();
  // The context a call runs in: the caller's current context when it is on
  // this device, else the device's primary context (retained once).
  CUcontext call_context();

  Precision precision_of(const Fusion& fusion) const { return options.precision.value_or(fusion.precision); }

  // The fusion at `dims`, loaded into `context` (current): from memory, or
  // built (disk cache or NVRTC) and loaded once even when several threads
  // ask at the same time; different keys build in parallel.
  std::shared_ptr<runtime::LoadedFusion> loaded(const FunctionState& function, const DimBindings& dims,
                                                CUcontext context);

  Stats stats() const;

  const int ordinal;
  const RuntimeOptions options;
  runtime::Warnings warnings;
  std::shared_ptr<const runtime::DiskCache> disk; // null when off
  runtime::KernelProvider provider;
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> memory_hits{0};

private:
  struct LoadKey {
    CUcontext context;
    std::string fingerprint;
    std::string fusion;
    std::vector<int64_t> dims; // values in symbol order
    Precision precision;
    auto operator<=>(const LoadKey&) const = default;
  };
  std::shared_ptr<runtime::LoadedFusion> build(const FunctionState& function, const DimBindings& dims,
                                               CUcontext context);
  std::shared_ptr<runtime::LoadedFusion> load(const runtime::ProvidedKernels& kernels, const runtime::DeviceInfo& info,
                                              CUcontext context);

  std::mutex device_mutex_;
  std::optional<runtime::DeviceInfo> device_;
  CUcontext primary_ = nullptr; // retained when first needed

  runtime::OnceCache<LoadKey, std::shared_ptr<runtime::LoadedFusion>> cache_;
};

} // namespace fusegen
