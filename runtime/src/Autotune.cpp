#include "Autotune.h"

#include "fusegen/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
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

// One configuration to time: a forced GEMM block (else the heuristic's) and
// a forced strict product (else the request's).
struct Candidate {
  std::optional<GemmBlock> block;
  std::optional<StrictProduct> product;
};

// FP16x3 products are candidates for strict precision on a target that has
// them, unless the caller chose the product (RuntimeOptions::strict_product).
bool tunes_products(const KernelRequest& request) {
  return request.precision == Precision::Strict && !request.strict_product &&
         generation_target(request).fp16x3_products;
}

// The heuristic's kernels first, then FP16x3 with the heuristic's blocks,
// then each block unsplit and with its largest split-K the generator takes
// (it refuses splits where they do not apply): on the H100 a larger split of
// the same block was never slower (bench/NOTES.md v13), so smaller ones are
// not compiled. Each block with FP16x3 as well where products are tuned.
std::vector<Candidate> candidates_for(const KernelRequest& request) {
  std::vector<std::optional<StrictProduct>> products = {std::nullopt};
  if (tunes_products(request))
    products.push_back(StrictProduct::FP16x3);
  std::vector<Candidate> out;
  for (const std::optional<StrictProduct>& product : products)
    out.push_back({std::nullopt, product});
  for (GemmBlock block : kGemmBlocks)
    for (auto split = std::rbegin(kGemmSplits); split != std::rend(kGemmSplits); ++split) {
      block.split_k = *split;
      for (const std::optional<StrictProduct>& product : products)
        out.push_back({block, product});
    }
  return out;
}

bool same_block(const Candidate& a, const Candidate& b) {
  return a.block && b.block && a.block->rows == b.block->rows && a.block->cols == b.block->cols &&
         a.product == b.product;
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
  struct Timed {
    Candidate candidate;
    // The forced block that generates the heuristic's source ("64x64:8"),
    // for the heuristic's kernels.
    std::string same_as;
    ProvidedKernels kernels;
    std::shared_ptr<LoadedFusion> loaded;
    double ms = 0;
    std::string name() const {
      std::string text = candidate.block   ? format_gemm_block(*candidate.block)
                         : same_as.empty() ? "heuristic"
                                           : same_as + " (heuristic)";
      if (candidate.product)
        text += std::string(", ") + strict_product_name(*candidate.product);
      return text;
    }
  };
  std::vector<Timed> timed;
  // Each source generated, with the candidate that was timed for it (none
  // where the driver refused it): a candidate whose source is an earlier
  // one's is neither compiled nor timed again.
  std::map<std::string, std::optional<size_t>> generated;
  bool has_gemm = false;              // known once the heuristic's kernels are generated
  std::vector<Candidate> split_taken; // the blocks (and products) whose largest split generated
  for (const Candidate& c : candidates_for(request)) {
    const bool heuristic = !c.block && !c.product;
    if (!heuristic && !has_gemm)
      break; // blocks and products only change GEMM kernels
    if (c.block && c.block->split_k > 1 &&
        std::any_of(split_taken.begin(), split_taken.end(), [&](const Candidate& t) { return same_block(t, c); }))
      continue; // a smaller split of a block whose larger split is a candidate
    KernelRequest candidate = request;
    candidate.gemm_block = c.block;
    if (c.product)
      candidate.strict_product = c.product;
    Timed t{c, {}, {}, nullptr, 0};
    std::string source_sha256;
    try {
      GeneratedUnit unit = provider.generate(candidate);
      if (c.block && c.block->split_k > 1)
        split_taken.push_back(c);
      for (const KernelLaunchPlan& kernel : unit.launch.kernels)
        has_gemm = has_gemm || kernel.kind == static_cast<uint8_t>(KernelKind::Gemm);
      source_sha256 = unit.source_sha256;
      auto [earlier, fresh] = generated.emplace(source_sha256, std::nullopt);
      if (!fresh) {
        // The heuristic's kernels are this block's: the record names it
        // ("64x64:8 (heuristic)"). FP16x3 with the heuristic's blocks stays
        // "heuristic, fp16x3".
        Timed* first = earlier->second ? &timed[*earlier->second] : nullptr;
        if (first && !first->candidate.block && !first->candidate.product && first->same_as.empty() && c.block &&
            !c.product)
          first->same_as = format_gemm_block(*c.block);
        continue;
      }
      t.kernels = provider.compile(candidate, std::move(unit), /*store_on_disk=*/false);
    } catch (const RuntimeError& error) {
      if (heuristic || error.kind() != ErrorKind::Compile)
        throw;  // the heuristic's own failure is the call's
      continue; // a block this fusion's kernels cannot take
    }
    try {
      t.loaded = load(t.kernels);
    } catch (const RuntimeError& error) {
      if (heuristic || error.kind() != ErrorKind::Driver)
        throw;
      continue; // e.g. more shared memory than this device has
    }
    generated[source_sha256] = timed.size();
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
      warnings.warn("autotuning fusion '" + request.fusion->name + "' at " + dims_text(request.dims) + " failed (" +
                    error.what() + "); using the heuristic's kernels");
      best = 0;
      measured = false;
      for (Timed& t : timed)
        t.ms = 0;
    }
    for (const Timed& t : timed)
      out.record.report += (out.record.report.empty() ? "" : ", ") + t.name() + " " + format_ms(t.ms);
  } else {
    out.record.report = "one candidate";
  }
  // timed[0] is the heuristic's (its failure to build is thrown above).
  out.record.timed = measured && timed.size() > 1;
  out.record.heuristic = timed[0].name();
  out.record.heuristic_ms = timed[0].ms;
  out.record.heuristic_variants = timed[0].kernels.variants;
  out.record.chosen = timed[best].name();
  out.record.chosen_ms = timed[best].ms;
  out.record.chosen_variants = timed[best].kernels.variants;
  out.kernels = std::move(timed[best].kernels);
  out.loaded = std::move(timed[best].loaded);
  // Under the request's key (its product unset where products were tuned),
  // where a later runtime with or without autotuning looks for it.
  if (measured)
    provider.store(request, out.kernels);
  return out;
}

} // namespace fusegen::runtime
