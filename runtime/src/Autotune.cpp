#include "Autotune.h"

#include "fusegen/Runtime.h"

#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <vector>

namespace fusegen::runtime {
namespace {

// Device memory freed on scope exit (errors while freeing are ignored: the
// tuning result does not depend on them).
class ScratchMemory {
public:
  explicit ScratchMemory(const DriverApi& api) : api_(api) {}
  ~ScratchMemory() {
    for (CUdeviceptr p : pointers_)
      api_.cuMemFree_v2(p);
  }
  ScratchMemory(const ScratchMemory&) = delete;
  ScratchMemory& operator=(const ScratchMemory&) = delete;

  // A tensor of `shape` (f32) filled with `value`.
  CUdeviceptr tensor(const std::vector<int64_t>& shape, float value) {
    size_t count = 1;
    for (int64_t d : shape)
      count *= static_cast<size_t>(d);
    CUdeviceptr p = 0;
    FUSEGEN_CU(api_, cuMemAlloc_v2, &p, std::max<size_t>(count, 1) * sizeof(float));
    pointers_.push_back(p);
    unsigned int bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    FUSEGEN_CU(api_, cuMemsetD32_v2, p, bits, std::max<size_t>(count, 1));
    return p;
  }

private:
  const DriverApi& api_;
  std::vector<CUdeviceptr> pointers_;
};

class Stream {
public:
  explicit Stream(const DriverApi& api) : api_(api) { FUSEGEN_CU(api_, cuStreamCreate, &stream_, 0); }
  ~Stream() { api_.cuStreamDestroy_v2(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }

private:
  const DriverApi& api_;
  CUstream stream_ = nullptr;
};

class Event {
public:
  explicit Event(const DriverApi& api) : api_(api) { FUSEGEN_CU(api_, cuEventCreate, &event_, 0); }
  ~Event() { api_.cuEventDestroy_v2(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent get() const { return event_; }

private:
  const DriverApi& api_;
  CUevent event_ = nullptr;
};

std::string block_name(const std::optional<GemmBlock>& block) {
  return block ? format_gemm_block(*block) : "heuristic";
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

constexpr int kWarmupRuns = 2;
constexpr int kTimedRuns = 10;

} // namespace

double time_fusion(const DriverApi& api, LoadedFusion& fusion, int warmup, int runs) {
  ScratchMemory memory(api);
  std::vector<CUdeviceptr> arguments, outputs;
  for (const std::vector<int64_t>& shape : fusion.argument_shapes())
    arguments.push_back(memory.tensor(shape, 0.5f));
  for (const std::vector<int64_t>& shape : fusion.output_shapes())
    outputs.push_back(memory.tensor(shape, 0.0f));
  Stream stream(api);
  // The stream goes away with this function, so the workspace the fusion
  // keeps for it must too (the winner stays loaded for the runtime's life),
  // once the stream's work is done, also when a launch threw.
  struct ReleaseWorkspace {
    const DriverApi& api;
    LoadedFusion& fusion;
    CUstream stream;
    ~ReleaseWorkspace() {
      api.cuStreamSynchronize(stream);
      fusion.release_workspace(stream);
    }
  } release{api, fusion, stream.get()};
  Event start(api), end(api);
  for (int i = 0; i < warmup; ++i)
    fusion.launch(arguments, outputs, stream.get());
  FUSEGEN_CU(api, cuEventRecord, start.get(), stream.get());
  for (int i = 0; i < runs; ++i)
    fusion.launch(arguments, outputs, stream.get());
  FUSEGEN_CU(api, cuEventRecord, end.get(), stream.get());
  FUSEGEN_CU(api, cuEventSynchronize, end.get());
  float ms = 0;
  FUSEGEN_CU(api, cuEventElapsedTime_v2, &ms, start.get(), end.get());
  return static_cast<double>(ms) / std::max(runs, 1);
}

Tuned autotune(KernelProvider& provider, const KernelRequest& request, const LoadKernels& load, const DriverApi& api,
               Warnings& warnings) {
  std::vector<std::optional<GemmBlock>> candidates = {std::nullopt};
  // Each block unsplit and with its largest split-K the generator takes (it
  // refuses splits where they do not apply): on the H100 a larger split of
  // the same block was never slower (bench/NOTES.md v13), so smaller ones
  // are not compiled.
  for (GemmBlock block : kGemmBlocks)
    for (auto split = std::rbegin(kGemmSplits); split != std::rend(kGemmSplits); ++split) {
      block.split_k = *split;
      candidates.push_back(block);
    }

  struct Timed {
    std::optional<GemmBlock> block;
    ProvidedKernels kernels;
    std::shared_ptr<LoadedFusion> loaded;
    double ms = 0;
  };
  std::vector<Timed> timed;
  std::string heuristic_is; // the forced block whose image equals the heuristic's
  bool has_gemm = false; // known once the heuristic's kernels are built
  std::optional<GemmBlock> split_taken; // the block whose largest split compiled
  for (const std::optional<GemmBlock>& block : candidates) {
    if (block && !has_gemm)
      break; // the blocks only change GEMM kernels
    if (block && block->split_k > 1 && split_taken && split_taken->rows == block->rows &&
        split_taken->cols == block->cols)
      continue; // a smaller split of a block whose larger split is a candidate
    KernelRequest candidate = request;
    candidate.gemm_block = block;
    Timed t{block, {}, nullptr, 0};
    try {
      t.kernels = provider.compile(candidate, /*store_on_disk=*/false);
    } catch (const RuntimeError& error) {
      if (!block || error.kind() != ErrorKind::Compile)
        throw; // the heuristic's own failure is the call's
      continue; // a block this fusion's kernels cannot take
    }
    if (block && block->split_k > 1)
      split_taken = block;
    for (const KernelLaunchPlan& kernel : t.kernels.entry.launch.kernels)
      has_gemm = has_gemm || kernel.kind == static_cast<uint8_t>(KernelKind::Gemm);
    bool duplicate = false;
    for (const Timed& earlier : timed)
      if (earlier.kernels.entry.image == t.kernels.entry.image) {
        duplicate = true;
        if (!earlier.block)
          heuristic_is = block_name(block);
      }
    if (duplicate)
      continue;
    try {
      t.loaded = load(t.kernels);
    } catch (const RuntimeError& error) {
      if (!block || error.kind() != ErrorKind::Driver)
        throw;
      continue; // e.g. more shared memory than this device has
    }
    timed.push_back(std::move(t));
  }

  Tuned out;
  out.record.fusion = request.fusion->name;
  out.record.dims = dims_text(request.dims);
  size_t best = 0;
  bool measured = true;
  if (timed.size() > 1) {
    try {
      for (Timed& t : timed)
        t.ms = time_fusion(api, *t.loaded, kWarmupRuns, kTimedRuns);
      for (size_t i = 1; i < timed.size(); ++i)
        if (timed[i].ms < timed[best].ms)
          best = i;
    } catch (const RuntimeError& error) {
      warnings.warn("autotuning fusion '" + request.fusion->name + "' at " + dims_text(request.dims) +
                    " failed (" + error.what() + "); using the heuristic's kernels");
      best = 0;
      measured = false;
      for (Timed& t : timed)
        t.ms = 0;
    }
    for (const Timed& t : timed) {
      std::string name = !t.block && !heuristic_is.empty() ? heuristic_is + " (heuristic)" : block_name(t.block);
      out.record.report += (out.record.report.empty() ? "" : ", ") + name + " " + format_ms(t.ms);
    }
  } else {
    out.record.report = "one candidate";
  }
  // timed[0] is the heuristic's (its failure to build is thrown above).
  out.record.timed = measured && timed.size() > 1;
  out.record.heuristic = heuristic_is.empty() ? "heuristic" : heuristic_is + " (heuristic)";
  out.record.heuristic_ms = timed[0].ms;
  out.record.heuristic_variants = timed[0].kernels.variants;
  out.record.chosen = best == 0 ? out.record.heuristic : block_name(timed[best].block);
  out.record.chosen_ms = timed[best].ms;
  out.record.chosen_variants = timed[best].kernels.variants;
  out.kernels = std::move(timed[best].kernels);
  out.loaded = std::move(timed[best].loaded);
  if (measured)
    provider.store(request, out.kernels);
  return out;
}

} // namespace fusegen::runtime
