// fusegen template: GEMM with few columns and a shallow depth (conv2d with few
// output channels, such as 3 -> 16 channels with a 3x3 kernel), fp32 on the
// SIMT cores, with the same fused epilogue and partial statistics as gemm.cu.
//
// Problem: for every batch b < batches, C[b][m][n] = sum_k A(b, m, k) * B(b, k, n)
// over m < rows, n < kCols, k < kDepth, with kCols and kDepth constants.
//
// Why a second GEMM template: gemm.cu's blocks are at least 64 columns wide,
// so a problem of 16 columns wastes three quarters of every tensor-core
// product, staging and epilogue walk, and with a depth of 27 each block is
// mostly pipeline fill and barriers. Here each thread owns one row m: it
// gathers A(b, m, k) for all k, multiplies it by B's row k (kept in shared
// memory for the whole block and read as broadcast float4s) into kCols
// register accumulators, then runs epilogue() for each column. Consecutive
// threads take consecutive rows, which for conv2d are adjacent output pixels,
// so the gathers and the stores coalesce. Products are plain fp32 FMAs in
// increasing k, so strict precision holds without a split. With kThreadRows
// = 2 a thread owns rows m and m + kThreads: each broadcast read of B then
// feeds twice the FMAs (a k step of 16 columns is 4 shared loads for 16
// FMAs with one row, a load-bound ratio; 4 for 32 with two).
//
// Statistics (kStatsGroup = S > 0): per tile of kStatsRows rows and group of
// S adjacent columns, the (count, mean, M2) triple of the epilogue's values
// over the tile's valid rows, by two passes (warp shuffles in a fixed order,
// then the tile's warps in order), written to stats_slot(): the same layout
// gemm.cu writes, so the kernels that read it do not care which template
// ran.
//
// Grid: x over the kColParts parts of the columns, y over blocks of
// kThreads * kThreadRows rows, z over batches; y and z loop
// with the grid's stride, so any extent fits.
//
// Hook contract (checked by fusegen-template-tool against hooks/NarrowGemmHooks.h):
//   "threads"       constexpr int kThreads     threads per block, a multiple of kStatsRows
//   "thread_rows"   constexpr int kThreadRows  rows per thread (1 or 2): a block
//                                  is kThreads * kThreadRows rows
//   "cols"          constexpr int kCols        N (1..64)
//   "block_cols"    constexpr int kBlockCols   columns a block computes (divides
//                                  kCols): kCols, or a part of them where B's
//                                  kDepth x kCols would not fit; grid x is
//                                  kCols / kBlockCols
//   "depth"         constexpr int kDepth       K (1..1024; B's kDepth rows fit 32 KB
//                                  of shared memory)
//   "stats_group"   constexpr int kStatsGroup  0, or S of the partial statistics (divides kCols)
//   "stats_rows"    constexpr int kStatsRows   rows of a statistics tile (a multiple of 32)
//   "a_split"       constexpr bool kASplit     A's addresses split into a_row(m) +
//                                  a_depth_offset(k) (conv2d without padding):
//                                  with k a constant of the unrolled loop the
//                                  offsets fold into the loads' immediates
//   "rows" / "batches"
//                   long long gemm_rows(args) ...   extents M and batch count
//   "a_offset"      long long a_offset(args, batch)   base offset of A for a batch
//   "b_offset"      long long b_offset(args, batch)   base offset of B for a batch
//   "a_address"     const float* a_address(args, a_base, m, k)  where A element
//                                  (m, k) is, or nullptr for a zero (conv
//                                  padding); called only for m < M
//   "b_address"     const float* b_address(args, b_base, k, n)  B element
//   "a_row"         const float* a_row(args, a_base, m)  where row m of A starts (kASplit)
//   "a_depth_offset" int a_depth_offset(args, k)  element (m, k) is at a_row(m) + this
//   "epilogue_stores" constexpr int kEpilogueStores  values epilogue() stores per element
//   "epilogue"      float epilogue(args, batch, m, n, acc, stores)  for a valid
//                                  element: pointwise ops; puts each value it
//                                  stores, with its address, in stores (the
//                                  caller writes them after the row's other
//                                  columns, helpers.cu FusegenStores); returns
//                                  the value the statistics read
//   "stats_slot"    float* stats_slot(args, batch, row_tile, n)  the (count, mean,
//                                  M2) triple of the statistics group whose
//                                  first column is n, for statistics tile row_tile
//   "stats_finalize" constexpr bool kStatsFinalize  the kernel also finalizes
//                                  the statistics (kStatsGroup 1; as gemm.cu's,
//                                  gemm/hooks.cuh)
//   "stats_counters" unsigned int* stats_counters(args)  batches + 1 arrival
//                                  counters, zero between launches
//   "sample_stats_slot" float* sample_stats_slot(args, batch, n)  the merged
//                                  triple of column n over sample batch
//   "finalize_column" void finalize_column(args, n, total)  writes column n's
//                                  finalized statistics (and running stats)
//   "entry"         the __global__ kernel; the generator renames it
//
// Defaults below: C[M, 16] = A[M, 27] * B[27, 16] with A = buf[0], B = buf[1],
// C = buf[2] and M = dim[0]. Compiles alone with nvcc and NVRTC (helpers.cu is
// the only include).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("threads") constexpr int kThreads = 128;

FUSEGEN_HOOK("thread_rows") constexpr int kThreadRows = 1;

FUSEGEN_HOOK("cols") constexpr int kCols = 16;

FUSEGEN_HOOK("block_cols") constexpr int kBlockCols = 16;

FUSEGEN_HOOK("depth") constexpr int kDepth = 27;

FUSEGEN_HOOK("stats_group") constexpr int kStatsGroup = 0;

FUSEGEN_HOOK("stats_rows") constexpr int kStatsRows = 64;

FUSEGEN_HOOK("stats_finalize") constexpr bool kStatsFinalize = false;

FUSEGEN_HOOK("a_split") constexpr bool kASplit = false;

FUSEGEN_HOOK("rows")
__device__ __forceinline__ long long gemm_rows(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("batches")
__device__ __forceinline__ long long gemm_batches(const FusegenArgs& args) {
  (void)args;
  return 1;
}

FUSEGEN_HOOK("a_offset")
__device__ __forceinline__ long long a_offset(const FusegenArgs& args, long long batch) {
  return batch * args.dim[0] * kDepth;
}

FUSEGEN_HOOK("b_offset")
__device__ __forceinline__ long long b_offset(const FusegenArgs& args, long long batch) {
  (void)args;
  return batch * kDepth * kCols;
}

FUSEGEN_HOOK("a_address")
__device__ __forceinline__ const float* a_address(const FusegenArgs& args, long long a_base, long long m, long long k) {
  return args.buf[0] + a_base + m * kDepth + k;
}

FUSEGEN_HOOK("b_address")
__device__ __forceinline__ const float* b_address(const FusegenArgs& args, long long b_base, long long k, long long n) {
  return args.buf[1] + b_base + k * kCols + n;
}

FUSEGEN_HOOK("a_row")
__device__ __forceinline__ const float* a_row(const FusegenArgs& args, long long a_base, long long m) {
  return args.buf[0] + a_base + m * kDepth;
}

FUSEGEN_HOOK("a_depth_offset")
__device__ __forceinline__ int a_depth_offset(const FusegenArgs& args, long long k) {
  (void)args;
  return static_cast<int>(k);
}

FUSEGEN_HOOK("epilogue_stores") constexpr int kEpilogueStores = 1;

struct EpilogueStores : FusegenStores<kEpilogueStores> {};

FUSEGEN_HOOK("epilogue")
__device__ __forceinline__ float epilogue(const FusegenArgs& args, long long batch, long long m, long long n, float acc,
                                          EpilogueStores& stores) {
  stores.at[0] = args.buf[2] + (batch * args.dim[0] + m) * kCols + n;
  stores.value[0] = acc;
  return acc;
}

FUSEGEN_HOOK("stats_slot")
__device__ __forceinline__ float* stats_slot(const FusegenArgs& args, long long batch, long long row_tile,
                                             long long n) {
  (void)batch;
  return args.buf[3] + (row_tile * kCols + n) * 3;
}

FUSEGEN_HOOK("stats_counters")
__device__ __forceinline__ unsigned int* stats_counters(const FusegenArgs& args) {
  return reinterpret_cast<unsigned int*>(args.buf[4]);
}

FUSEGEN_HOOK("sample_stats_slot")
__device__ __forceinline__ float* sample_stats_slot(const FusegenArgs& args, long long batch, long long n) {
  return args.buf[5] + (batch * kCols + n) * 3;
}

FUSEGEN_HOOK("finalize_column")
__device__ __forceinline__ void finalize_column(const FusegenArgs& args, long long n, FusegenWelford total) {
  args.buf[6][2 * n] = total.mean;
  args.buf[6][2 * n + 1] = 1.0f / sqrtf(total.m2 / total.count + 1e-5f);
}

// ---- geometry ----

static_assert(kCols >= 1 && kCols <= 64, "a thread keeps at most 64 column accumulators");
static_assert(kThreadRows == 1 || kThreadRows == 2, "a thread owns one or two rows");
static_assert(kBlockCols >= 1 && kCols % kBlockCols == 0, "a block computes a whole part of the columns");
static_assert(kBlockCols * kThreadRows <= 64, "a thread keeps at most 64 accumulators");
static_assert(kStatsRows % 32 == 0 && kThreads % kStatsRows == 0 && kThreads <= 1024,
              "a block is whole statistics tiles of whole warps");
static_assert(kStatsGroup >= 0 && (kStatsGroup == 0 || kBlockCols % kStatsGroup == 0),
              "statistics groups divide a block's columns");
static_assert(!kStatsFinalize || kStatsGroup == 1, "statistics finalized in the kernel are per column");

constexpr int kColsPadded = (kBlockCols + 3) / 4 * 4; // a block's B rows as float4s
constexpr int kColParts = kCols / kBlockCols;
static_assert(kDepth >= 1 && kDepth <= 1024 && kDepth * kColsPadded <= 8192,
              "B is kept whole in static shared memory: at most 32 KB");
constexpr long long kBlockRows = static_cast<long long>(kThreads) * kThreadRows;
constexpr int kWarps = kThreads / 32;
constexpr int kTileWarps = kStatsRows / 32;
constexpr int kStatsGroups = kStatsGroup > 0 ? kBlockCols / kStatsGroup : 1;

// The block's columns of B for one batch, [kDepth][kColsPadded], the padding zero.
__device__ __forceinline__ void narrow_load_b(const FusegenArgs& args, float* b_shared, long long batch, int n0) {
  const long long b_base = b_offset(args, batch);
  for (int i = threadIdx.x; i < kDepth * kColsPadded; i += kThreads) {
    const int k = i / kColsPadded, n = i % kColsPadded;
    b_shared[i] = n < kBlockCols ? *b_address(args, b_base, k, n0 + n) : 0.0f;
  }
}

// The k loop is unrolled whole when its body is small, so that k is a
// constant and A's offsets fold into the loads; a 64-column body unrolled 72
// times took ptxas seconds (NVRTC's cold compile of chain 85 v0.1: 3.9 s),
// so large bodies unroll by 4 and read A's offsets from a table in shared
// memory, filled once per block.
constexpr bool kWholeUnroll = kColsPadded * kThreadRows * kDepth <= 1024;
constexpr int kDepthUnroll = kWholeUnroll ? kDepth : 4;
constexpr bool kOffsetTable = kASplit && !kWholeUnroll;

__device__ __forceinline__ void narrow_fill_offsets(const FusegenArgs& args, int* offsets) {
  if constexpr (kOffsetTable)
    for (int k = threadIdx.x; k < kDepth; k += kThreads)
      offsets[k] = a_depth_offset(args, k);
}

// acc[r][n] = sum_k A(m0 + r * kThreads, k) * B(k, n), in increasing k, for
// the thread's rows below `rows` (the others stay zero); row m0 is one.
__device__ __forceinline__ void narrow_accumulate(const FusegenArgs& args, const float* b_shared, const int* offsets,
                                                  long long a_base, long long m0, long long rows,
                                                  float (&acc)[kThreadRows][kColsPadded]) {
  bool valid[kThreadRows];
  const float* row[kThreadRows];
#pragma unroll
  for (int r = 0; r < kThreadRows; ++r) {
    valid[r] = r == 0 || m0 + r * kThreads < rows;
    row[r] = kASplit && valid[r] ? a_row(args, a_base, m0 + r * kThreads) : nullptr;
  }
#pragma unroll kDepthUnroll
  for (int k = 0; k < kDepth; ++k) {
    float a[kThreadRows];
#pragma unroll
    for (int r = 0; r < kThreadRows; ++r) {
      if constexpr (kOffsetTable) {
        a[r] = valid[r] ? __ldg(row[r] + offsets[k]) : 0.0f;
      } else if constexpr (kASplit) {
        a[r] = valid[r] ? __ldg(row[r] + a_depth_offset(args, k)) : 0.0f;
      } else {
        const float* p = valid[r] ? a_address(args, a_base, m0 + r * kThreads, k) : nullptr;
        a[r] = p ? __ldg(p) : 0.0f;
      }
    }
    const float4* b = reinterpret_cast<const float4*>(b_shared + k * kColsPadded);
#pragma unroll
    for (int q = 0; q < kColsPadded / 4; ++q) {
      const float4 v = b[q];
#pragma unroll
      for (int r = 0; r < kThreadRows; ++r) {
        acc[r][4 * q + 0] = fmaf(a[r], v.x, acc[r][4 * q + 0]);
        acc[r][4 * q + 1] = fmaf(a[r], v.y, acc[r][4 * q + 1]);
        acc[r][4 * q + 2] = fmaf(a[r], v.z, acc[r][4 * q + 2]);
        acc[r][4 * q + 3] = fmaf(a[r], v.w, acc[r][4 * q + 3]);
      }
    }
  }
}

// Sums each statistics group's per-thread values over its tile: per warp by
// shuffles, then the tile's warps in order. Every thread gets its tile's sums.
__device__ __forceinline__ void narrow_tile_sums(const float (&per_thread)[kStatsGroups],
                                                 float (&scratch)[kWarps][kStatsGroups],
                                                 float (&tile_sum)[kStatsGroups]) {
  const int warp = threadIdx.x / 32, first_warp = warp / kTileWarps * kTileWarps;
#pragma unroll
  for (int g = 0; g < kStatsGroups; ++g) {
    const float sum = fusegen_team_sum<32>(per_thread[g]);
    if (threadIdx.x % 32 == 0)
      scratch[warp][g] = sum;
  }
  __syncthreads();
#pragma unroll
  for (int g = 0; g < kStatsGroups; ++g) {
    float sum = 0.0f;
    for (int w = 0; w < kTileWarps; ++w)
      sum += scratch[first_warp + w][g];
    tile_sum[g] = sum;
  }
  __syncthreads(); // scratch is reused by the next call
}

// Partial statistics of the block's tiles (see the top of this file).
__device__ __forceinline__ void narrow_statistics(const FusegenArgs& args, float (&scratch)[kWarps][kStatsGroups],
                                                  long long batch, long long m0, long long rows, bool valid, int n0,
                                                  const float (&value)[kColsPadded]) {
  constexpr int kGroup = kStatsGroup > 0 ? kStatsGroup : 1;
  const int tile_in_block = threadIdx.x / kStatsRows;
  const long long tile_m0 = m0 + tile_in_block * kStatsRows;
  const long long left = rows - tile_m0;
  const int valid_rows = left <= 0 ? 0 : left >= kStatsRows ? kStatsRows : static_cast<int>(left);
  const float count = static_cast<float>(valid_rows) * static_cast<float>(kGroup);

  float per_thread[kStatsGroups];
#pragma unroll
  for (int g = 0; g < kStatsGroups; ++g) {
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kGroup; ++c)
      sum += value[g * kGroup + c];
    per_thread[g] = valid ? sum : 0.0f;
  }
  float mean[kStatsGroups];
  narrow_tile_sums(per_thread, scratch, mean);
#pragma unroll
  for (int g = 0; g < kStatsGroups; ++g) {
    mean[g] = valid_rows > 0 ? mean[g] / count : 0.0f;
    float squares = 0.0f;
#pragma unroll
    for (int c = 0; c < kGroup; ++c) {
      const float d = value[g * kGroup + c] - mean[g];
      squares = fmaf(d, d, squares);
    }
    per_thread[g] = valid ? squares : 0.0f;
  }
  float m2[kStatsGroups];
  narrow_tile_sums(per_thread, scratch, m2);
  if (threadIdx.x % kStatsRows == 0 && valid_rows > 0) {
#pragma unroll
    for (int g = 0; g < kStatsGroups; ++g) {
      float* slot = stats_slot(args, batch, tile_m0 / kStatsRows, n0 + g * kGroup);
      slot[0] = count;
      slot[1] = mean[g];
      slot[2] = m2[g];
    }
  }
}

__device__ __forceinline__ void narrow_gemm_main(const FusegenArgs& args) {
  __shared__ __align__(16) float b_shared[kDepth * kColsPadded];
  __shared__ float scratch[kWarps][kStatsGroups];
  __shared__ int offsets[kOffsetTable ? kDepth : 1];
  __shared__ FusegenWelford lanes[kStatsFinalize ? kThreads : 1];
  narrow_fill_offsets(args, offsets); // read after the first barrier below
  const long long rows = gemm_rows(args), batches = gemm_batches(args);
  const long long row_blocks = (rows + kBlockRows - 1) / kBlockRows;
  // The block's first column; a constant 0 with one part, so that the
  // epilogue's per-column params and groups fold.
  const int n0 = kColParts > 1 ? static_cast<int>(blockIdx.x) * kBlockCols : 0;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    __syncthreads(); // the previous batch's products are done with B
    narrow_load_b(args, b_shared, batch, n0);
    __syncthreads();
    const long long a_base = a_offset(args, batch);
    for (long long row_block = blockIdx.y; row_block < row_blocks; row_block += gridDim.y) {
      const long long m0 = row_block * kBlockRows;
      float acc[kThreadRows][kColsPadded] = {};
      if (m0 + threadIdx.x < rows)
        narrow_accumulate(args, b_shared, offsets, a_base, m0 + threadIdx.x, rows, acc);
#pragma unroll
      for (int r = 0; r < kThreadRows; ++r) {
        const long long part_m0 = m0 + r * kThreads, m = part_m0 + threadIdx.x;
        const bool valid = m < rows;
        if (valid) {
          // Each column's stores at once: its params are one broadcast load,
          // and deferring them behind 8 columns' loads measured 4-20% slower
          // (bench/NOTES.md v51).
#pragma unroll
          for (int n = 0; n < kBlockCols; ++n) {
            EpilogueStores stores;
            acc[r][n] = epilogue(args, batch, m, n0 + n, acc[r][n], stores);
            stores.write();
          }
        }
        if constexpr (kStatsGroup > 0)
          narrow_statistics(args, scratch, batch, part_m0, rows, valid, n0, acc[r]);
      }
      if constexpr (kStatsFinalize)
        fusegen_finalize_sample_stats<kThreads>(
            stats_counters(args), batch, batches, kCols, (rows + kStatsRows - 1) / kStatsRows,
            static_cast<unsigned int>(row_blocks * kColParts), lanes,
            [&](long long sample, long long tile, long long n) { return stats_slot(args, sample, tile, n); },
            [&](long long sample, long long n) { return sample_stats_slot(args, sample, n); },
            [&](long long n, FusegenWelford total) { finalize_column(args, n, total); });
    }
  }
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kThreads) fusegen_narrow_gemm(const FusegenArgs args) { narrow_gemm_main(args); }
}
