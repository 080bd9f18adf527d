// fusegen template: per-channel partial statistics of a batch_norm input
// (fp32), [N, C] or [N, C, S] (S = the product of the spatial dims).
//
// Writes one (count, mean, M2) triple per (tile of kTileM samples, channel)
// to partials[tile][channel][3]; a tile covers kTileM samples and all their
// spatial positions. The stats-finalize kernel combines the tiles.
//
// Two layouts of the work:
//  * kColumnMode == 1 ([N, C], S == 1): a block covers one tile and 32
//    consecutive channels; lane = channel (coalesced rows), kBlockSize / 32
//    row lanes split the tile's rows.
//  * kColumnMode == 0 ([N, C, S]): a block covers one (tile, channel): the
//    tile's kTileM runs of S contiguous floats, spread over all threads.
// Each thread accumulates batches of kBatch values held in registers (mean
// and M2 of a batch in two passes, then Chan-merged into its running
// triple), and the block combines threads with Chan's formula in a fixed
// order (shuffle tree, then shared memory), so results are deterministic and
// free of the cancellation of a sum of squares.
//
// Hook contract (checked by fusegen-template-tool against hooks/ColumnStatsHooks.h):
//   "block_size"  constexpr int kBlockSize      threads per block (power of 2, >= 64)
//   "tile_m"      constexpr int kTileM          samples per tile (PlanOptions::gemm_tile_m)
//   "column_mode" constexpr int kColumnMode     1 for [N, C] inputs, 0 for [N, C, S]
//   "batch"       long long batch(args)         N
//   "channels"    long long channels(args)      C
//   "spatial"     long long spatial(args)       S (1 for [N, C])
//   "input"       const float* input(args)      the batch_norm input
//   "partials"    float* partials(args)         [ceil(N / kTileM), C, 3] output
//   "entry"       the __global__ kernel; the generator renames it
//
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include, and
// the generator emits it once at the top of a generated file instead).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("block_size") constexpr int kBlockSize = 256;

FUSEGEN_HOOK("tile_m") constexpr int kTileM = 64;

FUSEGEN_HOOK("column_mode") constexpr int kColumnMode = 1;

FUSEGEN_HOOK("batch")
__device__ __forceinline__ long long batch(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("channels")
__device__ __forceinline__ long long channels(const FusegenArgs& args) {
  (void)args;
  return 64;
}

FUSEGEN_HOOK("spatial")
__device__ __forceinline__ long long spatial(const FusegenArgs& args) {
  (void)args;
  return 1;
}

FUSEGEN_HOOK("input")
__device__ __forceinline__ const float* input(const FusegenArgs& args) { return args.buf[0]; }

FUSEGEN_HOOK("partials")
__device__ __forceinline__ float* partials(const FusegenArgs& args) { return args.buf[1]; }

static_assert(kBlockSize >= 64 && kBlockSize <= 1024 && (kBlockSize & (kBlockSize - 1)) == 0,
              "kBlockSize must be a power of 2 in [64, 1024]");
static_assert(kTileM > 0, "kTileM must be positive");
static_assert(kColumnMode == 0 || kColumnMode == 1, "kColumnMode must be 0 or 1");

constexpr int kBatch = 4;                        // values per register batch
constexpr int kChannelLanes = 32;                // column mode: channels per block
constexpr int kRowLanes = kBlockSize / kChannelLanes; // column mode: threads per channel
constexpr int kWarps = kBlockSize / 32;

// Mean and M2 of the first `count` of kBatch register values (two passes),
// merged into `acc`.
__device__ __forceinline__ FusegenWelford merge_batch(FusegenWelford acc, const float (&v)[kBatch], int count) {
  if (count == 0)
    return acc;
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kBatch; ++j)
    sum += j < count ? v[j] : 0.0f;
  const float mean = sum / static_cast<float>(count);
  float m2 = 0.0f;
#pragma unroll
  for (int j = 0; j < kBatch; ++j) {
    const float d = v[j] - mean;
    m2 += j < count ? d * d : 0.0f;
  }
  return fusegen_welford_merge(acc, FusegenWelford{static_cast<float>(count), mean, m2});
}

__device__ __forceinline__ FusegenWelford shuffle_xor(FusegenWelford s, int offset) {
  return FusegenWelford{__shfl_xor_sync(0xffffffffu, s.count, offset), __shfl_xor_sync(0xffffffffu, s.mean, offset),
                        __shfl_xor_sync(0xffffffffu, s.m2, offset)};
}

__device__ __forceinline__ void store_triple(float* out, FusegenWelford s) {
  out[0] = s.count;
  out[1] = s.mean;
  out[2] = s.m2;
}

// [N, C]: a block covers tile `tile` x channels [chunk * 32, chunk * 32 + 32).
__device__ __forceinline__ void column_tile(const FusegenArgs& args, long long tile, long long chunk) {
  __shared__ FusegenWelford rows[kRowLanes][kChannelLanes];
  const long long n_total = batch(args), c_total = channels(args);
  const int lane = static_cast<int>(threadIdx.x) % kChannelLanes;
  const int row_lane = static_cast<int>(threadIdx.x) / kChannelLanes;
  const long long c = chunk * kChannelLanes + lane;
  const long long n0 = tile * kTileM;
  const float* x = input(args);
  FusegenWelford acc = {0.0f, 0.0f, 0.0f};
  if (c < c_total) {
    for (int r = row_lane; r < kTileM; r += kRowLanes * kBatch) {
      float v[kBatch];
      int count = 0;
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const long long n = n0 + r + j * kRowLanes;
        const bool valid = r + j * kRowLanes < kTileM && n < n_total;
        v[j] = valid ? x[n * c_total + c] : 0.0f;
        count += valid ? 1 : 0;
      }
      acc = merge_batch(acc, v, count); // valid values come first: rows grow with j
    }
  }
  rows[row_lane][lane] = acc;
  __syncthreads();
  for (int half = kRowLanes / 2; half > 0; half /= 2) {
    if (row_lane < half)
      rows[row_lane][lane] = fusegen_welford_merge(rows[row_lane][lane], rows[row_lane + half][lane]);
    __syncthreads();
  }
  if (row_lane == 0 && c < c_total)
    store_triple(partials(args) + (tile * c_total + c) * 3, rows[0][lane]);
  __syncthreads(); // `rows` is reused by the block's next work item
}

// [N, C, S]: a block covers tile `tile` x channel `c`: kTileM runs of S
// contiguous floats, walked as one flat index (sample, position).
__device__ __forceinline__ void plane_tile(const FusegenArgs& args, long long tile, long long c) {
  __shared__ FusegenWelford warps[kWarps];
  const long long n_total = batch(args), c_total = channels(args), s_total = spatial(args);
  const long long n0 = tile * kTileM;
  const long long rows = min(static_cast<long long>(kTileM), n_total - n0);
  const float* x = input(args) + (n0 * c_total + c) * s_total;
  const long long row_stride = c_total * s_total;
  // Flat index t = r * S + s advances by kBlockSize: (r, s) += (step_r, step_s).
  // An empty spatial extent (S == 0) leaves nothing to read.
  const long long step_r = s_total > 0 ? kBlockSize / s_total : 0;
  const long long step_s = s_total > 0 ? kBlockSize % s_total : 0;
  long long r = s_total > 0 ? static_cast<long long>(threadIdx.x) / s_total : rows;
  long long s = s_total > 0 ? static_cast<long long>(threadIdx.x) % s_total : 0;
  FusegenWelford acc = {0.0f, 0.0f, 0.0f};
  while (r < rows) {
    float v[kBatch];
    int count = 0;
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const bool valid = r < rows;
      v[j] = valid ? x[r * row_stride + s] : 0.0f;
      count += valid ? 1 : 0;
      r += step_r;
      s += step_s;
      if (s >= s_total) {
        s -= s_total;
        ++r;
      }
    }
    acc = merge_batch(acc, v, count); // once r passes the tile it stays past it
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    acc = fusegen_welford_merge(acc, shuffle_xor(acc, offset));
  if (threadIdx.x % 32 == 0)
    warps[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    FusegenWelford total = warps[0];
    for (int w = 1; w < kWarps; ++w)
      total = fusegen_welford_merge(total, warps[w]);
    store_triple(partials(args) + (tile * c_total + c) * 3, total);
  }
  __syncthreads(); // `warps` is reused by the block's next work item
}

__device__ __forceinline__ void column_stats_main(const FusegenArgs& args) {
  const long long tiles = (batch(args) + kTileM - 1) / kTileM;
  const long long columns =
      kColumnMode == 1 ? (channels(args) + kChannelLanes - 1) / kChannelLanes : channels(args);
  // Work items (tile, column) in tile-major order, grid-stride over blocks.
  for (long long item = blockIdx.x; item < tiles * columns; item += gridDim.x) {
    if (kColumnMode == 1)
      column_tile(args, item / columns, item % columns);
    else
      plane_tile(args, item / columns, item % columns);
  }
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kBlockSize) fusegen_column_stats(const FusegenArgs args) {
  column_stats_main(args);
}
}
