// fusegen template: reduction or softmax over arbitrary (non-trailing) dims (fp32).
//
// The fallback for reductions whose dims are not the trailing ones (sum over
// dim 0 of [N, C], min over dim 1 of [N, C, H, W]) and softmax/log_softmax
// along a dim that is not the last. One thread owns one independent row: the
// elements sharing every coordinate outside the reduced dims. The generator
// supplies the index math (load(row, j) is element j of row, with the
// prologue applied) and the stores; threads stride over the rows, and
// consecutive threads take consecutive rows, which is consecutive memory when
// the last dim is kept. The numerics match row_reduce.cu:
//   reductions   one pass: sum, mean (sum / count), max and min propagating
//                NaN (NaN for an empty row), logsumexp as a running (max,
//                scaled sum) pair (an all -inf row gives -inf);
//   softmax      max, then the sum of exp(x - max), then exp(x - max) / sum
//   log_softmax  or (x - max) - log(sum), re-reading the row for each pass.
// Accumulation is in float (sums Kahan-compensated) and sequential per row:
// deterministic.
//
// Hook contract (checked by fusegen-template-tool against GenericReduceHooks.h):
//   "block_size"    constexpr int kBlockSize   threads per block (multiple of 32)
//   "anchor"        constexpr int kAnchor      kGenSum .. kGenLogSoftmax below
//   "num_rows"      long long num_rows(args)   independent rows (output elements of a reduction)
//   "row_length"    long long row_length(args) elements per row
//   "load"          float load(args, row, j)   element j of a row, prologue applied
//   "store_row"     void store_row(args, row, value)   reductions: epilogue and stores
//   "store_element" void store_element(args, row, j, value)  softmax: epilogue and stores
//   "entry"         the __global__ kernel; the generator renames it
//
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include, and
// the generator emits it once at the top of a generated file instead).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

// What the kernel computes (kAnchor).
constexpr int kGenSum = 0;
constexpr int kGenMean = 1;
constexpr int kGenMax = 2;
constexpr int kGenMin = 3;
constexpr int kGenLogSumExp = 4;
constexpr int kGenSoftmax = 5;
constexpr int kGenLogSoftmax = 6;

FUSEGEN_HOOK("block_size") constexpr int kBlockSize = 256;

FUSEGEN_HOOK("anchor") constexpr int kAnchor = kGenSum;

FUSEGEN_HOOK("num_rows")
__device__ __forceinline__ long long num_rows(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("row_length")
__device__ __forceinline__ long long row_length(const FusegenArgs& args) { return args.dim[1]; }

FUSEGEN_HOOK("load")
__device__ __forceinline__ float load(const FusegenArgs& args, long long row, long long j) {
  return args.buf[0][j * args.dim[0] + row]; // reduces dim 0 of [length, rows]
}

FUSEGEN_HOOK("store_row")
__device__ __forceinline__ void store_row(const FusegenArgs& args, long long row, float value) {
  args.buf[1][row] = value;
}

FUSEGEN_HOOK("store_element")
__device__ __forceinline__ void store_element(const FusegenArgs& args, long long row, long long j, float value) {
  args.buf[1][j * args.dim[0] + row] = value;
}

static_assert(kBlockSize > 0 && kBlockSize <= 1024 && kBlockSize % 32 == 0,
              "kBlockSize must be a multiple of 32 in [32, 1024]");
static_assert(kAnchor >= kGenSum && kAnchor <= kGenLogSoftmax, "unknown anchor");

__device__ __forceinline__ float gen_inf() { return __int_as_float(0x7f800000); }

// logsumexp shifts by the maximum, by 0 where the maximum is infinite (torch).
__device__ __forceinline__ float gen_shift(float max) { return isinf(max) ? 0.0f : max; }

// One reduction result over the row.
__device__ __forceinline__ float gen_reduce_row(const FusegenArgs& args, long long row, long long length) {
  if constexpr (kAnchor == kGenLogSumExp) {
    // Running maximum and sum of exp(x - shift(max)), rescaled when the
    // maximum grows (an empty sum stays 0 rather than 0 * inf).
    float max = -gen_inf();
    float scaled = 0.0f;
    for (long long j = 0; j < length; ++j) {
      const float x = load(args, row, j);
      const float next = fusegen_maximum(max, x);
      if (scaled != 0.0f)
        scaled *= expf(gen_shift(max) - gen_shift(next));
      scaled += expf(x - gen_shift(next));
      max = next;
    }
    return logf(scaled) + gen_shift(max);
  } else if constexpr (kAnchor == kGenMax || kAnchor == kGenMin) {
    float acc = kAnchor == kGenMax ? -gen_inf() : gen_inf();
    for (long long j = 0; j < length; ++j) {
      const float x = load(args, row, j);
      acc = kAnchor == kGenMax ? fusegen_maximum(acc, x) : fusegen_minimum(acc, x);
    }
    return length == 0 ? __int_as_float(0x7fc00000) : acc; // no identity: NaN when empty, as the reference
  } else {
    // Kahan-compensated: one thread may add up a long strided row alone. No
    // compensation once the sum is infinite (inf - inf would turn it to NaN).
    float sum = 0.0f;
    float compensation = 0.0f;
    for (long long j = 0; j < length; ++j) {
      const float term = load(args, row, j) - compensation;
      const float next = sum + term;
      compensation = isfinite(next) ? (next - sum) - term : 0.0f;
      sum = next;
    }
    return kAnchor == kGenMean ? sum / static_cast<float>(length) : sum; // mean of nothing: 0/0 = NaN
  }
}

// softmax / log_softmax of the row: three passes over it.
__device__ __forceinline__ void gen_softmax_row(const FusegenArgs& args, long long row, long long length) {
  float max = -gen_inf();
  for (long long j = 0; j < length; ++j)
    max = fusegen_maximum(max, load(args, row, j));
  float sum = 0.0f;
  for (long long j = 0; j < length; ++j)
    sum += expf(load(args, row, j) - max);
  const float log_sum = logf(sum);
  for (long long j = 0; j < length; ++j) {
    const float shifted = load(args, row, j) - max;
    store_element(args, row, j, kAnchor == kGenSoftmax ? expf(shifted) / sum : shifted - log_sum);
  }
}

__device__ __forceinline__ void generic_reduce_main(const FusegenArgs& args) {
  const long long rows = num_rows(args);
  const long long length = row_length(args);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows; row += stride) {
    if constexpr (kAnchor <= kGenLogSumExp)
      store_row(args, row, gen_reduce_row(args, row, length));
    else
      gen_softmax_row(args, row, length);
  }
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kBlockSize) fusegen_generic_reduce(const FusegenArgs args) {
  generic_reduce_main(args);
}
}
