// fusegen template: GEMM with few rows (a GEMV, or up to a few dozen rows:
// decode-size token counts), fp32 FMAs on the SIMT cores, streaming B (the
// weights) from memory once per tile of rows, with the same fused epilogue
// as gemm.cu.
//
// Problem: for every batch b < batches, C[b][m][n] = sum_k A(b, m, k) * B(b, k, n)
// over m < M (few), n < N, k < K.
//
// Why a third GEMM template: with few rows the product is memory-bound. B's
// N*K floats are read once and each is used M times: 2*M FLOPs per 4 bytes,
// 8 FLOP/byte at M = 16, below an H100's fp32 FMA balance (67 TFLOP/s over
// 3 TB/s: 22). Tensor cores gain nothing there, 3xTF32 triples the work,
// and gemm.cu's 64-row tiles waste most of each product. Plain fp32 FMAs are
// as exact as PyTorch's own fp32 GEMV, so strict precision holds.
//
// Two layouts of B, chosen by kBAlongK:
//   along k (linear's weight [N, K]): a block owns kCols columns. Its warps
//     split K into interleaved chunks of 32 * kVector elements; lane l reads
//     elements l * kVector .. + kVector - 1 of a chunk from each column of B
//     and each row of A (16-byte vectors when kVector is 4), and a warp's
//     partial sums meet by shuffles.
//   along n (matmul's [K, N]): a block owns 32 * kVector columns, lane l the
//     kVector adjacent ones at l * kVector. Its warps split K, interleaved
//     element by element; A(m, k) is the same for the whole warp (a broadcast).
// Then the warps' partial sums meet in shared memory and are added in warp
// order, and epilogue() runs once per output element. Every sum is in a fixed
// order: results are deterministic for a given launch.
//
// Tiled (kTiled; up to 64 rows, B along k, 16-byte vectors; the generator
// takes it from 13 to 48 rows in strict precision): with more rows,
// reading A per vector of B makes A's traffic the limit, and an M x K tile
// of A does not fit a thread's registers. So a block stages kRows rows of A
// and kTileCols columns of B, kTileK deep, in a kStages-deep cp.async
// pipeline, and each thread takes kRows / 8 rows x kTileCols / 32 columns
// of the tile: per 4 k, kRows / 8 + kTileCols / 32 16-byte shared loads feed
// kRows * kTileCols / 64 FMAs. kSplit blocks (a thread-block cluster) share a
// block of columns, each over its share of k; their partial tiles meet
// through distributed shared memory, added in rank order, and rank r runs
// the epilogue of the r-th kSplit-th of the tile's elements.
//
// Grid: x over (block of columns, tile of kRows rows) pairs, z over
// batches; each loops with the grid's stride, so any extent fits. Tiled: x
// is blocks of columns times kSplit exactly, z loops over batches.
//
// Hook contract (checked by fusegen-template-tool against hooks/SkinnyGemmHooks.h):
//   "warps"         constexpr int kWarps       warps per block splitting K: 1, 2, 4 or 8
//   "tile_rows"     constexpr int kRows        rows of A per tile (1..32)
//   "block_cols"    constexpr int kCols        columns per block with B along k (1..8);
//                                  ignored along n (32 * kVector)
//   "vector"        constexpr int kVector      1, or 4: 16-byte loads (along k: of A
//                                  and B; along n: of B); the contiguous extents
//                                  and every base are multiples of 4
//   "b_along_k"     constexpr bool kBAlongK    B's consecutive k are adjacent in memory
//   "tiled"         constexpr bool kTiled      the tiled form above (kWarps 8, kRows 8..64 in
//                                  steps of 8 and at least the rows, kVector 4, kBAlongK)
//   "tile_cols"     constexpr int kTileCols    tiled: columns per block (32, 64, 96 or 128)
//   "split"         constexpr int kSplit       tiled: blocks sharing a block of columns over k
//                                  (1..8; above 1 the entry declares a cluster of kSplit along x)
//   "stages"        constexpr int kStages      tiled: copies in flight (2..4); the launch's dynamic
//                                  shared memory is kTiledSharedFloats * 4 bytes
//   "rows" / "batches" / "cols" / "depth"
//                   long long gemm_rows(args) ...   extents M, batch count, N, K
//   "a_offset"      long long a_offset(args, batch)   base offset of A for a batch
//   "b_offset"      long long b_offset(args, batch)   base offset of B for a batch
//   "a_address"     const float* a_address(args, a_base, m, k)  A element (m, k)
//   "b_address"     const float* b_address(args, b_base, k, n)  B element (k, n)
//   "epilogue_stores" constexpr int kEpilogueStores  values epilogue() stores per element
//   "epilogue"      float epilogue(args, batch, m, n, acc, stores)  for a valid element:
//                                  bias, pointwise ops and stores
//   "entry"         the __global__ kernel; the generator renames it
//
// Defaults below: C[M, N] = A[M, K] * B[N, K]^T (a linear without bias) with
// A = buf[0], B = buf[1], C = buf[2], M = dim[0], N = dim[1], K = dim[2].
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("warps") constexpr int kWarps = 8;

FUSEGEN_HOOK("tile_rows") constexpr int kRows = 4;

FUSEGEN_HOOK("block_cols") constexpr int kCols = 4;

FUSEGEN_HOOK("vector") constexpr int kVector = 4;

FUSEGEN_HOOK("b_along_k") constexpr bool kBAlongK = true;

FUSEGEN_HOOK("tiled") constexpr bool kTiled = false;

FUSEGEN_HOOK("tile_cols") constexpr int kTileCols = 128;

FUSEGEN_HOOK("split") constexpr int kSplit = 1;

FUSEGEN_HOOK("stages") constexpr int kStages = 4;

FUSEGEN_HOOK("rows")
__device__ __forceinline__ long long gemm_rows(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("batches")
__device__ __forceinline__ long long gemm_batches(const FusegenArgs& args) {
  (void)args;
  return 1;
}

FUSEGEN_HOOK("cols")
__device__ __forceinline__ long long gemm_cols(const FusegenArgs& args) { return args.dim[1]; }

FUSEGEN_HOOK("depth")
__device__ __forceinline__ long long gemm_depth(const FusegenArgs& args) { return args.dim[2]; }

FUSEGEN_HOOK("a_offset")
__device__ __forceinline__ long long a_offset(const FusegenArgs& args, long long batch) {
  return batch * args.dim[0] * args.dim[2];
}

FUSEGEN_HOOK("b_offset")
__device__ __forceinline__ long long b_offset(const FusegenArgs& args, long long batch) {
  return batch * args.dim[1] * args.dim[2];
}

FUSEGEN_HOOK("a_address")
__device__ __forceinline__ const float* a_address(const FusegenArgs& args, long long a_base, long long m, long long k) {
  return args.buf[0] + a_base + m * args.dim[2] + k;
}

FUSEGEN_HOOK("b_address")
__device__ __forceinline__ const float* b_address(const FusegenArgs& args, long long b_base, long long k, long long n) {
  return args.buf[1] + b_base + n * args.dim[2] + k;
}

FUSEGEN_HOOK("epilogue_stores") constexpr int kEpilogueStores = 1;

struct EpilogueStores : FusegenStores<kEpilogueStores> {};

FUSEGEN_HOOK("epilogue")
__device__ __forceinline__ float epilogue(const FusegenArgs& args, long long batch, long long m, long long n, float acc,
                                          EpilogueStores& stores) {
  stores.at[0] = args.buf[2] + (batch * args.dim[0] + m) * args.dim[1] + n;
  stores.value[0] = acc;
  return acc;
}

// ---- geometry ----

static_assert(kWarps == 1 || kWarps == 2 || kWarps == 4 || kWarps == 8, "kWarps is 1, 2, 4 or 8");
static_assert(kRows >= 1 && kRows <= (kTiled ? 64 : 32), "a tile holds 1 to 32 rows, tiled up to 64");
static_assert(kCols >= 1 && kCols <= 8, "a block owns 1 to 8 columns along k");
static_assert(kVector == 1 || kVector == 4, "scalar or 16-byte loads");
static_assert(!kTiled || (kWarps == 8 && kRows % 8 == 0 && kVector == 4 && kBAlongK),
              "tiled: 8 warps, rows in steps of 8, 16-byte vectors along k");
// 128 columns of 64 rows hold 32 accumulators a thread; 256 spilled under
// the two-blocks-per-SM register bound.
static_assert(!kTiled || (kTileCols % 32 == 0 && kTileCols >= 32 && kTileCols <= 128), "tiled: 32 to 128 columns");
static_assert(kSplit >= 1 && kSplit <= 8 && (kTiled || kSplit == 1), "a split of 1 to 8 blocks, tiled only");
static_assert(kStages >= 2 && kStages <= 4, "2 to 4 stages in flight");

constexpr int kThreads = kWarps * 32;
constexpr int kBlockCols = kBAlongK ? kCols : 32 * kVector; // columns a block owns
constexpr int kLaneCols = kBAlongK ? kCols : kVector;       // accumulators per row and lane
constexpr int kChunk = kBAlongK ? 32 * kVector : 1;         // k per warp step
constexpr int kAlongNSteps = 4;                             // loads of B in flight per lane along n (8: ptxas spills)
static_assert(kTiled || kRows * kLaneCols <= 64, "at most 64 accumulators per thread");
static_assert(kTiled || kWarps * kRows * kBlockCols * 4 <= 48 * 1024, "the partial sums fit in static shared memory");

template <int kWidth> struct SkinnyVector { float v[kWidth]; };

// kWidth adjacent floats from `p` (16-byte aligned when kWidth is 4).
template <int kWidth> __device__ __forceinline__ SkinnyVector<kWidth> skinny_load(const float* p) {
  SkinnyVector<kWidth> out;
  if constexpr (kWidth == 4) {
    const float4 q = __ldg(reinterpret_cast<const float4*>(p));
    out.v[0] = q.x;
    out.v[1] = q.y;
    out.v[2] = q.z;
    out.v[3] = q.w;
  } else {
    out.v[0] = __ldg(p);
  }
  return out;
}

// B along k: acc[r][c] = lane's share of sum_k A(m0 + r, k) * B(k, n0 + c)
// over the warp's chunks, in increasing k.
__device__ __forceinline__ void skinny_accumulate_along_k(const FusegenArgs& args, long long a_base, long long b_base,
                                                          long long m0, int rows, long long n0, int cols,
                                                          long long depth, float (&acc)[kRows][kLaneCols]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long chunks = (depth + kChunk - 1) / kChunk;
  for (long long chunk = warp; chunk < chunks; chunk += kWarps) {
    const long long k = chunk * kChunk + lane * kVector;
    if (k >= depth) // a vector is whole or wholly out (kVector divides K)
      continue;
    SkinnyVector<kVector> b[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (c < cols)
        b[c] = skinny_load<kVector>(b_address(args, b_base, k, n0 + c));
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows)
        break;
      const SkinnyVector<kVector> a = skinny_load<kVector>(a_address(args, a_base, m0 + r, k));
#pragma unroll
      for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int v = 0; v < kVector; ++v)
          acc[r][c] = fmaf(a.v[v], b[c].v[v], acc[r][c]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      acc[r][c] = fusegen_team_sum<32>(acc[r][c]);
}

// acc[r][v] += A(m0 + r, k) * b.v[v] for the tile's rows.
__device__ __forceinline__ void skinny_step_along_n(const FusegenArgs& args, long long a_base, long long m0, int rows,
                                                    long long k, SkinnyVector<kVector> b,
                                                    float (&acc)[kRows][kLaneCols]) {
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    const float a = __ldg(a_address(args, a_base, m0 + r, k));
#pragma unroll
    for (int v = 0; v < kVector; ++v)
      acc[r][v] = fmaf(a, b.v[v], acc[r][v]);
  }
}

// B along n: acc[r][v] = the warp's share of sum_k A(m0 + r, k) * B(k, n)
// for the lane's column n = n0 + lane * kVector + v, in increasing k.
__device__ __forceinline__ void skinny_accumulate_along_n(const FusegenArgs& args, long long a_base, long long b_base,
                                                          long long m0, int rows, long long n0, long long cols_left,
                                                          long long depth, float (&acc)[kRows][kLaneCols]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long n = n0 + lane * kVector;
  if (n >= n0 + cols_left) // a vector is whole or wholly out (kVector divides N)
    return;
  // kAlongNSteps loads of B issued before their products: enough bytes in
  // flight per warp to stream B at bandwidth (one load at a time ran
  // 4x4096 @ 4096x8192 at 0.17 ms, eager 0.095).
  long long k = warp;
  for (; k + (kAlongNSteps - 1) * kWarps < depth; k += kAlongNSteps * kWarps) {
    SkinnyVector<kVector> b[kAlongNSteps];
#pragma unroll
    for (int u = 0; u < kAlongNSteps; ++u)
      b[u] = skinny_load<kVector>(b_address(args, b_base, k + u * kWarps, n));
#pragma unroll
    for (int u = 0; u < kAlongNSteps; ++u)
      skinny_step_along_n(args, a_base, m0, rows, k + u * kWarps, b[u], acc);
  }
  for (; k < depth; k += kWarps)
    skinny_step_along_n(args, a_base, m0, rows, k, skinny_load<kVector>(b_address(args, b_base, k, n)), acc);
}

__device__ __forceinline__ void skinny_rows_main(const FusegenArgs& args) {
  __shared__ float partial[kWarps][kRows][kBlockCols];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long rows = gemm_rows(args), cols = gemm_cols(args), depth = gemm_depth(args);
  const long long batches = gemm_batches(args);
  const long long row_tiles = (rows + kRows - 1) / kRows, col_blocks = (cols + kBlockCols - 1) / kBlockCols;
  // Items are (block of columns, tile of rows) with the tile fastest, so the
  // tiles of one block of columns run side by side and read its B from L2
  // after the first has brought it in.
  const long long items = row_tiles * col_blocks;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
    for (long long item = blockIdx.x; item < items; item += gridDim.x) {
      const long long tile = item % row_tiles, block = item / row_tiles;
      const long long m0 = tile * kRows;
      const int tile_rows = rows - m0 < kRows ? static_cast<int>(rows - m0) : kRows;
      const long long n0 = block * kBlockCols;
      const long long cols_left = cols - n0;
      float acc[kRows][kLaneCols] = {};
      if constexpr (kBAlongK) {
        skinny_accumulate_along_k(args, a_base, b_base, m0, tile_rows, n0,
                                  cols_left < kCols ? static_cast<int>(cols_left) : kCols, depth, acc);
        if (lane == 0)
#pragma unroll
          for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int c = 0; c < kCols; ++c)
              partial[warp][r][c] = acc[r][c];
      } else {
        skinny_accumulate_along_n(args, a_base, b_base, m0, tile_rows, n0, cols_left, depth, acc);
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int v = 0; v < kVector; ++v)
            partial[warp][r][lane * kVector + v] = acc[r][v];
      }
      __syncthreads();
      for (int i = threadIdx.x; i < kRows * kBlockCols; i += kThreads) {
        const int r = i / kBlockCols, c = i % kBlockCols;
        if (r < tile_rows && c < cols_left) {
          float sum = partial[0][r][c];
#pragma unroll
          for (int w = 1; w < kWarps; ++w)
            sum += partial[w][r][c];
          EpilogueStores stores;
          epilogue(args, batch, m0 + r, n0 + c, sum, stores);
          stores.write();
        }
      }
      __syncthreads(); // partial is reused by the next item
    }
  }
}

// ---- tiled: rows and columns staged in shared memory ----

constexpr int kTileK = 32;                               // k per stage
constexpr int kTileStride = kTileK + 4;                  // floats per staged row: 16-byte aligned, and a warp's
                                                         // float4 reads (4 rows or 8 columns) fall in distinct banks
constexpr int kThreadRows = kTiled ? kRows / 8 : 1;      // a thread's rows, 8 apart
constexpr int kThreadCols = kTiled ? kTileCols / 32 : 1; // a thread's columns, 32 apart
constexpr int kStageFloats = (kRows + kTileCols) * kTileStride;
constexpr int kPartStride = kTileCols + 8; // a warp's 4 rows x 8 columns of partial sums in distinct banks
constexpr int kTiledSharedFloats =
    kStages * kStageFloats > kRows* kPartStride ? kStages* kStageFloats : kRows* kPartStride;
static_assert(!kTiled || kTiledSharedFloats * 4 <= 227 * 1024, "tiled: the stages fit a block's shared memory");

constexpr int kVectorsPerRow = kTileK / 4;
constexpr int kStageVectors = (kRows + kTileCols) * kVectorsPerRow;
constexpr int kThreadCopies = (kStageVectors + kThreads - 1) / kThreads; // 16-byte copies per thread and stage

// Where the thread's copies of the first stage read: copy v is vector
// threadIdx.x + v * kThreads of a stage (A's kRows rows, then B's kTileCols
// columns, kVectorsPerRow vectors each); null past the tile's rows, the
// block's columns or the stage. A and B run along k, so a later stage reads
// the same addresses plus its k.
__device__ __forceinline__ void skinny_copy_sources(const FusegenArgs& args, long long a_base, long long b_base,
                                                    int rows, long long n0, int cols, long long k_begin,
                                                    const float* (&sources)[kThreadCopies]) {
#pragma unroll
  for (int v = 0; v < kThreadCopies; ++v) {
    const int i = static_cast<int>(threadIdx.x) + v * kThreads;
    const int r = i / kVectorsPerRow, k = (i % kVectorsPerRow) * 4;
    sources[v] = nullptr;
    if (i < kStageVectors && r < kRows && r < rows)
      sources[v] = a_address(args, a_base, r, k_begin + k);
    else if (i < kStageVectors && r >= kRows && r - kRows < cols)
      sources[v] = b_address(args, b_base, k_begin + k, n0 + (r - kRows));
  }
}

// Copies the stage `offset` floats along k past the first (zeros where a
// source is null or its k is at or past `depth_left` from the first).
__device__ __forceinline__ void skinny_copy_stage(float* stage, const float* (&sources)[kThreadCopies], int offset,
                                                  long long depth_left, const float* stand_in) {
#pragma unroll
  for (int v = 0; v < kThreadCopies; ++v) {
    const int i = static_cast<int>(threadIdx.x) + v * kThreads;
    if (kStageVectors % kThreads != 0 && i >= kStageVectors)
      break;
    const int k = offset + (i % kVectorsPerRow) * 4;
    fusegen_copy16_async(stage + (i / kVectorsPerRow) * kTileStride + (i % kVectorsPerRow) * 4,
                         sources[v] && k < depth_left ? sources[v] + offset : nullptr, stand_in);
  }
}

// acc[i][j] += the stage's products for row row0 + 8 i, column col0 + 32 j,
// in increasing k.
__device__ __forceinline__ void skinny_multiply_stage(const float* stage, int row0, int col0,
                                                      float (&acc)[kThreadRows][kThreadCols]) {
  const float* a_tile = stage;
  const float* b_tile = stage + kRows * kTileStride;
#pragma unroll
  for (int k = 0; k < kTileK; k += 4) {
    float4 a[kThreadRows], b[kThreadCols];
#pragma unroll
    for (int i = 0; i < kThreadRows; ++i)
      a[i] = *reinterpret_cast<const float4*>(a_tile + (row0 + 8 * i) * kTileStride + k);
#pragma unroll
    for (int j = 0; j < kThreadCols; ++j)
      b[j] = *reinterpret_cast<const float4*>(b_tile + (col0 + 32 * j) * kTileStride + k);
#pragma unroll
    for (int i = 0; i < kThreadRows; ++i)
#pragma unroll
      for (int j = 0; j < kThreadCols; ++j) {
        acc[i][j] = fmaf(a[i].x, b[j].x, acc[i][j]);
        acc[i][j] = fmaf(a[i].y, b[j].y, acc[i][j]);
        acc[i][j] = fmaf(a[i].z, b[j].z, acc[i][j]);
        acc[i][j] = fmaf(a[i].w, b[j].w, acc[i][j]);
      }
  }
}

__device__ __forceinline__ void skinny_tiled_main(const FusegenArgs& args) {
  extern __shared__ __align__(16) float skinny_shared[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // A warp covers 4 rows x 8 columns per step: its float4 reads of A are 4
  // addresses and of B 8, each one shared-memory wavefront.
  const int row0 = (warp / 4) * 4 + lane % 4, col0 = (warp % 4) * 8 + lane / 4;
  const long long rows = gemm_rows(args), cols = gemm_cols(args), depth = gemm_depth(args);
  const long long batches = gemm_batches(args);
  const int split = static_cast<int>(blockIdx.x % kSplit); // the cluster rank when kSplit > 1
  const long long n0 = static_cast<long long>(blockIdx.x / kSplit) * kTileCols;
  const int tile_rows = rows < kRows ? static_cast<int>(rows) : kRows;
  const int tile_cols = cols - n0 < kTileCols ? static_cast<int>(cols - n0) : kTileCols;
  // The split's share of k: whole stages, the last share shorter (or empty).
  const long long per_split = (depth + kTileK * kSplit - 1) / (kTileK * kSplit) * kTileK;
  const long long k_begin = split * per_split;
  const long long k_end = depth < k_begin + per_split ? depth : k_begin + per_split;
  const int stages = k_end > k_begin ? static_cast<int>((k_end - k_begin + kTileK - 1) / kTileK) : 0;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
    float acc[kThreadRows][kThreadCols] = {};
    const float* sources[kThreadCopies];
    skinny_copy_sources(args, a_base, b_base, tile_rows, n0, tile_cols, k_begin, sources);
    const float* stand_in = a_address(args, a_base, 0, 0);
    const long long depth_left = k_end - k_begin;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < stages)
        skinny_copy_stage(skinny_shared + s * kStageFloats, sources, s * kTileK, depth_left, stand_in);
      fusegen_copy_commit();
    }
    for (int s = 0; s < stages; ++s) {
      fusegen_copy_wait<kStages - 2>();
      __syncthreads(); // stage s is in, and stage s - 1's reads are done: its buffer takes stage s + kStages - 1
      const int next = s + kStages - 1;
      if (next < stages)
        skinny_copy_stage(skinny_shared + (next % kStages) * kStageFloats, sources, next * kTileK, depth_left,
                          stand_in);
      fusegen_copy_commit();
      skinny_multiply_stage(skinny_shared + (s % kStages) * kStageFloats, row0, col0, acc);
    }
    fusegen_copy_wait<0>();
    __syncthreads(); // every stage read: the shared memory takes the partial tile
    float* part = skinny_shared;
#pragma unroll
    for (int i = 0; i < kThreadRows; ++i)
#pragma unroll
      for (int j = 0; j < kThreadCols; ++j)
        part[(row0 + 8 * i) * kPartStride + col0 + 32 * j] = acc[i][j];
    if constexpr (kSplit > 1)
      fusegen_cluster_sync();
    else
      __syncthreads();
    // Rank `split` finishes its kSplit-th of the elements, consecutive
    // threads on consecutive columns; the ranks' sums are added in rank order.
    constexpr int kElements = kRows * kTileCols;
    const int first = split * kElements / kSplit, last = (split + 1) * kElements / kSplit;
#pragma unroll 1 // unrolled, its loads in flight spill the registers the k loop needs
    for (int e = first + static_cast<int>(threadIdx.x); e < last; e += kThreads) {
      const int r = e / kTileCols, c = e % kTileCols;
      if (r >= tile_rows || c >= tile_cols)
        continue;
      const float* partial_sum = part + (r * kPartStride + c);
      const float sum = kSplit > 1 ? fusegen_cluster_sum<kSplit>(partial_sum) : *partial_sum;
      EpilogueStores stores;
      epilogue(args, batch, r, n0 + c, sum, stores);
      stores.write();
    }
    // The other ranks' reads of this block's partial tile are done before
    // its shared memory is reused or released.
    if constexpr (kSplit > 1)
      fusegen_cluster_sync();
    else
      __syncthreads();
  }
}

__device__ __forceinline__ void skinny_gemm_main(const FusegenArgs& args) {
  if constexpr (kTiled)
    skinny_tiled_main(args);
  else
    skinny_rows_main(args);
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kThreads, kTiled ? 2 : 1) fusegen_skinny_gemm(const FusegenArgs args) {
  skinny_gemm_main(args);
}
}
