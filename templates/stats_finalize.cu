// fusegen template: combines partial statistics (count, mean, M2) of a split
// normalization into its finalized statistics (fp32), and lets the generator
// do per-row follow-up work (batch_norm's running-stat update).
//
// A "row" is one set of statistics to finalize (a batch_norm channel, a
// group_norm (sample, group)); it has `parts` partial triples. A block
// covers kRowLanes rows with kPartLanes threads each: every thread
// Chan-merges the parts p = part_lane, part_lane + kPartLanes, ... in order,
// then the row's threads combine in a fixed tree in shared memory, so the
// result does not depend on scheduling. kPartsContiguous picks the thread
// mapping that keeps loads coalesced: 0 when consecutive rows are adjacent
// in memory (batch_norm: partials[part][row]), 1 when consecutive parts are
// (group_norm: partials[row][part]).
//
// Hook contract (checked by fusegen-template-tool against hooks/StatsFinalizeHooks.h):
//   "row_lanes"        constexpr int kRowLanes         rows per block
//   "part_lanes"       constexpr int kPartLanes        threads per row (power of 2)
//   "parts_contiguous" constexpr int kPartsContiguous  thread mapping (see above)
//   "rows"             long long rows(args)            rows to finalize
//   "parts"            long long parts(args)           partial triples per row
//   "load_partial"     FusegenWelford load_partial(args, row, part)
//   "finalize_row"     void finalize_row(args, row, total)  writes the row's results
//   "entry"            the __global__ kernel; the generator renames it
//
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include, and
// the generator emits it once at the top of a generated file instead).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("row_lanes") constexpr int kRowLanes = 32;

FUSEGEN_HOOK("part_lanes") constexpr int kPartLanes = 8;

FUSEGEN_HOOK("parts_contiguous") constexpr int kPartsContiguous = 0;

FUSEGEN_HOOK("rows")
__device__ __forceinline__ long long rows(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("parts")
__device__ __forceinline__ long long parts(const FusegenArgs& args) { return args.dim[1]; }

FUSEGEN_HOOK("load_partial")
__device__ __forceinline__ FusegenWelford load_partial(const FusegenArgs& args, long long row, long long part) {
  const float* p = args.buf[0] + (part * rows(args) + row) * 3;
  return FusegenWelford{p[0], p[1], p[2]};
}

FUSEGEN_HOOK("finalize_row")
__device__ __forceinline__ void finalize_row(const FusegenArgs& args, long long row, FusegenWelford total) {
  args.buf[1][2 * row] = total.mean;
  args.buf[1][2 * row + 1] = 1.0f / sqrtf(total.m2 / total.count + 1e-5f);
}

constexpr int kBlockSize = kRowLanes * kPartLanes;
static_assert(kBlockSize >= 32 && kBlockSize <= 1024, "kRowLanes * kPartLanes must be in [32, 1024]");
static_assert(kPartLanes > 0 && (kPartLanes & (kPartLanes - 1)) == 0, "kPartLanes must be a power of 2");
static_assert(kPartsContiguous == 0 || kPartsContiguous == 1, "kPartsContiguous must be 0 or 1");

__device__ __forceinline__ void stats_finalize_main(const FusegenArgs& args) {
  __shared__ FusegenWelford lanes[kPartLanes][kRowLanes];
  const int tid = static_cast<int>(threadIdx.x);
  const int row_lane = kPartsContiguous ? tid / kPartLanes : tid % kRowLanes;
  const int part_lane = kPartsContiguous ? tid % kPartLanes : tid / kRowLanes;
  const long long row_count = rows(args), part_count = parts(args);
  for (long long first = static_cast<long long>(blockIdx.x) * kRowLanes; first < row_count;
       first += static_cast<long long>(gridDim.x) * kRowLanes) {
    const long long row = first + row_lane;
    FusegenWelford acc = {0.0f, 0.0f, 0.0f};
    if (row < row_count)
      for (long long part = part_lane; part < part_count; part += kPartLanes)
        acc = fusegen_welford_merge(acc, load_partial(args, row, part));
    lanes[part_lane][row_lane] = acc;
    __syncthreads();
    for (int half = kPartLanes / 2; half > 0; half /= 2) {
      if (part_lane < half)
        lanes[part_lane][row_lane] = fusegen_welford_merge(lanes[part_lane][row_lane], lanes[part_lane + half][row_lane]);
      __syncthreads();
    }
    if (part_lane == 0 && row < row_count)
      finalize_row(args, row, lanes[0][row_lane]);
    __syncthreads(); // `lanes` is reused by the next rows
  }
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kBlockSize) fusegen_stats_finalize(const FusegenArgs args) {
  stats_finalize_main(args);
}
}
