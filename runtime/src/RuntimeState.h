// The shared state behind Runtime, Program, Function and DeviceBuffer: the
// device (opened on first use), the contexts, the kernel provider (disk
// cache, NVRTC) and the in-memory cache of loaded fusions.
#pragma once

#include "CallLayout.h"
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
  FunctionState(std::shared_ptr<const ProgramState> program, const Fusion& fusion);

  const std::shared_ptr<const ProgramState> program;
  const Fusion* const fusion; // owned by program
  const std::string fingerprint;
  const runtime::CallLayout layout; // what a call's tensors must look like

  // The fusion the last call loaded, and where: a call with the same dims in
  // the same context takes it without asking the runtime's cache.
  std::shared_ptr<runtime::LoadedFusion> last_loaded(CUcontext context, const std::vector<int64_t>& dims) const;
  void remember(CUcontext context, const std::vector<int64_t>& dims,
                const std::shared_ptr<runtime::LoadedFusion>& loaded) const;

private:
  mutable std::mutex last_mutex_;
  mutable CUcontext last_context_ = nullptr;
  mutable std::vector<int64_t> last_dims_;
  mutable std::shared_ptr<runtime::LoadedFusion> last_;
};

struct RuntimeState {
  RuntimeState(int ordinal, RuntimeOptions options);
  ~RuntimeState();

  // The device, opened on first use. Throws RuntimeError (NoDriver).
  const runtime::DeviceInfo& device();
  // The context a call runs in: the caller's current context when it is on
  // this device, else the device's primary context (retained once).
  // `current` receives the thread's current context (for ContextScope).
  CUcontext call_context(CUcontext& current);
  CUcontext call_context() {
    CUcontext current = nullptr;
    return call_context(current);
  }

  Precision precision_of(const Fusion& fusion) const { return options.precision.value_or(fusion.precision); }

  // The fusion at `dims`, loaded into `context` (current): from memory, or
  // built (disk cache or NVRTC) and loaded once even when several threads
  // ask at the same time; different keys build in parallel.
  std::shared_ptr<runtime::LoadedFusion> loaded(const FunctionState& function, const DimBindings& dims,
                                                CUcontext context);

  Stats stats() const;
  std::vector<Tuning> tuning_records() const;

  const int ordinal;
  const RuntimeOptions options;
  const bool autotune; // options.autotune, or FUSEGEN_AUTOTUNE=1
  runtime::Warnings warnings;
  std::shared_ptr<const runtime::DiskCache> disk; // null when off
  std::shared_ptr<runtime::RemoteCache> remote;   // null when off
  runtime::KernelProvider provider;
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> memory_hits{0};
  std::atomic<uint64_t> tunings{0};

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
  std::optional<runtime::DeviceInfo> device_; // set once, under device_mutex_
  std::atomic<bool> device_open_{false};      // device_ is set: read it without the lock
  std::atomic<CUcontext> primary_{nullptr};   // retained when first needed

  runtime::OnceCache<LoadKey, std::shared_ptr<runtime::LoadedFusion>> cache_;

  mutable std::mutex tunings_mutex_;
  std::vector<Tuning> tunings_; // every autotuning, in order
};

} // namespace fusegen
