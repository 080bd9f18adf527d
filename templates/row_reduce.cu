// fusegen template: normalization or reduction over the trailing dims (fp32).
//
// The input is viewed as `num_segments()` contiguous segments of
// `segment_length()` elements: one per output element of a reduction, per
// normalized row (group_norm: per (sample, group)). A team of kTeamSize
// threads handles one segment at a time: a warp slice (1..32 threads, for
// short segments) or the whole block. The template owns the numerics:
//   reductions   one pass: sum, mean (sum / count), max and min propagating
//                NaN (NaN for an empty segment), logsumexp as a running
//                (max, scaled sum) pair rescaled when the max grows, so large
//                inputs do not overflow and an all -inf segment gives -inf;
//   moments      group/layer/instance_norm: mean, then the centered sum of
//                squares (biased variance, two passes: accurate where the
//                sum of squares would cancel; a segment not wholly cached
//                merges chunk moments in one pass instead), then
//                (x - mean) * 1/sqrt(var + eps) handed to store_element;
//   softmax      one pass for the max and the sum of exp(x - max) (the
//                logsumexp pair, online), then exp(x - max) * (1 / sum)
//   log_softmax  or (x - max) - log(sum); an infinite max gives NaN as torch.
// Passes after the first read the segment back from a shared-memory cache
// when kCacheFloats > 0, else reload it through load(): a segment that fits
// is read from global memory once; a longer one keeps its first kCacheFloats
// elements cached and reloads only the rest (from L2, as few rows are in
// flight at once), moments then in one pass (below). Each thread issues
// kUnroll independent loads before using any, to keep memory busy with few
// blocks per SM (a long cached segment leaves room for one).
// Accumulation is in float; every team and block reduction runs in a fixed
// order, so results are deterministic for a given launch.
//
// Work items: the grid strides over items of kSegmentsPerItem consecutive
// segments, spread over the block's teams. With kClusterSize > 1 (sm_90; a
// normalization, one block-wide team, one segment per item) a cluster of
// kClusterSize blocks shares each segment: rank r takes the r-th of
// kClusterSize nearly equal parts, caches it, and the blocks merge their
// statistics through distributed shared memory in rank order (the same
// total in every rank) before each writes its part. So a row too long for
// one block's cache is still read from global memory once, and few long
// rows keep more SMs busy. With kFinalOp set (a reduction
// over the same rows fused after a normalization), an item is one row of the
// final reduction: every element store_element returns is folded into it,
// and the block's total goes to store_final.
//
// Hook contract (checked by fusegen-template-tool against RowReduceHooks.h):
//   "block_size"        constexpr int kBlockSize        threads per block (multiple of 32)
//   "team_size"         constexpr int kTeamSize         threads per segment: 1, 2, .., 32
//                                                       or kBlockSize
//   "segments_per_item" constexpr int kSegmentsPerItem  segments per grid-stride item
//   "unroll"            constexpr int kUnroll           loads in flight per thread and step (1..32)
//   "vector"            constexpr int kVector           1, or 4: a thread takes runs of 4 adjacent
//                                                       elements, each through load4 and
//                                                       store_element4 (16-byte accesses; the
//                                                       generator's promise: the segment length,
//                                                       kCacheFloats and kUnroll are multiples of 4)
//   "cluster_size"      constexpr int kClusterSize      blocks sharing a segment (1: none);
//                                                       > 1 declares __cluster_dims__(kClusterSize,
//                                                       1, 1) on the entry, and grid.x is kClusterSize
//                                                       times the blocks of the items
//   "cache_floats"      constexpr int kCacheFloats      shared-memory cache per team in
//                                                       floats (0: reload); the launch's
//                                                       dynamic shared memory holds
//                                                       kBlockSize / kTeamSize of them;
//                                                       with a cluster, a rank's part
//   "anchor"            constexpr int kAnchor           kRowSum .. kRowLogSoftmax below
//   "final_op"          constexpr int kFinalOp          kRowNone or a reduction kRowSum .. kRowLogSumExp
//   "eps"               constexpr float kEps            moments only
//   "num_segments"      long long num_segments(args)
//   "segment_length"    long long segment_length(args)
//   "load"              float load(args, segment, i)    input element i, prologue applied
//   "load4"             float4 load4(args, segment, i)  elements i .. i + 3 (i a multiple of 4),
//                                                       with kVector 4
//   "store_segment"     void store_segment(args, segment, value)    reductions: result,
//                                                       epilogue and stores
//   "element_stores"    constexpr int kElementStores    values store_element() stores per element
//   "defer_element_stores" constexpr bool kDeferElementStores  store_element() reads memory: its
//                                                       stores wait for a chunk's loads
//   "store_element"     float store_element(args, segment, i, value, stores)
//                                                       normalizations: affine, epilogue;
//                                                       puts each value it stores, with its
//                                                       address, in stores (written after the
//                                                       loads of the thread's next elements:
//                                                       helpers.cu FusegenStores); returns the
//                                                       value the final reduction folds. No
//                                                       other effects: it also runs on a
//                                                       stand-in element whose stores are
//                                                       dropped
//   "store_element4"    float4 store_element4(args, segment, i, value4, stores4)
//                                                       store_element on elements i .. i + 3 at
//                                                       once (kVector 4): ElementStores4 holds
//                                                       16-byte stores
//   "store_final"       void store_final(args, item, value)  final reduction's epilogue
//   "entry"             the __global__ kernel; the generator renames it
//
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include, and
// the generator emits it once at the top of a generated file instead).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

// What the anchor computes (kAnchor), and the fused final reduction (kFinalOp).
constexpr int kRowNone = -1;
constexpr int kRowSum = 0;
constexpr int kRowMean = 1;
constexpr int kRowMax = 2;
constexpr int kRowMin = 3;
constexpr int kRowLogSumExp = 4;
constexpr int kRowMoments = 5; // group_norm, layer_norm, instance_norm
constexpr int kRowSoftmax = 6;
constexpr int kRowLogSoftmax = 7;

FUSEGEN_HOOK("block_size") constexpr int kBlockSize = 256;

FUSEGEN_HOOK("team_size") constexpr int kTeamSize = 256;

FUSEGEN_HOOK("segments_per_item") constexpr int kSegmentsPerItem = 1;

FUSEGEN_HOOK("cluster_size") constexpr int kClusterSize = 1;

FUSEGEN_HOOK("unroll") constexpr int kUnroll = 8;

FUSEGEN_HOOK("vector") constexpr int kVector = 1;

FUSEGEN_HOOK("cache_floats") constexpr int kCacheFloats = 0;

FUSEGEN_HOOK("anchor") constexpr int kAnchor = kRowSum;

FUSEGEN_HOOK("final_op") constexpr int kFinalOp = kRowNone;

FUSEGEN_HOOK("eps") constexpr float kEps = 1e-5f;

FUSEGEN_HOOK("num_segments")
__device__ __forceinline__ long long num_segments(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("segment_length")
__device__ __forceinline__ long long segment_length(const FusegenArgs& args) { return args.dim[1]; }

FUSEGEN_HOOK("load")
__device__ __forceinline__ float load(const FusegenArgs& args, long long segment, long long i) {
  return args.buf[0][segment * args.dim[1] + i];
}

FUSEGEN_HOOK("load4")
__device__ __forceinline__ float4 load4(const FusegenArgs& args, long long segment, long long i) {
  return *reinterpret_cast<const float4*>(args.buf[0] + segment * args.dim[1] + i);
}

FUSEGEN_HOOK("store_segment")
__device__ __forceinline__ void store_segment(const FusegenArgs& args, long long segment, float value) {
  args.buf[1][segment] = value;
}

FUSEGEN_HOOK("element_stores") constexpr int kElementStores = 1;

struct ElementStores : FusegenStores<kElementStores> {};
struct ElementStores4 : FusegenStores<kElementStores, float4> {};

FUSEGEN_HOOK("defer_element_stores") constexpr bool kDeferElementStores = false;

static_assert(!kDeferElementStores || kElementStores > 0, "deferring needs stores to defer");

FUSEGEN_HOOK("store_element")
__device__ __forceinline__ float store_element(const FusegenArgs& args, long long segment, long long i, float value,
                                               ElementStores& stores) {
  stores.at[0] = args.buf[1] + segment * args.dim[1] + i;
  stores.value[0] = value;
  return value;
}

FUSEGEN_HOOK("store_element4")
__device__ __forceinline__ float4 store_element4(const FusegenArgs& args, long long segment, long long i, float4 value,
                                                 ElementStores4& stores) {
  stores.at[0] = reinterpret_cast<float4*>(args.buf[1] + segment * args.dim[1] + i);
  stores.value[0] = value;
  return value;
}

FUSEGEN_HOOK("store_final")
__device__ __forceinline__ void store_final(const FusegenArgs& args, long long item, float value) {
  args.buf[2][item] = value;
}

constexpr int kTeams = kBlockSize / kTeamSize;
// The op folding what store_element returns (any, without a final reduction).
constexpr int kFinalFold = kFinalOp == kRowNone ? kRowSum : kFinalOp;
constexpr int kWarps = kBlockSize / 32;

static_assert(kBlockSize > 0 && kBlockSize <= 1024 && kBlockSize % 32 == 0,
              "kBlockSize must be a multiple of 32 in [32, 1024]");
static_assert(kTeamSize == kBlockSize || (kTeamSize >= 1 && kTeamSize <= 32 && (kTeamSize & (kTeamSize - 1)) == 0),
              "kTeamSize must be a power of two up to 32, or kBlockSize");
static_assert(kSegmentsPerItem >= 1 && kCacheFloats >= 0, "bad segments_per_item or cache_floats");
static_assert(kClusterSize >= 1 && kClusterSize <= 8, "a portable cluster has at most 8 blocks");
static_assert(kUnroll >= 1 && kUnroll <= 32, "kUnroll must be in [1, 32]");
static_assert(kVector == 1 || (kVector == 4 && kUnroll % 4 == 0 && kCacheFloats % 4 == 0),
              "kVector is 1, or 4 with kUnroll and kCacheFloats multiples of 4");
constexpr int kRuns = kVector == 4 ? kUnroll / 4 : 1; // runs of 4 in a chunk (with kVector 4)
static_assert(kClusterSize == 1 ||
                  (kTeamSize == kBlockSize && kSegmentsPerItem == 1 && kAnchor >= kRowMoments && kFinalOp == kRowNone),
              "a cluster shares one segment of a normalization without a final reduction, one team per block");
static_assert(kAnchor >= kRowSum && kAnchor <= kRowLogSoftmax, "unknown anchor");
static_assert(kFinalOp == kRowNone || (kFinalOp >= kRowSum && kFinalOp <= kRowLogSumExp && kAnchor >= kRowMoments),
              "a final reduction follows a normalization and is one of kRowSum .. kRowLogSumExp");

// ---- reduction state and its combination (one definition for every op) ----

// value: the sum, the extremum, or for logsumexp the running maximum; scaled
// (logsumexp only): the sum of exp(x - row_shift(value)).
struct RowAcc {
  float value;
  float scaled;
};

// logsumexp shifts by the maximum, by 0 where the maximum is infinite (torch).
__device__ __forceinline__ float row_shift(float max) { return isinf(max) ? 0.0f : max; }

// `scaled` re-expressed against a new maximum; an empty sum stays 0 (its
// -inf maximum would give 0 * inf otherwise).
__device__ __forceinline__ float row_rescale(float scaled, float old_max, float new_max) {
  return scaled == 0.0f ? 0.0f : scaled * expf(row_shift(old_max) - row_shift(new_max));
}

template <int Op> __device__ __forceinline__ RowAcc row_identity() {
  if constexpr (Op == kRowMax || Op == kRowLogSumExp)
    return {-__int_as_float(0x7f800000), 0.0f};
  else if constexpr (Op == kRowMin)
    return {__int_as_float(0x7f800000), 0.0f};
  else
    return {0.0f, 0.0f};
}

template <int Op> __device__ __forceinline__ RowAcc row_add(RowAcc acc, float x) {
  if constexpr (Op == kRowMax) {
    acc.value = fusegen_maximum(acc.value, x);
  } else if constexpr (Op == kRowMin) {
    acc.value = fusegen_minimum(acc.value, x);
  } else if constexpr (Op == kRowLogSumExp) {
    const float max = fusegen_maximum(acc.value, x);
    acc.scaled = row_rescale(acc.scaled, acc.value, max) + expf(x - row_shift(max));
    acc.value = max;
  } else {
    acc.value += x;
  }
  return acc;
}

// Commutative (bit for bit), so both lanes of a butterfly get the same value.
template <int Op> __device__ __forceinline__ RowAcc row_merge(RowAcc a, RowAcc b) {
  if constexpr (Op == kRowLogSumExp) {
    const float max = fusegen_maximum(a.value, b.value);
    return {max, row_rescale(a.scaled, a.value, max) + row_rescale(b.scaled, b.value, max)};
  } else {
    return row_add<Op>(a, b.value);
  }
}

// The op's result over `count` elements.
template <int Op> __device__ __forceinline__ float row_result(RowAcc acc, long long count) {
  if constexpr (Op == kRowMean)
    return acc.value / static_cast<float>(count); // 0/0 = NaN for an empty slice, as torch
  else if constexpr (Op == kRowMax || Op == kRowMin)
    return count == 0 ? __int_as_float(0x7fc00000) : acc.value;
  else if constexpr (Op == kRowLogSumExp)
    return logf(acc.scaled) + row_shift(acc.value);
  else
    return acc.value;
}

// ---- team and block reductions (every participating thread gets the total) ----

// Butterfly over `width` lanes of the calling warp named by `mask`.
template <int Op> __device__ __forceinline__ RowAcc row_warp_reduce(RowAcc acc, unsigned int mask, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) {
    RowAcc other;
    other.value = __shfl_xor_sync(mask, acc.value, offset, width);
    other.scaled = Op == kRowLogSumExp ? __shfl_xor_sync(mask, acc.scaled, offset, width) : 0.0f;
    acc = row_merge<Op>(acc, other);
  }
  return acc;
}

// Whole block: warps first, then every thread merges the warp totals in
// warp order. `scratch` holds kWarps entries and is free again on return.
template <int Op> __device__ __forceinline__ RowAcc row_block_reduce(RowAcc acc, RowAcc* scratch) {
  acc = row_warp_reduce<Op>(acc, 0xffffffffu, 32);
  if (threadIdx.x % 32 == 0)
    scratch[threadIdx.x / 32] = acc;
  __syncthreads();
  RowAcc total = scratch[0];
  for (int w = 1; w < kWarps; ++w)
    total = row_merge<Op>(total, scratch[w]);
  __syncthreads();
  return total;
}

// The lanes of the calling thread's team within its warp (kTeamSize <= 32).
constexpr unsigned int kTeamLanes = kTeamSize >= 32 ? 0xffffffffu : (1u << (kTeamSize % 32)) - 1u;

__device__ __forceinline__ unsigned int row_team_mask() {
  if constexpr (kTeamSize >= 32)
    return kTeamLanes;
  else
    return kTeamLanes << ((threadIdx.x % 32) / kTeamSize * kTeamSize);
}

template <int Op> __device__ __forceinline__ RowAcc row_team_reduce(RowAcc acc, RowAcc* scratch) {
  if constexpr (kTeamSize <= 32)
    return row_warp_reduce<Op>(acc, row_team_mask(), kTeamSize);
  else
    return row_block_reduce<Op>(acc, scratch);
}

// ---- one segment ----

// How a pass reads its segment: through load() only, from a cache holding
// the whole segment, or from a cache holding elements [0, kCacheFloats)
// with the rest through load().
enum class RowCache { kNone, kWhole, kPrefix };

// Whether element i lives in the cache.
template <RowCache kCache> __device__ __forceinline__ bool row_cached(long long i) {
  if constexpr (kCache == RowCache::kPrefix)
    return i < kCacheFloats;
  return kCache == RowCache::kWhole;
}

// A block's part of a segment: elements [begin, begin + length). The whole
// segment without a cluster; the cache and the loops below index the part.
struct RowPart {
  long long segment;
  long long begin;
  long long length;
};

// A thread's chunk of a pass: kUnroll elements of the part, as kUnroll /
// kVector runs of kVector adjacent ones, kTeamSize * kVector apart; the
// team's chunks start kChunkStride apart. Element u of the chunk at i0:
constexpr long long kChunkStride = static_cast<long long>(kUnroll) * kTeamSize;
__device__ __forceinline__ long long row_chunk_start(int lane) { return static_cast<long long>(lane) * kVector; }
__device__ __forceinline__ long long row_element(long long i0, int u) {
  return i0 + static_cast<long long>(u / kVector) * (kTeamSize * kVector) + u % kVector;
}

// The thread's chunk at i0 (those of its elements in the part: a prefix,
// whose length is returned) from the cache or through load(); every load is
// issued before any value is used. With kVector 4 the chunk is read in runs
// of 4, each one 16-byte access (load4, or the cache); a run is wholly in
// the part or wholly past it, as the part's length and the runs' starts are
// multiples of 4. kFill (the first pass): everything from memory, and the
// cached elements go to the cache. Each thread reads back only the elements
// it cached itself: no barrier.
template <RowCache kCache, bool kFill>
__device__ __forceinline__ int row_fetch(const FusegenArgs& args, const RowPart& part, long long i0, float* cache,
                                         float (&x)[kUnroll]) {
  if constexpr (kVector == 4) {
    float4 runs[kRuns];
    int valid = 0;
#pragma unroll
    for (int r = 0; r < kRuns; ++r) {
      const long long i = row_element(i0, 4 * r); // a run is wholly cached or not: kCacheFloats % 4 == 0
      runs[r] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (i < part.length) {
        runs[r] = !kFill && row_cached<kCache>(i) ? *reinterpret_cast<const float4*>(cache + i)
                                                  : load4(args, part.segment, part.begin + i);
        valid = 4 * (r + 1);
      }
    }
#pragma unroll
    for (int r = 0; r < kRuns; ++r) {
      x[4 * r] = runs[r].x;
      x[4 * r + 1] = runs[r].y;
      x[4 * r + 2] = runs[r].z;
      x[4 * r + 3] = runs[r].w;
      const long long i = row_element(i0, 4 * r);
      if (kFill && kCache != RowCache::kNone && 4 * r < valid && row_cached<kCache>(i))
        *reinterpret_cast<float4*>(cache + i) = runs[r];
    }
    return valid;
  }
  int valid = 0;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const long long i = row_element(i0, u);
    x[u] = 0.0f;
    if (i < part.length) {
      x[u] = !kFill && row_cached<kCache>(i) ? cache[i] : load(args, part.segment, part.begin + i);
      valid = u + 1;
    }
  }
  if constexpr (kFill && kCache != RowCache::kNone) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long i = row_element(i0, u);
      if (u < valid && row_cached<kCache>(i))
        cache[i] = x[u];
    }
  }
  return valid;
}

// Folds `valid` fetched elements in index order; logsumexp rescales once per
// chunk (to the chunk's new maximum) instead of once per element.
template <int Op> __device__ __forceinline__ RowAcc row_add_chunk(RowAcc acc, const float (&x)[kUnroll], int valid) {
  if constexpr (Op == kRowLogSumExp) {
    float max = acc.value;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < valid)
        max = fusegen_maximum(max, x[u]);
    const float shift = row_shift(max);
    float scaled = row_rescale(acc.scaled, acc.value, max);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < valid)
        scaled += expf(x[u] - shift);
    return {max, scaled};
  } else {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < valid)
        acc = row_add<Op>(acc, x[u]);
    return acc;
  }
}

// The calling thread's share of a pass folding every element into Op.
template <int Op, RowCache kCache, bool kFill>
__device__ __forceinline__ RowAcc row_fold(const FusegenArgs& args, const RowPart& part, int lane, float* cache) {
  RowAcc acc = row_identity<Op>();
  for (long long i0 = row_chunk_start(lane); i0 < part.length; i0 += kChunkStride) {
    float x[kUnroll];
    const int valid = row_fetch<kCache, kFill>(args, part, i0, cache, x);
    acc = row_add_chunk<Op>(acc, x, valid);
  }
  return acc;
}

// Folds every element into the anchor reduction; lane 0 stores the result.
__device__ __forceinline__ void row_reduce_segment(const FusegenArgs& args, long long segment, long long length,
                                                   int lane, RowAcc* scratch) {
  RowAcc acc = row_fold<kAnchor, RowCache::kNone, false>(args, RowPart{segment, 0, length}, lane, nullptr);
  acc = row_team_reduce<kAnchor>(acc, scratch);
  if (lane == 0)
    store_segment(args, segment, row_result<kAnchor>(acc, length));
}

// Moments of a segment not wholly cached in one pass (filling the cache's
// prefix): each chunk's own mean and centered sum of squares (exact
// two-pass within the chunk), merged into the running (count, mean, M2)
// triple by Chan et al.'s update, which, unlike a sum of squares, does not
// cancel when the mean is large against the spread.
template <RowCache kCache>
__device__ __forceinline__ FusegenWelford row_moments_one_pass(const FusegenArgs& args, const RowPart& part, int lane,
                                                               float* cache) {
  FusegenWelford moments = {0.0f, 0.0f, 0.0f};
  for (long long i0 = row_chunk_start(lane); i0 < part.length; i0 += kChunkStride) {
    float x[kUnroll];
    const int valid = row_fetch<kCache, true>(args, part, i0, cache, x); // >= 1
    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < valid)
        sum += x[u];
    const float count = static_cast<float>(valid), mean = sum / count;
    float m2 = 0.0f;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < valid)
        m2 = fmaf(x[u] - mean, x[u] - mean, m2);
    moments = fusegen_welford_merge(moments, FusegenWelford{count, mean, m2});
  }
  return moments;
}

// The team's merged moments, in a fixed order (a shuffle-down tree to the
// team's first lane, then the warps in order), the same in every thread.
__device__ __forceinline__ FusegenWelford row_team_moments(FusegenWelford moments, FusegenWelford* scratch) {
  constexpr int kWidth = kTeamSize < 32 ? kTeamSize : 32;
  const unsigned int mask = row_team_mask();
  for (int offset = kWidth / 2; offset > 0; offset /= 2) {
    const FusegenWelford other = {__shfl_down_sync(mask, moments.count, offset, kWidth),
                                  __shfl_down_sync(mask, moments.mean, offset, kWidth),
                                  __shfl_down_sync(mask, moments.m2, offset, kWidth)};
    moments = fusegen_welford_merge(moments, other); // lanes past the tree's root hold partial sums
  }
  moments = {__shfl_sync(mask, moments.count, 0, kWidth), __shfl_sync(mask, moments.mean, 0, kWidth),
             __shfl_sync(mask, moments.m2, 0, kWidth)};
  if constexpr (kTeamSize <= 32) {
    return moments;
  } else {
    if (threadIdx.x % 32 == 0)
      scratch[threadIdx.x / 32] = moments;
    __syncthreads();
    FusegenWelford total = scratch[0];
    for (int w = 1; w < kWarps; ++w)
      total = fusegen_welford_merge(total, scratch[w]);
    __syncthreads();
    return total;
  }
}

// The centered sum of squares over a wholly cached segment (moments' second pass).
__device__ __forceinline__ float row_centered_squares(const FusegenArgs& args, const RowPart& part, int lane,
                                                      float* cache, float mean, RowAcc* scratch) {
  RowAcc squares = row_identity<kRowSum>();
  for (long long i0 = row_chunk_start(lane); i0 < part.length; i0 += kChunkStride) {
    float x[kUnroll];
    const int valid = row_fetch<RowCache::kWhole, false>(args, part, i0, cache, x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const float d = x[u] - mean;
      if (u < valid)
        squares = row_add<kRowSum>(squares, d * d);
    }
  }
  return row_team_reduce<kRowSum>(squares, scratch).value;
}

// One element of the write pass: normalized against `center` (mean or max)
// and `scale` (1/std, 1/sum, or the sum's log). Softmax multiplies by the
// sum's reciprocal instead of dividing each element (one more rounding, at
// most an ulp): softmax [4096, 32000] on an H100 0.508 -> 0.466 ms
// (bench/NOTES.md v56).
__device__ __forceinline__ float row_normalized(float x, float center, float scale) {
  const float d = x - center;
  if constexpr (kAnchor == kRowMoments || kAnchor == kRowSoftmax)
    return (kAnchor == kRowSoftmax ? expf(d) : d) * scale;
  else
    return d - scale;
}

// A chunk's write with kVector 4: store_element4 on each run of 4 in the
// part (`valid` elements: whole runs), 16-byte accesses, its stores
// deferred as store_element's are.
__device__ __forceinline__ void row_write_runs(const FusegenArgs& args, const RowPart& part, long long i0,
                                               const float (&x)[kUnroll], int valid, float center, float scale,
                                               RowAcc& final_acc) {
  ElementStores4 stores[kRuns]; // a run past the part stores nothing (null addresses)
#pragma unroll
  for (int r = 0; r < kRuns; ++r) {
    if (4 * r >= valid)
      break;
    const float4 value = {row_normalized(x[4 * r], center, scale), row_normalized(x[4 * r + 1], center, scale),
                          row_normalized(x[4 * r + 2], center, scale), row_normalized(x[4 * r + 3], center, scale)};
    const float4 folded = store_element4(args, part.segment, part.begin + row_element(i0, 4 * r), value, stores[r]);
    if constexpr (kFinalOp != kRowNone) {
      final_acc = row_add<kFinalFold>(final_acc, folded.x);
      final_acc = row_add<kFinalFold>(final_acc, folded.y);
      final_acc = row_add<kFinalFold>(final_acc, folded.z);
      final_acc = row_add<kFinalFold>(final_acc, folded.w);
    }
    if constexpr (!kDeferElementStores)
      stores[r].write();
  }
  if constexpr (kDeferElementStores)
#pragma unroll
    for (int r = 0; r < kRuns; ++r)
      stores[r].write();
}

// Normalizes every element, stores it, and folds what store_element returns
// into `final_acc` (the fused final reduction, when there is one). With
// kDeferElementStores, store_element runs on all kUnroll elements of a
// chunk before their stores are written, on element i0 as the stand-in past
// the row's end (its stores dropped): straight-line code, so that the
// chunk's parameter loads (a layer_norm's weight and bias) are in flight
// together instead of each waiting behind the stores before it. A hook
// without loads stores as it goes (deferred, softmax ran 12-20% slower;
// bench/NOTES.md v51).
template <RowCache kCache>
__device__ __forceinline__ void row_write(const FusegenArgs& args, const RowPart& part, int lane, float* cache,
                                          float center, float scale, RowAcc& final_acc) {
  for (long long i0 = row_chunk_start(lane); i0 < part.length; i0 += kChunkStride) {
    float x[kUnroll];
    const int valid = row_fetch<kCache, false>(args, part, i0, cache, x); // >= 1
    if constexpr (kVector == 4) {
      row_write_runs(args, part, i0, x, valid, center, scale, final_acc);
      continue;
    }
    if constexpr (kDeferElementStores) {
      ElementStores stores[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const bool inside = u < valid;
        const long long i = part.begin + (inside ? row_element(i0, u) : i0);
        const float folded =
            store_element(args, part.segment, i, row_normalized(x[inside ? u : 0], center, scale), stores[u]);
        if (!inside)
          stores[u].clear();
        if constexpr (kFinalOp != kRowNone)
          if (inside)
            final_acc = row_add<kFinalFold>(final_acc, folded);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        stores[u].write();
    } else {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (u >= valid)
          break;
        ElementStores stores;
        const float folded = store_element(args, part.segment, part.begin + row_element(i0, u),
                                           row_normalized(x[u], center, scale), stores);
        stores.write();
        if constexpr (kFinalOp != kRowNone)
          final_acc = row_add<kFinalFold>(final_acc, folded);
      }
    }
  }
}

// What the write pass scales by: 1/std from the centered sum of squares
// (moments), 1/sum of exp(x - max) (softmax) or the sum's log (log_softmax).
__device__ __forceinline__ float row_scale(float statistic, long long length) {
  if (kAnchor == kRowMoments)
    return fusegen_rsqrt(statistic / static_cast<float>(length) + kEps);
  return kAnchor == kRowSoftmax ? 1.0f / statistic : logf(statistic);
}

// ---- a segment shared by a cluster (kClusterSize > 1) ----

__device__ __forceinline__ RowAcc row_cluster_read(const RowAcc* slot, unsigned int rank) {
  const unsigned int address = fusegen_cluster_address(slot, rank);
  return {fusegen_cluster_load(address), fusegen_cluster_load(address + 4)};
}

__device__ __forceinline__ FusegenWelford row_cluster_read(const FusegenWelford* slot, unsigned int rank) {
  const unsigned int address = fusegen_cluster_address(slot, rank);
  return {fusegen_cluster_load(address), fusegen_cluster_load(address + 4), fusegen_cluster_load(address + 8)};
}

// The cluster's total of every block's `local` statistic, merged in rank
// order, so every rank gets the same bits. One cluster barrier per segment:
// the slots alternate with `parity` (the block's segment count, the same in
// every rank), so a rank running ahead writes the other slot, and none can
// be two segments ahead, since each segment's barrier waits for all ranks
// to have read the segment before.
template <class T, class Merge>
__device__ __forceinline__ T row_cluster_total(T local, T (&slots)[2], int parity, Merge merge) {
  if constexpr (kClusterSize == 1) {
    return local;
  } else {
    if (threadIdx.x == 0)
      slots[parity] = local;
    fusegen_cluster_sync();
    T total = row_cluster_read(&slots[parity], 0);
    for (unsigned int rank = 1; rank < kClusterSize; ++rank)
      total = merge(total, row_cluster_read(&slots[parity], rank));
    return total;
  }
}

__device__ __forceinline__ FusegenWelford row_cluster_moments(FusegenWelford local, int parity) {
  __shared__ FusegenWelford slots[2];
  return row_cluster_total(local, slots, parity,
                           [](FusegenWelford a, FusegenWelford b) { return fusegen_welford_merge(a, b); });
}

__device__ __forceinline__ RowAcc row_cluster_pair(RowAcc local, int parity) {
  __shared__ RowAcc slots[2];
  return row_cluster_total(local, slots, parity, [](RowAcc a, RowAcc b) { return row_merge<kRowLogSumExp>(a, b); });
}

// Normalizes the block's part of a segment (`length` elements in all):
// statistics over the part, merged over the cluster, then the write pass.
// The first pass fills the team's cache (whole or prefix) and the later
// ones read it. `parity`: the block's segment count modulo 2.
template <RowCache kCache>
__device__ __forceinline__ void row_normalize_segment(const FusegenArgs& args, const RowPart& part, long long length,
                                                      int lane, float* cache, RowAcc* scratch,
                                                      FusegenWelford* moment_scratch, int parity, RowAcc& final_acc) {
  if constexpr (kAnchor == kRowMoments) {
    FusegenWelford moments;
    if constexpr (kCache != RowCache::kWhole) {
      // Reading (part of) the row from memory costs more than the arithmetic: one pass.
      moments = row_team_moments(row_moments_one_pass<kCache>(args, part, lane, cache), moment_scratch);
    } else {
      const RowAcc sum =
          row_team_reduce<kRowSum>(row_fold<kRowSum, RowCache::kWhole, true>(args, part, lane, cache), scratch);
      const float count = static_cast<float>(part.length);
      const float mean = part.length > 0 ? sum.value / count : 0.0f;
      moments = {count, mean, row_centered_squares(args, part, lane, cache, mean, scratch)};
    }
    moments = row_cluster_moments(moments, parity);
    row_write<kCache>(args, part, lane, cache, moments.mean, row_scale(moments.m2, length), final_acc);
  } else {
    const RowAcc stats = row_cluster_pair(
        row_team_reduce<kRowLogSumExp>(row_fold<kRowLogSumExp, kCache, true>(args, part, lane, cache), scratch),
        parity);
    // The pair's sum is against row_shift(max), which is max where finite;
    // an infinite max makes some x - max NaN (inf - inf, or every x -inf),
    // so the sum of exp(x - max) is NaN, as torch's.
    const float sum = isinf(stats.value) ? __int_as_float(0x7fc00000) : stats.scaled;
    row_write<kCache>(args, part, lane, cache, stats.value, row_scale(sum, length), final_acc);
  }
}

__device__ __forceinline__ void row_reduce_main(const FusegenArgs& args) {
  __shared__ RowAcc scratch[kWarps];
  __shared__ FusegenWelford moment_scratch[kAnchor == kRowMoments ? kWarps : 1];
  extern __shared__ __align__(16) float fusegen_row_reduce_cache[];
  const int team = static_cast<int>(threadIdx.x) / kTeamSize;
  const int lane = static_cast<int>(threadIdx.x) % kTeamSize;
  float* cache = fusegen_row_reduce_cache + team * kCacheFloats;
  const long long segments = num_segments(args);
  const long long length = segment_length(args);
  const long long items = (segments + kSegmentsPerItem - 1) / kSegmentsPerItem;
  // This block's part of each segment: the rank-th of kClusterSize.
  const long long rank = kClusterSize > 1 ? static_cast<long long>(fusegen_cluster_rank()) : 0;
  // Parts are whole runs of kVector (the generator sizes kCacheFloats alike).
  const long long per_rank = ((length + kClusterSize - 1) / kClusterSize + kVector - 1) / kVector * kVector;
  const long long begin = min(length, per_rank * rank);
  const long long part_length = min(length - begin, per_rank);
  int parity = 0;
  // A cluster's blocks are consecutive in x and take the same items.
  for (long long item = blockIdx.x / kClusterSize; item < items; item += gridDim.x / kClusterSize) {
    RowAcc final_acc = row_identity<kFinalFold>();
    // Loop bounds are uniform per team (and cluster), so team shuffles and
    // (for one team per block) block and cluster barriers see every thread
    // they expect.
    for (int s = team; s < kSegmentsPerItem; s += kTeams) {
      const long long segment = item * kSegmentsPerItem + s;
      if (segment >= segments)
        break;
      const RowPart part = {segment, begin, part_length};
      if constexpr (kAnchor < kRowMoments)
        row_reduce_segment(args, segment, length, lane, scratch);
      else if (kCacheFloats > 0 && part_length <= kCacheFloats)
        row_normalize_segment<RowCache::kWhole>(args, part, length, lane, cache, scratch, moment_scratch, parity,
                                                final_acc);
      else if (kCacheFloats > 0)
        row_normalize_segment<RowCache::kPrefix>(args, part, length, lane, cache, scratch, moment_scratch, parity,
                                                 final_acc);
      else
        row_normalize_segment<RowCache::kNone>(args, part, length, lane, cache, scratch, moment_scratch, parity,
                                               final_acc);
      parity ^= 1;
    }
    if constexpr (kFinalOp != kRowNone) {
      final_acc = row_block_reduce<kFinalFold>(final_acc, scratch);
      if (threadIdx.x == 0)
        store_final(args, item, row_result<kFinalFold>(final_acc, length * kSegmentsPerItem));
    }
  }
  if constexpr (kClusterSize > 1)
    fusegen_cluster_sync(); // the other ranks may still read this block's slots
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kBlockSize) fusegen_row_reduce(const FusegenArgs args) { row_reduce_main(args); }
}
