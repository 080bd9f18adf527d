// Autotuning: for a new (fusion, dims, precision, arch), compile each
// candidate configuration (the heuristic's, then every GEMM block the
// kernels can take, unsplit and at its largest split-K; for strict precision
// on a target with FP16x3 products, unless the request pins the product,
// each of these with FP16x3 as well), time each on the device with scratch
// tensors, and keep the fastest as the key's autotuned disk cache entry.
#pragma once

#include "DriverApi.h"
#include "KernelProvider.h"
#include "LoadedFusion.h"

#include "fusegen/Runtime.h"

#include <functional>
#include <memory>
#include <string>

namespace fusegen::runtime {

// Milliseconds per run of `fusion`'s launch sequence on scratch tensors
// (arguments filled with 0.5, outputs written), on a stream of its own in
// the current context: `warmup` runs, then the mean of `runs` between two
// events. Throws RuntimeError (Driver), e.g. when the scratch tensors do not
// fit in device memory.
double time_fusion(const DriverApi& api, LoadedFusion& fusion, int warmup, int runs);

struct Tuned {
  ProvidedKernels kernels;
  std::shared_ptr<LoadedFusion> loaded;
  // Which candidate won, against the heuristic's kernels (Runtime.h):
  // record.report is "64x64:8 (heuristic) 0.010 ms, heuristic, fp16x3
  // 0.008 ms, 128x128 0.043 ms, 128x128, fp16x3 0.030 ms, ...".
  Tuning record;
};

using LoadKernels = std::function<std::shared_ptr<LoadedFusion>(const ProvidedKernels&)>;

// `request` is for the autotuned key. The heuristic's kernels come first: if
// they fail to build, that error is thrown; a candidate block a kernel
// cannot take, or one the driver refuses, is skipped. Candidates that
// generate the same source are compiled and timed once (FP16x3 where no
// kernel can take it is the 3xTF32 candidate's source). The winner is stored under the
// request's key (even when only one candidate exists, so later runs do not
// tune again). Timing failures (e.g. out of memory for the scratch tensors)
// fall back to the heuristic's kernels with a warning, stored nowhere.
Tuned autotune(KernelProvider& provider, const KernelRequest& request, const LoadKernels& load,
               const DriverApi& api, Warnings& warnings);

} // namespace fusegen::runtime
