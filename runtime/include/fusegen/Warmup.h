// Warm-up: compiling a spec's fusions for given dims and an arch into the
// disk cache ahead of time, without a GPU (NVRTC only), so that JIT calls on
// a GPU of that arch compile nothing. `fusegen warmup` is the command line.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"
#include "fusegen/RemoteCacheOptions.h"
#include "fusegen/Result.h"
#include "fusegen/Specialize.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fusegen {

struct WarmupOptions {
  int arch = 90;                                        // the GPU's sm_XY as XY
  std::optional<Precision> precision;                   // as RuntimeOptions::precision
  std::optional<StrictProduct> strict_product;          // as RuntimeOptions::strict_product
  int jobs = 1;                                         // compilations in parallel
  std::string cache_dir;                                // empty: where a Runtime would look
  RemoteCacheOptions remote_cache;                      // as RuntimeOptions::remote_cache
  std::function<void(const std::string&)> warning_sink; // stderr when empty
};

// NotStored: compiled, but the cache could not take it (read-only directory,
// full disk): the cache is not warm for that item. Fetched: from the remote
// cache into the disk cache.
enum class WarmupOutcome { Compiled, Cached, NotStored, Failed, Fetched };
// "compiled", "cached", "not stored", "failed", "fetched"
const char* warmup_outcome_name(WarmupOutcome outcome);

struct WarmupItem {
  std::string fusion;
  DimBindings dims; // the fusion's own dims
  WarmupOutcome outcome = WarmupOutcome::Failed;
  std::string error;      // for Failed and NotStored
  bool published = false; // written to the remote cache by this warm-up
};

struct WarmupReport {
  std::string cache_dir;
  std::string target;            // what NVRTC produces for the arch: sm_90, or compute_XY PTX
  std::string remote_cache;      // the remote cache in use ("redis://host:port"), empty when none
  uint64_t remote_failures = 0;  // operations the remote cache failed (then skipped while it rests)
  std::vector<WarmupItem> items; // per fusion, per binding, in that order
  size_t count(WarmupOutcome outcome) const;
};

// Compiles every fusion of `module` for every binding (each fusion takes the
// dims it uses; bindings that agree on them are one item). Per-item failures
// are in the report; throws RuntimeError if there is no usable cache
// directory or the arch cannot be targeted.
WarmupReport warmup(const Module& module, const SourceManager& sources, const std::vector<DimBindings>& bindings,
                    const WarmupOptions& options);

// "--dims" lists for warm-up: "N=128,1024" is two values of N, "N=1,2,M=8"
// adds M; several dims give their cartesian product (in a fixed order).
Result<std::vector<DimBindings>> expand_dim_lists(const std::vector<std::string>& lists);

} // namespace fusegen
