#include "RuntimeState.h"

#include "Autotune.h"
#include "CacheDir.h"
#include "Nvrtc.h"

#include "fusegen/CacheAdmin.h"
#include "fusegen/IRPrinter.h"

#include <cstdio>
#include <cstdlib>

namespace fusegen {

using runtime::DiskCache;
using runtime::driver;

namespace {

std::shared_ptr<const DiskCache> open_disk_cache(const RuntimeOptions& options, runtime::Warnings& warnings) {
  if (!options.disk_cache)
    return nullptr;
  CacheLocation where = cache_location(options.cache_dir);
  if (!where.enabled)
    return nullptr;
  if (Status usable = runtime::prepare_cache_dir(where.dir, true); !usable) {
    warnings.warn("not using the kernel cache directory: " + usable.error() + "; compiling in memory only");
    return nullptr;
  }
  return std::make_shared<const DiskCache>(where.dir);
}

// FUSEGEN_AUTOTUNE=1 turns autotuning on where the options leave it open.
bool autotune_enabled(const RuntimeOptions& options) {
  if (options.autotune)
    return *options.autotune;
  const char* value = std::getenv("FUSEGEN_AUTOTUNE");
  return value != nullptr && std::string(value) == "1";
}

} // namespace

RuntimeState::RuntimeState(int ordinal_, RuntimeOptions options_)
    : ordinal(ordinal_), options(std::move(options_)), autotune(autotune_enabled(options)),
      warnings(options.warning_sink), disk(open_disk_cache(options, warnings)),
      remote(runtime::open_remote_cache(options.remote_cache, warnings)), provider(disk, warnings, remote) {}

FunctionState::FunctionState(std::shared_ptr<const ProgramState> program_, const Fusion& fusion_)
    : program(std::move(program_)), fusion(&fusion_), fingerprint(fusegen::fingerprint(fusion_)), layout(fusion_) {}

std::shared_ptr<runtime::LoadedFusion> FunctionState::last_loaded(CUcontext context,
                                                                  const std::vector<int64_t>& dims) const {
  std::lock_guard<std::mutex> lock(last_mutex_);
  if (last_ && last_context_ == context && last_dims_ == dims)
    return last_;
  return nullptr;
}

void FunctionState::remember(CUcontext context, const std::vector<int64_t>& dims,
                             const std::shared_ptr<runtime::LoadedFusion>& loaded) const {
  std::shared_ptr<runtime::LoadedFusion> old;
  {
    std::lock_guard<std::mutex> lock(last_mutex_);
    old = std::move(last_); // released outside the lock
    last_context_ = context;
    last_dims_ = dims;
    last_ = loaded;
  }
}

RuntimeState::~RuntimeState() {
  // Loaded fusions unload their modules in their own contexts; the primary
  // context goes last.
  cache_.clear();
  if (primary_.load()) {
    const runtime::DriverApi& api = driver();
    api.cuDevicePrimaryCtxRelease_v2(device_->device);
  }
}

const runtime::DeviceInfo& RuntimeState::device() {
  if (device_open_.load(std::memory_order_acquire))
    return *device_;
  std::lock_guard<std::mutex> lock(device_mutex_);
  if (!device_) {
    device_ = runtime::open_device(driver(), ordinal);
    device_open_.store(true, std::memory_order_release);
  }
  return *device_;
}

CUcontext RuntimeState::call_context(CUcontext& current) {
  const runtime::DeviceInfo& info = device();
  const runtime::DriverApi& api = driver();
  current = nullptr;
  FUSEGEN_CU(api, cuCtxGetCurrent, &current);
  if (current) {
    CUdevice on = 0;
    if (api.cuCtxGetDevice(&on) == CUDA_SUCCESS && on == info.device)
      return current;
  }
  if (CUcontext primary = primary_.load(std::memory_order_acquire))
    return primary;
  std::lock_guard<std::mutex> lock(device_mutex_);
  if (!primary_.load()) {
    CUcontext primary = nullptr;
    FUSEGEN_CU(api, cuDevicePrimaryCtxRetain, &primary, info.device);
    primary_.store(primary, std::memory_order_release);
  }
  return primary_.load();
}

std::shared_ptr<runtime::LoadedFusion> RuntimeState::loaded(const FunctionState& function, const DimBindings& dims,
                                                            CUcontext context) {
  LoadKey key{context, function.fingerprint, function.fusion->name, {}, precision_of(*function.fusion)};
  for (const auto& [symbol, value] : dims)
    key.dims.push_back(value);

  auto [loaded_fusion, built] = cache_.get(key, [&] { return build(function, dims, context); });
  if (!built)
    ++memory_hits;
  return loaded_fusion;
}

std::shared_ptr<runtime::LoadedFusion> RuntimeState::build(const FunctionState& function, const DimBindings& dims,
                                                           CUcontext context) {
  const runtime::DeviceInfo& info = device();
  runtime::KernelRequest request;
  request.fusion = function.fusion;
  request.fingerprint = function.fingerprint;
  request.dims = dims;
  request.precision = precision_of(*function.fusion);
  request.strict_product = options.strict_product;
  request.arch = info.arch;
  request.sources = &function.program->sources;
  auto load_kernels = [&](const runtime::ProvidedKernels& kernels) { return load(kernels, info, context); };

  // An autotuned entry is the best there is, with autotuning on or off.
  request.autotuned = true;
  if (std::optional<runtime::ProvidedKernels> tuned = provider.lookup(request)) {
    try {
      return load_kernels(*tuned);
    } catch (const RuntimeError& error) {
      if (error.kind() != ErrorKind::Driver && error.kind() != ErrorKind::Compile)
        throw;
      provider.reject(*tuned, error.what()); // then tune or build afresh below
    }
  }
  if (autotune) {
    bool zero_size = false;
    for (const auto& [symbol, value] : dims)
      zero_size = zero_size || value == 0;
    if (!zero_size) {
      runtime::Tuned tuned = runtime::autotune(provider, request, load_kernels, driver(), warnings);
      ++tunings;
      if (options.warning_sink == nullptr && std::getenv("FUSEGEN_AUTOTUNE_VERBOSE") != nullptr)
        std::fprintf(stderr, "fusegen: autotuned fusion '%s' at %s: %s\n", function.fusion->name.c_str(),
                     runtime::dims_text(dims).c_str(), tuned.record.report.c_str());
      {
        std::lock_guard<std::mutex> lock(tunings_mutex_);
        tunings_.push_back(tuned.record);
      }
      return tuned.loaded;
    }
  }
  request.autotuned = false;
  runtime::ProvidedKernels kernels = provider.provide(request);
  try {
    return load_kernels(kernels);
  } catch (const RuntimeError& error) {
    // An entry from disk that the driver refuses (e.g. written by another
    // NVRTC), or whose launch plan does not fit the fusion, must not fail
    // the call: rebuild it (a fresh build reports its own errors).
    if (!kernels.from_disk || (error.kind() != ErrorKind::Driver && error.kind() != ErrorKind::Compile))
      throw;
    provider.reject(kernels, error.what());
    kernels = provider.provide(request, /*read_disk=*/false);
    return load_kernels(kernels);
  }
}

std::shared_ptr<runtime::LoadedFusion> RuntimeState::load(const runtime::ProvidedKernels& kernels,
                                                          const runtime::DeviceInfo& info, CUcontext context) {
  try {
    return std::make_shared<runtime::LoadedFusion>(driver(), context, info, kernels.entry, kernels.concrete);
  } catch (const RuntimeError& error) {
    if (error.kind() != ErrorKind::Driver || kernels.from_disk)
      throw;
    // A fresh image the driver refuses is most often a driver older than NVRTC.
    const runtime::NvrtcInfo& nvrtc = runtime::nvrtc_info();
    throw RuntimeError(ErrorKind::Driver, std::string(error.what()) + " (loading " + kernels.key.target +
                                              " code from NVRTC " + nvrtc.version() + "; the driver supports CUDA " +
                                              std::to_string(info.driver_version / 1000) + "." +
                                              std::to_string(info.driver_version % 1000 / 10) + ")");
  }
}

Stats RuntimeState::stats() const {
  Stats s;
  s.calls = calls.load();
  s.memory_hits = memory_hits.load();
  const runtime::ProviderCounters& c = provider.counters();
  s.generations = c.generations.load();
  s.compiles = c.compiles.load();
  s.disk_loads = c.disk_loads.load();
  s.disk_writes = c.disk_writes.load();
  s.disk_rejects = c.disk_rejects.load();
  s.remote_loads = c.remote_loads.load();
  s.remote_writes = c.remote_writes.load();
  s.remote_rejects = c.remote_rejects.load();
  s.remote_waits = c.remote_waits.load();
  s.tunings = tunings.load();
  return s;
}

std::vector<Tuning> RuntimeState::tuning_records() const {
  std::lock_guard<std::mutex> lock(tunings_mutex_);
  return tunings_;
}

} // namespace fusegen
