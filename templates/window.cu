// fusegen template: pooling over the last one to three dims of [N, C, ...]
// or [C, ...] (fp32): max, average and adaptive average/max pooling in 1-D,
// 2-D and 3-D (a 1-D or 2-D pool is a 3-D one whose leading window dims are
// 1), with a pointwise prologue applied to every input element as it is
// loaded and a pointwise epilogue on every pooled value.
//
// Work split: a "plane" is one (n, c) image of D x H x W inputs and kOutD x
// kOutH x kOutW outputs. blockIdx.x walks groups of kPlanesPerBlock
// consecutive planes (grid-stride); blockIdx.y picks a chunk of
// kOutputsPerBlock outputs of a plane (only when kPlanesPerBlock == 1).
// Inside a block, a "team" of kTeamSize consecutive threads computes one
// output: with one thread per output the taps of a window up to kKernelD x
// kKernelH x kKernelW are unrolled; larger windows (big adaptive bins, global
// pooling) are split over the team's lanes and combined in a fixed order
// (warp shuffles, then shared memory for teams wider than a warp), so results
// are deterministic.
//
// Split normalization (kPlaneStats == 1): the prologue applies a group_norm
// whose statistics arrive as per-tile partials (count, mean, M2). Before its
// planes' outputs, the block combines the partials of each plane's group with
// Chan's formula (tree in shared memory, fixed order) into mean and
// 1/sqrt(biased var + eps) (once per run of planes of the same group), and
// passes them to load_input.
//
// Max pooling: padding taps are skipped (they act as -inf); NaN propagates
// as in torch. Window taps are start + t * dilation. Average pooling divides
// by kDivisorOverride when it is set, else by the window clipped to the
// padded input (kCountIncludePad) or to the input itself; ceil_mode only
// changes the output extents. Adaptive bins are [floor(i*in/out),
// ceil((i+1)*in/out)).
//
// Hook contract (checked by fusegen-template-tool against hooks/WindowHooks.h):
//   "block_size"        constexpr int kBlockSize        threads per block (power of 2, >= 32)
//   "team_size"         constexpr int kTeamSize         threads per output (power of 2, <= kBlockSize)
//   "pool_mode"         constexpr int kPoolMode         0 max, 1 average, 2 adaptive average,
//                                                       3 adaptive max
//   "kernel_d"/"kernel_h"/"kernel_w" constexpr int kKernelD/H/W  window extent (adaptive: the
//                                                       largest bin, 0 when the input's extents
//                                                       are only known at run time)
//   "stride_d"/"stride_h"/"stride_w", "pad_d"/"pad_h"/"pad_w",
//   "dilation_d"/"dilation_h"/"dilation_w"              max/average pooling geometry
//   "out_d"/"out_h"/"out_w" constexpr int kOutD/H/W     output spatial dims (1 where absent)
//   "count_include_pad" constexpr bool kCountIncludePad average: padding taps count
//   "divisor_override"  constexpr int kDivisorOverride  average: the divisor (non-zero), or 0
//   "planes_per_block"  constexpr int kPlanesPerBlock   planes per block (1, or more for tiny planes)
//   "outputs_per_block" constexpr int kOutputsPerBlock  outputs of one plane per block (chunk)
//   "plane_stats"       constexpr int kPlaneStats       1: combine normalization partials per plane
//   "stats_eps"         constexpr float kStatsEps       eps of that normalization
//   "planes"            long long planes(args)          number of planes
//   "in_depth"/"in_height"/"in_width" long long in_depth/in_height/in_width(args)  D, H and W
//   "stats_parts"       long long stats_parts(args)     partial triples per plane's group
//   "stats_partials"    const float* stats_partials(args, plane)  the group's first triple
//   "load_input"        float load_input(args, plane, d, h, w, mean, rstd)
//                                                       input (d, h, w) of a plane after the prologue
//   "store_output"      void store_output(args, plane, od, oh, ow, pooled)
//                                                       epilogue and stores of one output
//   "entry"             the __global__ kernel; the generator renames it
//
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include, and
// the generator emits it once at the top of a generated file instead).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("block_size") constexpr int kBlockSize = 256;

FUSEGEN_HOOK("team_size") constexpr int kTeamSize = 1;

FUSEGEN_HOOK("pool_mode") constexpr int kPoolMode = 0;

FUSEGEN_HOOK("kernel_d") constexpr int kKernelD = 1;

FUSEGEN_HOOK("kernel_h") constexpr int kKernelH = 2;

FUSEGEN_HOOK("kernel_w") constexpr int kKernelW = 2;

FUSEGEN_HOOK("stride_d") constexpr int kStrideD = 1;

FUSEGEN_HOOK("stride_h") constexpr int kStrideH = 2;

FUSEGEN_HOOK("stride_w") constexpr int kStrideW = 2;

FUSEGEN_HOOK("pad_d") constexpr int kPadD = 0;

FUSEGEN_HOOK("pad_h") constexpr int kPadH = 0;

FUSEGEN_HOOK("pad_w") constexpr int kPadW = 0;

FUSEGEN_HOOK("dilation_d") constexpr int kDilationD = 1;

FUSEGEN_HOOK("dilation_h") constexpr int kDilationH = 1;

FUSEGEN_HOOK("dilation_w") constexpr int kDilationW = 1;

FUSEGEN_HOOK("out_d") constexpr int kOutD = 1;

FUSEGEN_HOOK("out_h") constexpr int kOutH = 4;

FUSEGEN_HOOK("out_w") constexpr int kOutW = 4;

FUSEGEN_HOOK("count_include_pad") constexpr bool kCountIncludePad = true;

FUSEGEN_HOOK("divisor_override") constexpr int kDivisorOverride = 0;

FUSEGEN_HOOK("planes_per_block") constexpr int kPlanesPerBlock = 1;

FUSEGEN_HOOK("outputs_per_block") constexpr int kOutputsPerBlock = 1024;

FUSEGEN_HOOK("plane_stats") constexpr int kPlaneStats = 0;

FUSEGEN_HOOK("stats_eps") constexpr float kStatsEps = 1e-5f;

FUSEGEN_HOOK("planes")
__device__ __forceinline__ long long planes(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("in_depth")
__device__ __forceinline__ long long in_depth(const FusegenArgs& args) {
  (void)args;
  return 1;
}

FUSEGEN_HOOK("in_height")
__device__ __forceinline__ long long in_height(const FusegenArgs& args) {
  (void)args;
  return 8;
}

FUSEGEN_HOOK("in_width")
__device__ __forceinline__ long long in_width(const FusegenArgs& args) {
  (void)args;
  return 8;
}

FUSEGEN_HOOK("stats_parts")
__device__ __forceinline__ long long stats_parts(const FusegenArgs& args) {
  (void)args;
  return 0;
}

FUSEGEN_HOOK("stats_partials")
__device__ __forceinline__ const float* stats_partials(const FusegenArgs& args, long long plane) {
  (void)plane;
  return args.buf[2];
}

FUSEGEN_HOOK("load_input")
__device__ __forceinline__ float load_input(const FusegenArgs& args, long long plane, long long d, long long h,
                                            long long w, float mean, float rstd) {
  (void)d;
  (void)mean;
  (void)rstd;
  return args.buf[0][(plane * 8 + h) * 8 + w];
}

FUSEGEN_HOOK("store_output")
__device__ __forceinline__ void store_output(const FusegenArgs& args, long long plane, long long od, long long oh,
                                             long long ow, float pooled) {
  (void)od;
  args.buf[1][(plane * kOutH + oh) * kOutW + ow] = pooled;
}

static_assert(kBlockSize >= 32 && kBlockSize <= 1024 && (kBlockSize & (kBlockSize - 1)) == 0,
              "kBlockSize must be a power of 2 in [32, 1024]");
static_assert(kTeamSize >= 1 && kTeamSize <= kBlockSize && (kTeamSize & (kTeamSize - 1)) == 0,
              "kTeamSize must be a power of 2 no larger than kBlockSize");
static_assert(kPoolMode >= 0 && kPoolMode <= 3,
              "kPoolMode must be 0 (max), 1 (average), 2 (adaptive average) or 3 (adaptive max)");
static_assert(kKernelD >= 0 && kKernelH >= 0 && kKernelW >= 0 && kStrideD > 0 && kStrideH > 0 && kStrideW > 0 &&
                  kPadD >= 0 && kPadH >= 0 && kPadW >= 0 && kDilationD > 0 && kDilationH > 0 && kDilationW > 0,
              "bad window geometry");
static_assert(kOutD > 0 && kOutH > 0 && kOutW > 0 && kPlanesPerBlock > 0 && kOutputsPerBlock > 0, "bad output tiling");
static_assert(kPlanesPerBlock == 1 || kOutputsPerBlock >= kOutD * kOutH * kOutW,
              "several planes per block need whole planes per block");

constexpr int kTeams = kBlockSize / kTeamSize; // outputs computed per round
constexpr int kPlaneOutputs = kOutD * kOutH * kOutW;
constexpr bool kMaxMode = kPoolMode == 0 || kPoolMode == 3;
constexpr bool kAdaptive = kPoolMode >= 2;

// The start value of a window: -inf for max (padding acts as -inf), 0 for sums.
__device__ __forceinline__ float window_identity() { return kMaxMode ? -__int_as_float(0x7f800000) : 0.0f; }

// torch's max: a NaN tap wins and stays (a later value never compares greater).
__device__ __forceinline__ float window_max(float best, float v) { return (v > best || v != v) ? v : best; }

__device__ __forceinline__ float window_combine(float a, float b) { return kMaxMode ? window_max(a, b) : a + b; }

// One dim of an output's window: taps t in [t0, t1) at input start + t * dilation.
struct WindowSpan {
  int start, t0, t1;
};

// Adaptive bin o of `out` over `in`: [floor(o*in/out), ceil((o+1)*in/out)).
__device__ __forceinline__ WindowSpan adaptive_span(int o, long long in, int out) {
  const int begin = static_cast<int>(o * in / out);
  const int end = static_cast<int>(((o + 1) * in + out - 1) / out);
  return {begin, 0, end - begin};
}

// Window of output o along a dim of extent `in`, clipped to the input; `padded`
// is its extent clipped to the padded input (count_include_pad's count).
template <int kKernel, int kStride, int kPad, int kDilation>
__device__ __forceinline__ WindowSpan pool_span(int o, long long in, int& padded) {
  const int start = o * kStride - kPad;
  const int size = static_cast<int>(in);
  padded = min(start + kKernel, size + kPad) - start;
  // First and one-past-last taps inside [0, size).
  const int t0 = start >= 0 ? 0 : (-start + kDilation - 1) / kDilation;
  const int t1 = start >= size ? 0 : min(kKernel, (size - 1 - start) / kDilation + 1);
  return {start, t0, max(t0, t1)};
}

// One output's window clipped to the input, and the average's divisor.
struct WindowBox {
  WindowSpan d, h, w;
  float divisor;
};

__device__ __forceinline__ WindowBox window_box(int od, int oh, int ow, long long depth, long long height,
                                                long long width) {
  WindowBox box;
  if (kAdaptive) {
    box.d = adaptive_span(od, depth, kOutD);
    box.h = adaptive_span(oh, height, kOutH);
    box.w = adaptive_span(ow, width, kOutW);
    box.divisor = static_cast<float>(box.d.t1 * box.h.t1 * box.w.t1);
    return box;
  }
  int padded_d, padded_h, padded_w;
  box.d = pool_span<kKernelD, kStrideD, kPadD, kDilationD>(od, depth, padded_d);
  box.h = pool_span<kKernelH, kStrideH, kPadH, kDilationH>(oh, height, padded_h);
  box.w = pool_span<kKernelW, kStrideW, kPadW, kDilationW>(ow, width, padded_w);
  if (kDivisorOverride != 0)
    box.divisor = static_cast<float>(kDivisorOverride);
  else if (kCountIncludePad)
    box.divisor = static_cast<float>(padded_d * padded_h * padded_w);
  else
    box.divisor = static_cast<float>((box.d.t1 - box.d.t0) * (box.h.t1 - box.h.t0) * (box.w.t1 - box.w.t0));
  return box;
}

// This lane's share of one output's window (max or sum of its taps).
__device__ __forceinline__ float window_partial(const FusegenArgs& args, long long plane, const WindowBox& box,
                                                int lane, float mean, float rstd) {
  constexpr int kDilD = kAdaptive ? 1 : kDilationD, kDilH = kAdaptive ? 1 : kDilationH,
                kDilW = kAdaptive ? 1 : kDilationW;
  float acc = window_identity();
  if (kTeamSize == 1 && kKernelD > 0 && kKernelH > 0 && kKernelW > 0) {
    // Taps fully unrolled: independent loads in flight, bounds as predicates.
#pragma unroll
    for (int kd = 0; kd < kKernelD; ++kd) {
#pragma unroll
      for (int kh = 0; kh < kKernelH; ++kh) {
#pragma unroll
        for (int kw = 0; kw < kKernelW; ++kw) {
          const int td = box.d.t0 + kd, th = box.h.t0 + kh, tw = box.w.t0 + kw;
          if (td < box.d.t1 && th < box.h.t1 && tw < box.w.t1)
            acc = window_combine(acc, load_input(args, plane, box.d.start + td * kDilD, box.h.start + th * kDilH,
                                                 box.w.start + tw * kDilW, mean, rstd));
        }
      }
    }
    return acc;
  }
  const int cols = box.w.t1 - box.w.t0;
  const int plane_taps = (box.h.t1 - box.h.t0) * cols;
  const int taps = (box.d.t1 - box.d.t0) * plane_taps;
  for (int tap = lane; tap < taps; tap += kTeamSize) {
    const int slab = tap / plane_taps, rest = tap - slab * plane_taps;
    const int row = rest / cols, col = rest - row * cols;
    acc = window_combine(acc, load_input(args, plane, box.d.start + (box.d.t0 + slab) * kDilD,
                                         box.h.start + (box.h.t0 + row) * kDilH, box.w.start + (box.w.t0 + col) * kDilW,
                                         mean, rstd));
  }
  return acc;
}
// Combines the lanes of every team; lane 0 of a team gets the result. Called
// by the whole block (uniform control flow).
__device__ __forceinline__ float team_reduce(float value) {
  constexpr int kWarpTeam = kTeamSize < 32 ? kTeamSize : 32;
#pragma unroll
  for (int offset = kWarpTeam / 2; offset > 0; offset /= 2)
    value = window_combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if (kTeamSize > 32) {
    constexpr int kWarpsPerTeam = kTeamSize / 32 > 0 ? kTeamSize / 32 : 1;
    __shared__ float warp_values[kBlockSize / 32];
    const int warp = static_cast<int>(threadIdx.x) / 32;
    if (threadIdx.x % 32 == 0)
      warp_values[warp] = value;
    __syncthreads();
    const int first = warp - warp % kWarpsPerTeam;
    value = warp_values[first];
    for (int w = 1; w < kWarpsPerTeam; ++w)
      value = window_combine(value, warp_values[first + w]);
    __syncthreads();
  }
  return value;
}

// Mean and 1/std of a normalization group from its `count` partials
// (count, mean, M2): per-thread Chan merges in a fixed stride order, then a
// tree in shared memory. Called by the whole block; thread 0 writes the results.
__device__ __forceinline__ void group_statistics(const float* parts, long long count, float* mean, float* rstd) {
  __shared__ FusegenWelford partial[kBlockSize];
  FusegenWelford s = {0.0f, 0.0f, 0.0f};
  for (long long i = threadIdx.x; i < count; i += kBlockSize)
    s = fusegen_welford_merge(s, FusegenWelford{parts[3 * i], parts[3 * i + 1], parts[3 * i + 2]});
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = kBlockSize / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half)
      partial[threadIdx.x] = fusegen_welford_merge(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const FusegenWelford total = partial[0];
    const float variance = fmaxf(total.m2 / total.count, 0.0f); // biased, as torch normalizes
    *mean = total.mean;
    *rstd = 1.0f / sqrtf(variance + kStatsEps);
  }
  __syncthreads(); // `partial` is reused by the next group
}

// Statistics of planes [plane0, plane0 + kPlanesPerBlock) into shared memory;
// consecutive planes of the same group share one combine.
__device__ __forceinline__ void plane_statistics(const FusegenArgs& args, long long plane0, long long plane_count,
                                                 float* mean, float* rstd) {
  const long long count = stats_parts(args);
  const float* previous = nullptr;
  for (int p = 0; p < kPlanesPerBlock && plane0 + p < plane_count; ++p) {
    const float* parts = stats_partials(args, plane0 + p);
    if (parts != previous) {
      group_statistics(parts, count, &mean[p], &rstd[p]);
    } else if (threadIdx.x == 0) {
      mean[p] = mean[p - 1];
      rstd[p] = rstd[p - 1];
    }
    previous = parts;
  }
  __syncthreads();
}

__device__ __forceinline__ void window_main(const FusegenArgs& args) {
  __shared__ float plane_mean[kPlanesPerBlock];
  __shared__ float plane_rstd[kPlanesPerBlock];
  const long long plane_count = planes(args);
  const long long depth = in_depth(args);
  const long long height = in_height(args);
  const long long width = in_width(args);
  const int team = static_cast<int>(threadIdx.x) / kTeamSize;
  const int lane = static_cast<int>(threadIdx.x) % kTeamSize;
  // Outputs [first, last) of each plane belong to this block.
  const int first = static_cast<int>(blockIdx.y) * kOutputsPerBlock;
  const int last = min(first + kOutputsPerBlock, kPlaneOutputs);
  const int items = kPlanesPerBlock == 1 ? last - first : kPlanesPerBlock * kPlaneOutputs;
  for (long long group = blockIdx.x; group * kPlanesPerBlock < plane_count; group += gridDim.x) {
    const long long plane0 = group * kPlanesPerBlock;
    if (kPlaneStats)
      plane_statistics(args, plane0, plane_count, plane_mean, plane_rstd);
    for (int base = 0; base < items; base += kTeams) {
      const int item = base + team;
      const int local = kPlanesPerBlock == 1 ? 0 : item / kPlaneOutputs;
      const int out = kPlanesPerBlock == 1 ? first + item : item % kPlaneOutputs;
      const long long plane = plane0 + local;
      const bool active = item < items && plane < plane_count;
      const int od = out / (kOutH * kOutW), oh = out / kOutW % kOutH, ow = out % kOutW;
      float acc = window_identity();
      WindowBox box = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 1.0f};
      if (active) {
        box = window_box(od, oh, ow, depth, height, width);
        const float mean = kPlaneStats ? plane_mean[local] : 0.0f;
        const float rstd = kPlaneStats ? plane_rstd[local] : 1.0f;
        acc = window_partial(args, plane, box, lane, mean, rstd);
      }
      if (kTeamSize > 1)
        acc = team_reduce(acc);
      if (active && lane == 0)
        store_output(args, plane, od, oh, ow, kMaxMode ? acc : acc / box.divisor);
    }
    if (kPlaneStats)
      __syncthreads(); // the next group's statistics overwrite plane_mean/plane_rstd
  }
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kBlockSize) fusegen_window(const FusegenArgs args) { window_main(args); }
}
