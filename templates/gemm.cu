// fusegen template: GEMM kernel (fp32) for linear, matmul and conv2d (implicit
// GEMM) with fused epilogue stages.
//
// Problem: for every batch b < batches, C[b][m][n] = sum_k A(b, m, k) * B(b, k, n)
// over m < rows, n < cols, k < depth. The generator maps its contraction onto
// this (linear: leading dims flattened into m; matmul: broadcast batch dims
// folded into b; conv2d: b = (sample, conv group), m = output position,
// n = output channel of the group, k = (input channel, kh, kw)).
//
// Each block computes a kBlockM x kBlockN output block with kThreads threads.
// The inner product is one of:
//   0  SIMT: a 64x64 block, each thread a 4x4 micro-tile of fp32 FMAs.
//   1  3xTF32 on tensor cores (strict precision): every fp32 operand x is split
//      into big = tf32(x) (rounded to nearest) and small = tf32(x - big); per
//      k step acc += small_a*big_b + big_a*small_b + big_a*big_b with
//      mma.sync m16n8k8, accumulated in fp32 registers. The dropped
//      small*small term is below 2^-22 relative, so products and sums keep
//      fp32 accuracy.
//   2  TF32 on tensor cores (tf32 precision): acc += big_a*big_b only.
// Tensor-core blocks are 64x64, 128x64 or 128x128; eight warps each own a
// warp tile of m16n8 fragments.
// The k loop stages kTileK-deep slices of A and B in shared memory, double
// buffered: the next slice is loaded from global memory into registers while
// the current one is multiplied. Grid: x over column blocks (exactly), y over
// row blocks, z over batches; y and z loop with the grid's stride, so any
// extent fits. With split-K (kSplitK > 1, sm_90) a cluster of kSplitK blocks
// along x shares each output block, each block a share of the k slices, and
// the sums meet in distributed shared memory (reduce_split_k(), or
// finish_split_share() where each block finishes a share of the tile).
//
// The epilogue works on kTileM x kTileN (64x64) tiles: a block is 1, 2 or 4 of
// them, finished one after another. Each tile's accumulators go through shared
// memory, so that every epilogue pass walks the tile row by row with
// consecutive threads on consecutive columns (coalesced stores, one copy of
// the epilogue code). The tile then runs the stages it was planned with
// (statistics or a row norm):
//   plain      epilogue() per valid element: stage-0 pointwise ops and stores.
//   statistics (kStatsGroup = S > 0) epilogue() values kept in shared memory;
//              per (row tile, group of S adjacent columns) the tile's count,
//              mean and M2 (two passes over the tile's valid rows) are written
//              to stats_slot(). S = 1: batch_norm column statistics; S =
//              channels per group: group_norm after conv2d.
//   row norm   (kNormGroup = G > 0) epilogue() values kept; per (row, group of
//              G adjacent columns) the mean and biased variance (two passes,
//              float) normalize the tile in place with kNormEps; then
//              norm_apply() per valid element (affine params, stage-1 pointwise
//              ops, stores). G divides kTileN, so groups never straddle tiles.
//   row reduce (kRowReduce 1 = min, 2 = max, after a row norm) the norm_apply()
//              values are reduced per row over the tile's valid columns (NaN
//              propagates) and combined into reduce_slot() with order-independent
//              atomics; the launcher pre-fills that buffer with +inf / -inf. A NaN
//              is stored as a bit pattern the atomics never replace, so the row
//              result is NaN, as in torch. With kRowReduceParts each tile
//              stores its row result in a slot of its own instead (the
//              readers combine them).
//   column norm (kColumnNorm, a training batch_norm) the block is one tile wide
//              and holds every row: its tiles are staged one below the other,
//              epilogue() runs on them, a warp per column normalizes it over
//              all the rows (two passes) and passes its statistics to
//              column_stats(); then norm_apply() (finish_column_norm(); with
//              split-K each rank takes 1/kSplitK of the columns).
//
// Hook contract (checked by fusegen-template-tool against hooks/GemmHooks.h):
//   "tile_m"        constexpr int kTileM       rows of an epilogue tile (64)
//   "tile_n"        constexpr int kTileN       columns of an epilogue tile (64)
//   "block_m"       constexpr int kBlockM      rows of a block (64, or 128 with tensor cores)
//   "block_n"       constexpr int kBlockN      columns of a block (64, or 128 with tensor
//                                  cores, or 256 for TF32 on wgmma)
//   "tile_k"        constexpr int kTileK       depth of a shared-memory slice (8, 16 or 32)
//   "threads"       constexpr int kThreads     threads per block (256)
//   "inner_product" constexpr int kInnerProduct  0 SIMT fp32, 1 3xTF32, 2 TF32
//   "a_along_k"     constexpr bool kLoadAAlongK   consecutive threads load A along
//                                              k (true) or along m (false)
//   "b_along_k"     constexpr bool kLoadBAlongK   consecutive threads load B along
//                                              k (true) or along n (false)
//   "epilogue_along_m" constexpr bool kEpilogueAlongM  consecutive threads run
//                                              epilogue() on consecutive rows (true:
//                                              the output is contiguous along m, as
//                                              conv2d's pixels) or columns (false)
//   "norm_group"    constexpr int kNormGroup   0, or G of the fused row norm
//   "column_norm"   constexpr bool kColumnNorm  a fused column norm (training
//                                  batch_norm): the block holds every row of
//                                  its columns, normalizes each column over
//                                  them and calls column_stats() once per
//                                  column (tensor cores, kBlockN == kTileN)
//   "norm_eps"      constexpr float kNormEps   eps of the fused row or column norm
//   "stats_group"   constexpr int kStatsGroup  0, or S of the partial statistics
//   "row_reduce"    constexpr int kRowReduce   0 none, 1 min, 2 max
//   "row_reduce_parts" constexpr bool kRowReduceParts  a tile stores its row
//                                  result in reduce_slot() (one slot per tile)
//                                  instead of combining it there with atomics
//   "rows" / "cols" / "depth" / "batches"
//                   long long gemm_rows(args) ...   extents M, N, K and batch count
//   "a_offset"      long long a_offset(args, batch)   base offset of A for a batch
//   "b_offset"      long long b_offset(args, batch)   base offset of B for a batch
//   "a_address"     const float* a_address(args, a_base, m, k)  where A element
//                                  (m, k) is, or nullptr for a zero (conv
//                                  padding, the hook's own check); called only
//                                  for m < M, k < K
//   "b_address"     const float* b_address(args, b_base, k, n)  B element; k < K, n < N
//                                  (on the cp.async path, kAsync, a_address,
//                                  b_address and b_small_address are affine
//                                  in their coordinates: copy_slice_async()
//                                  steps from one row's address to the next)
//   "a_depth_table" constexpr int kADepthTable  0, or K: A's addresses split
//                                  into a_row(m) + a_depth_offset(k) (conv2d
//                                  without padding), the offsets of every k
//                                  tabled in shared memory once per block, so
//                                  a gathered element costs one shared load and
//                                  an add instead of a_address()'s divisions
//   "a_row"         const float* a_row(args, a_base, m)  where row m of A starts
//                                  (used when kADepthTable > 0)
//   "a_depth_offset" int a_depth_offset(args, k)  element (m, k) is at
//                                  a_row(m) + a_depth_offset(k)
//   "a_vector"      constexpr bool kAVector  a_address() at an index divisible
//                                  by 4 along A's contiguous direction points
//                                  at 4 contiguous, 16-byte aligned elements
//                                  (and that extent is a multiple of 4)
//   "b_vector"      constexpr bool kBVector  the same for B
//   "split_k"       constexpr int kSplitK   1, or 2, 4 or 8 (tensor cores, sm_90):
//                                  the blocks of a thread-block cluster along
//                                  x share one output block, each multiplying
//                                  a 1/kSplitK share of the k slices (split-K
//                                  for launches of few blocks); the entry is
//                                  declared __cluster_dims__(kSplitK, 1, 1)
//                                  and grid.x is kSplitK times the column blocks
//   "b_split"       constexpr bool kBSplit  3xTF32 on wgmma: B's small parts
//                                  come split (a pass before this kernel
//                                  wrote them once per call, bench/NOTES.md
//                                  v21) and are copied per slice beside B
//                                  instead of split in shared memory
//   "b_small_address" const float* b_small_address(args, b_base, k, n)  where
//                                  B element (k, n)'s small part is (kBSplit),
//                                  with B's strides (copy_slice_async() steps
//                                  both by B's row step)
//   "block_end"     constexpr int kBlockEnd  0, or N > 0: the launch's blocks
//                                  s >= N (s = y * grid.x + x, one batch;
//                                  without rastering s is the output block,
//                                  row-major) are left to a split tail
//   "block_begin"   constexpr int kBlockBegin  0, or N > 0: this launch is that
//                                  split tail: its clusters of kSplitK blocks
//                                  along x take blocks s = N, N + 1, ...
//                                  (grid.x = kSplitK * their count; y = z = 1).
//                                  The last wave of a launch of several waves
//                                  that would leave most SMs idle becomes a
//                                  short one (bench/NOTES.md v20)
//   "raster_rows"   constexpr int kRasterRows  0, or G > 0: with one batch and
//                                  every row block in grid.y, the blocks take
//                                  their output blocks in groups of G row
//                                  blocks, column by column (block s of the
//                                  launch, s = y * grid.x + x, as
//                                  raster_block() says; a split tail the
//                                  same), so a wave reads fewer column blocks
//                                  of B (bench/NOTES.md v25)
//   "wait_late"     constexpr bool kWaitLate  the kernel before this one (a
//                                  programmatic dependent launch) writes
//                                  nothing the products read: the entry lets
//                                  the next kernel start and each block waits
//                                  for the one before (fusegen_grid_wait)
//                                  after its products, before its epilogue
//                                  writes anything, so that its k loop runs
//                                  beside that kernel (bench/NOTES.md v29)
//   "stages"        constexpr int kStages   slices in flight on the cp.async
//                                  path (tensor cores, vector operands along k)
//   "shared_floats" constexpr int kDynamicSharedFloats  the launch's dynamic
//                                  shared memory in floats (tensor cores; SIMT
//                                  uses static shared memory and 0 here)
//   "epilogue"      float epilogue(args, batch, m, n, acc)  stage 0 for a valid
//                                  element: stores its values, returns the value
//                                  the next stage (norm or statistics) reads
//   "norm_apply"    float norm_apply(args, batch, m, n, normalized)  stage 1 for
//                                  a valid element given (x - mean) * rstd:
//                                  affine params, pointwise ops, stores; returns
//                                  the value the row reduction reads
//   "stats_slot"    float* stats_slot(args, batch, row_tile, n)  the (count, mean,
//                                  M2) triple of the statistics group whose
//                                  first column is n, for the epilogue tile
//                                  (64 rows) row_tile
//   "reduce_slot"   float* reduce_slot(args, batch, m, n)  the row reduction's
//                                  output element of row m for the tile whose
//                                  first column is n
//   "column_stats"  void column_stats(args, batch, n, count, mean, m2)  the
//                                  column norm's statistics of column n over
//                                  count rows (running stats updates)
//   "entry"         the __global__ kernel; the generator renames it
//
// Defaults below: C[M, N] = A[M, K] * B[K, N] with A = buf[0], B = buf[1],
// C = buf[2] and M, N, K = dim[0], dim[1], dim[2]. Compiles alone with nvcc and
// NVRTC (helpers.cu is the only include).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("tile_m") constexpr int kTileM = 64;

FUSEGEN_HOOK("tile_n") constexpr int kTileN = 64;

FUSEGEN_HOOK("block_m") constexpr int kBlockM = 64;

FUSEGEN_HOOK("block_n") constexpr int kBlockN = 64;

FUSEGEN_HOOK("tile_k") constexpr int kTileK = 16;

FUSEGEN_HOOK("threads") constexpr int kThreads = 256;

FUSEGEN_HOOK("inner_product") constexpr int kInnerProduct = 0;

FUSEGEN_HOOK("a_along_k") constexpr bool kLoadAAlongK = true;

FUSEGEN_HOOK("b_along_k") constexpr bool kLoadBAlongK = false;

FUSEGEN_HOOK("epilogue_along_m") constexpr bool kEpilogueAlongM = false;

FUSEGEN_HOOK("norm_group") constexpr int kNormGroup = 0;

FUSEGEN_HOOK("column_norm") constexpr bool kColumnNorm = false;

FUSEGEN_HOOK("norm_eps") constexpr float kNormEps = 1e-5f;

FUSEGEN_HOOK("stats_group") constexpr int kStatsGroup = 0;

FUSEGEN_HOOK("row_reduce") constexpr int kRowReduce = 0;

FUSEGEN_HOOK("row_reduce_parts") constexpr bool kRowReduceParts = false;

FUSEGEN_HOOK("rows")
__device__ __forceinline__ long long gemm_rows(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("cols")
__device__ __forceinline__ long long gemm_cols(const FusegenArgs& args) { return args.dim[1]; }

FUSEGEN_HOOK("depth")
__device__ __forceinline__ long long gemm_depth(const FusegenArgs& args) { return args.dim[2]; }

FUSEGEN_HOOK("batches")
__device__ __forceinline__ long long gemm_batches(const FusegenArgs& args) {
  (void)args;
  return 1;
}

FUSEGEN_HOOK("a_offset")
__device__ __forceinline__ long long a_offset(const FusegenArgs& args, long long batch) {
  return batch * args.dim[0] * args.dim[2];
}

FUSEGEN_HOOK("b_offset")
__device__ __forceinline__ long long b_offset(const FusegenArgs& args, long long batch) {
  return batch * args.dim[2] * args.dim[1];
}

FUSEGEN_HOOK("a_address")
__device__ __forceinline__ const float* a_address(const FusegenArgs& args, long long a_base, long long m,
                                                  long long k) {
  return args.buf[0] + a_base + m * args.dim[2] + k;
}

FUSEGEN_HOOK("b_address")
__device__ __forceinline__ const float* b_address(const FusegenArgs& args, long long b_base, long long k,
                                                  long long n) {
  return args.buf[1] + b_base + k * args.dim[1] + n;
}

FUSEGEN_HOOK("a_depth_table") constexpr int kADepthTable = 0;

FUSEGEN_HOOK("a_row")
__device__ __forceinline__ const float* a_row(const FusegenArgs& args, long long a_base, long long m) {
  return args.buf[0] + a_base + m * args.dim[2];
}

FUSEGEN_HOOK("a_depth_offset")
__device__ __forceinline__ int a_depth_offset(const FusegenArgs& args, long long k) {
  (void)args;
  return static_cast<int>(k);
}

FUSEGEN_HOOK("a_vector") constexpr bool kAVector = false;

FUSEGEN_HOOK("b_vector") constexpr bool kBVector = false;

FUSEGEN_HOOK("shared_floats") constexpr int kDynamicSharedFloats = 0;

FUSEGEN_HOOK("stages") constexpr int kStages = 2;

FUSEGEN_HOOK("split_k") constexpr int kSplitK = 1;

FUSEGEN_HOOK("b_split") constexpr bool kBSplit = false;

FUSEGEN_HOOK("b_small_address")
__device__ __forceinline__ const float* b_small_address(const FusegenArgs& args, long long b_base, long long k,
                                                        long long n) {
  (void)args;
  (void)b_base;
  (void)k;
  (void)n;
  return nullptr;
}

FUSEGEN_HOOK("block_end") constexpr int kBlockEnd = 0;

FUSEGEN_HOOK("block_begin") constexpr int kBlockBegin = 0;

FUSEGEN_HOOK("raster_rows") constexpr int kRasterRows = 0;

FUSEGEN_HOOK("wait_late") constexpr bool kWaitLate = false;

FUSEGEN_HOOK("epilogue")
__device__ __forceinline__ float epilogue(const FusegenArgs& args, long long batch, long long m, long long n,
                                          float acc) {
  args.buf[2][(batch * args.dim[0] + m) * args.dim[1] + n] = acc;
  return acc;
}

FUSEGEN_HOOK("norm_apply")
__device__ __forceinline__ float norm_apply(const FusegenArgs& args, long long batch, long long m, long long n,
                                            float normalized) {
  (void)args;
  (void)batch;
  (void)m;
  (void)n;
  return normalized;
}

FUSEGEN_HOOK("stats_slot")
__device__ __forceinline__ float* stats_slot(const FusegenArgs& args, long long batch, long long row_tile,
                                             long long n) {
  (void)batch;
  return args.buf[3] + (row_tile * args.dim[1] + n) * 3;
}

FUSEGEN_HOOK("reduce_slot")
__device__ __forceinline__ float* reduce_slot(const FusegenArgs& args, long long batch, long long m, long long n) {
  (void)batch;
  return args.buf[4] + m;
}

FUSEGEN_HOOK("column_stats")
__device__ __forceinline__ void column_stats(const FusegenArgs& args, long long batch, long long n, float count,
                                             float mean, float m2) {
  (void)args;
  (void)batch;
  (void)n;
  (void)count;
  (void)mean;
  (void)m2;
}

// ---- fixed geometry ----

static_assert(kTileM == 64 && kTileN == 64 && kThreads == 256,
              "the GEMM template is written for 64x64 tiles and 256 threads (16x16 threads of 4x4)");
static_assert(kTileK == 8 || kTileK == 16 || kTileK == 32, "kTileK must be 8, 16 or 32");
static_assert(kInnerProduct >= 0 && kInnerProduct <= 2, "kInnerProduct is 0 (SIMT), 1 (3xTF32) or 2 (TF32)");
static_assert(kInnerProduct != 0 || (kBlockM == kTileM && kBlockN == kTileN), "SIMT blocks are one 64x64 tile");
static_assert((kBlockM == 64 || kBlockM == 128) && (kBlockN == 64 || kBlockN == 128 || kBlockN == 256),
              "blocks are 64 or 128 rows and 64, 128 or 256 columns");
static_assert(kBlockN != 256 || (kInnerProduct == 2 && kBlockM == 128),
              "256-column blocks are for TF32 on wgmma (128 accumulators per thread)");
static_assert(kNormGroup >= 0 && kNormGroup <= kTileN && (kNormGroup == 0 || kTileN % kNormGroup == 0),
              "a norm group must divide the tile width");
static_assert(kStatsGroup >= 0 && kStatsGroup <= kTileN && (kStatsGroup == 0 || kTileN % kStatsGroup == 0),
              "a statistics group must divide the tile width");
static_assert(kRowReduce >= 0 && kRowReduce <= 2, "kRowReduce is 0 (none), 1 (min) or 2 (max)");
static_assert(kRowReduce == 0 || kNormGroup > 0, "the row reduction runs after a fused row norm");
static_assert(kNormGroup == 0 || kStatsGroup == 0, "a tile computes statistics or a row norm, not both");

// SIMT: two blocks per SM caps registers at 128 (without it ptxas sometimes
// trades a few spilled bytes for a third block). Tensor cores: one block per
// SM leaves room for a 128-row block's accumulators and split fragments.
// Element-wise (gathering) operand loads run 64x64 blocks with 8-deep slices,
// three per SM (80 registers, no spills), for more warps to hide their
// latency (chain 85's conv ran at 12.5% occupancy with one).
constexpr bool kGathers = !(kAVector && kBVector);
constexpr int kMinBlocksPerSM = kInnerProduct == 0                                                 ? 2
                                : kGathers && kBlockM == 64 && kBlockN == 64 && kTileK == 8 ? 3
                                                                                              : 1;
constexpr int kMicro = 4;                           // micro-tile: 4 rows x 4 columns per thread
constexpr int kThreadCols = kTileN / kMicro;        // 16 threads across the tile
constexpr int kThreadRows = kThreads / kThreadCols; // 16 threads down the tile
static_assert(kThreadRows * kMicro == kTileM, "threads must cover the tile exactly");

// Shared memory: two k slices of A ([kTileK][kBlockM]) and B ([kTileK][kBlockN]).
// SIMT pads rows by 4 floats (keeps float4 alignment, spreads the stores'
// banks); tensor cores by 8, so that a fragment load (lanes 4 rows k x 8
// columns) hits 32 different banks. The epilogue reuses it for the tile
// ([kTileM][kTileN + 1]) and scratch.
constexpr int kSlicePad = kInnerProduct == 0 ? 4 : 8;
constexpr int kAStride = kBlockM + kSlicePad;
constexpr int kBStride = kBlockN + kSlicePad;
constexpr int kSliceFloats = kTileK * (kAStride + kBStride);
constexpr int kTileStride = kTileN + 1;
constexpr int kParts = kThreads / kTileN;        // 4 row parts (statistics) / column parts (norm)
constexpr int kPartRows = kTileM / kParts;       // 16 rows per statistics part
constexpr int kPartCols = kTileN / kParts;       // 16 columns per norm part
constexpr int kScratchOffset = kTileM * kTileStride;
constexpr int kEpilogueFloats = kScratchOffset + kParts * kTileN + kTileN;
// kColumnNorm stages the block's tiles one below the other (every row of its
// columns).
constexpr int kColumnNormFloats = kBlockM * kTileStride;
static_assert(!kColumnNorm || (kInnerProduct != 0 && kBlockN == kTileN && !kEpilogueAlongM && kNormGroup == 0 &&
                               kStatsGroup == 0 && kRowReduce == 0 && kDynamicSharedFloats >= kColumnNormFloats),
              "a column norm takes tensor-core blocks one tile wide and their staging room, alone");
constexpr int kSharedFloats = 2 * kSliceFloats > kEpilogueFloats ? 2 * kSliceFloats : kEpilogueFloats;
// Tensor cores: the same in dynamic shared memory (the launch gives
// kDynamicSharedFloats).
static_assert(kInnerProduct == 0 || kDynamicSharedFloats >= kSharedFloats,
              "the launch must give the tensor-core block its shared memory");
static_assert(kThreads == kParts * kTileN && kThreads == kParts * kTileM, "epilogue thread mapping");

// Global loads of one k slice: kALoads / kBLoads vectors of kAWidth /
// kBWidth elements per thread (16-byte loads where the operand allows).
constexpr int kAWidth = kAVector ? 4 : 1;
constexpr int kBWidth = kBVector ? 4 : 1;
constexpr int kALoads = kBlockM * kTileK / (kThreads * kAWidth);
constexpr int kBLoads = kBlockN * kTileK / (kThreads * kBWidth);
static_assert(kALoads * kThreads * kAWidth == kBlockM * kTileK && kBLoads * kThreads * kBWidth == kBlockN * kTileK,
              "slice loads must divide evenly among the threads");

// Tensor-core warp layout: kWarpsM x kWarpsN warps, each a kWarpM x kWarpN
// warp tile of kFragsM x kFragsN m16n8 accumulator fragments. A warp tile
// lies inside one epilogue tile.
// The cp.async path (tensor cores, both operands 16-byte vectors along k, as
// in linear): kStages slices in flight, copied without passing through
// registers, stored row-major (As[m][k], Bs[n][k]).
constexpr bool kAsync = kInnerProduct != 0 && kAVector && kBVector && kLoadAAlongK && kLoadBAlongK;
// On sm_90a the cp.async path multiplies with warpgroup MMA (wgmma), both
// operands read from shared memory by the tensor cores: no fragment loads or
// per-warp operand splits. Elsewhere (sm_80, sm_90 without the a-features)
// it uses mma.sync.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kHaveWgmma = true;
#else
constexpr bool kHaveWgmma = false;
#endif
constexpr bool kWgmma = kAsync && kHaveWgmma && kBlockM == 128 && kTileK == 32;

constexpr int kWarps = kThreads / 32;
// wgmma: warpgroup w / 4 owns rows 64 * (w / 4) and up; warp w owns 16 of
// them across the whole block width (the m64nN accumulator layout).
constexpr int kWarpsN = kWgmma ? 1 : kBlockN >= 128 ? 4 : 2;
constexpr int kWarpsM = kWarps / kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM;
constexpr int kWarpN = kBlockN / kWarpsN;
constexpr int kFragsM = kWarpM / 16;
constexpr int kFragsN = kWarpN / 8;
static_assert(kWarpsM * kWarpM == kBlockM && kWarpsN * kWarpN == kBlockN && kFragsM >= 1 && kFragsN >= 1 &&
                  kTileM % kWarpM == 0 && kTileN % 8 == 0,
              "tensor-core warp tiles must cover the block");

// Slice rows on the cp.async path: mma.sync pads them to kTileK + 4 floats
// (16-byte aligned, and a fragment load's lanes, 8 rows x 4 columns, hit 32
// banks); wgmma takes 32-float (128-byte) rows in the 128-byte swizzle, whose
// 16-byte chunk c of row r sits at chunk c ^ (r % 8) of that row.
constexpr int kRowStride = kWgmma ? kTileK : kTileK + 4;
// With B split before the kernel (kBSplit), each stage also holds B's small
// parts, copied like B.
constexpr bool kCopySmallB = kWgmma && kInnerProduct == 1 && kBSplit;
constexpr int kAsyncSliceFloats = (kBlockM + kBlockN + (kCopySmallB ? kBlockN : 0)) * kRowStride;
// wgmma with 3xTF32 splitting B here: two slices' small parts of B (same
// layout; A is split in registers); and 1 KB of slack to align the slices
// to the swizzle's 1024 bytes.
constexpr int kSmallFloats = kWgmma && kInnerProduct == 1 && !kBSplit ? 2 * kBlockN * kRowStride : 0;
constexpr int kAlignFloats = kWgmma ? 256 : 0;
constexpr int kAsyncFloats = kStages * kAsyncSliceFloats + kSmallFloats + kAlignFloats > kEpilogueFloats
                                 ? kStages * kAsyncSliceFloats + kSmallFloats + kAlignFloats
                                 : kEpilogueFloats;
static_assert(!kAsync || (kStages >= 2 && kDynamicSharedFloats >= kAsyncFloats),
              "the launch must give the cp.async pipeline its shared memory");

// Row reduction combine: torch's min/max, NaN-propagating.
__device__ __forceinline__ float gemm_reduce_combine(float a, float b) {
  return kRowReduce == 1 ? fusegen_minimum(a, b) : fusegen_maximum(a, b);
}

// Folds a tile's row result into the output element (pre-filled with +inf for
// min, -inf for max). NaN: 0xffffffff for min and 0x7fffffff for max win every
// later fusegen_atomic_min/max, so a NaN anywhere in the row sticks. -0.0 is
// stored as +0.0 (equal in value): the integer order the atomics rely on puts
// -0.0 (0x80000000) below every float.
__device__ __forceinline__ void gemm_reduce_store(float* slot, float value) {
  if (value == 0.0f)
    value = 0.0f;
  if (value != value) {
    if (kRowReduce == 1)
      atomicMax(reinterpret_cast<unsigned int*>(slot), 0xffffffffu);
    else
      atomicMax(reinterpret_cast<int*>(slot), 0x7fffffff);
  } else if (kRowReduce == 1) {
    fusegen_atomic_min(slot, value);
  } else {
    fusegen_atomic_max(slot, value);
  }
}

// ---- main loop ----

// A's depth offsets (kADepthTable > 0), filled by fill_depth_table() at the
// start of the kernel. Static shared memory: the emitter keeps it small.
__shared__ int gemm_a_depth_table[kADepthTable > 0 ? kADepthTable : 1];

__device__ __forceinline__ void fill_depth_table(const FusegenArgs& args) {
  if constexpr (kADepthTable > 0) {
    for (int k = threadIdx.x; k < kADepthTable; k += kThreads)
      gemm_a_depth_table[k] = a_depth_offset(args, k);
    __syncthreads();
  }
}

// Where A element (m, k) is (m < M, k < K).
__device__ __forceinline__ const float* a_element(const FusegenArgs& args, long long a_base, long long m,
                                                  long long k) {
  if constexpr (kADepthTable > 0)
    return a_row(args, a_base, m) + gemm_a_depth_table[k];
  else
    return a_address(args, a_base, m, k);
}

// The problem's extents and the k slices this block multiplies: all of them,
// or with split-K its cluster rank's share.
struct GemmExtents {
  long long rows, cols, depth;
  long long first_slice, slices;
};

// Where slice s of this block's share starts along k.
__device__ __forceinline__ long long slice_k(const GemmExtents& e, long long s) { return (e.first_slice + s) * kTileK; }

// Where load slot `slot` of an operand slice goes: the vector of kWidth
// elements starting at (k, x) (x is m for A, n for B), laid out along k or x.
template <bool kAlongK, int kExtent, int kWidth>
__device__ __forceinline__ void slice_position(int slot, int& kk, int& xx) {
  kk = kAlongK ? (slot % (kTileK / kWidth)) * kWidth : slot / (kExtent / kWidth);
  xx = kAlongK ? slot / (kTileK / kWidth) : (slot % (kExtent / kWidth)) * kWidth;
}

// One operand element or 16-byte vector (zeros for a null address).
template <int kWidth>
__device__ __forceinline__ void load_vector(const float* at, float (&v)[kWidth]) {
  if constexpr (kWidth == 4) {
    const float4 q = at ? __ldg(reinterpret_cast<const float4*>(at)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
  } else {
    v[0] = at ? __ldg(at) : 0.0f;
  }
}

// Loads this thread's part of the k slice starting at k0 into registers
// (zero outside the problem), in the order store_slice() expects.
__device__ __forceinline__ void load_slice(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                           long long b_base, long long m0, long long n0, long long k0,
                                           float (&a)[kALoads][kAWidth], float (&b)[kBLoads][kBWidth]) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    int kk, mm;
    slice_position<kLoadAAlongK, kBlockM, kAWidth>(tid + i * kThreads, kk, mm);
    const long long m = m0 + mm, k = k0 + kk;
    load_vector<kAWidth>(m < e.rows && k < e.depth ? a_element(args, a_base, m, k) : nullptr, a[i]);
  }
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    int kk, nn;
    slice_position<kLoadBAlongK, kBlockN, kBWidth>(tid + i * kThreads, kk, nn);
    const long long n = n0 + nn, k = k0 + kk;
    load_vector<kBWidth>(n < e.cols && k < e.depth ? b_address(args, b_base, k, n) : nullptr, b[i]);
  }
}

// Stores the registers of load_slice() as As[k][m] and Bs[k][n].
__device__ __forceinline__ void store_slice(float* slice, const float (&a)[kALoads][kAWidth],
                                            const float (&b)[kBLoads][kBWidth]) {
  const int tid = threadIdx.x;
  float* as = slice;
  float* bs = slice + kTileK * kAStride;
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    int kk, mm;
    slice_position<kLoadAAlongK, kBlockM, kAWidth>(tid + i * kThreads, kk, mm);
#pragma unroll
    for (int q = 0; q < kAWidth; ++q)
      as[(kk + (kLoadAAlongK ? q : 0)) * kAStride + mm + (kLoadAAlongK ? 0 : q)] = a[i][q];
  }
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    int kk, nn;
    slice_position<kLoadBAlongK, kBlockN, kBWidth>(tid + i * kThreads, kk, nn);
#pragma unroll
    for (int q = 0; q < kBWidth; ++q)
      bs[(kk + (kLoadBAlongK ? q : 0)) * kBStride + nn + (kLoadBAlongK ? 0 : q)] = b[i][q];
  }
}

// The inner product of one k slice: plain fp32 FMA per micro-tile element.
// kInnerProduct selects this; a tensor-core variant would sit beside it.
__device__ __forceinline__ void multiply_slice(const float* slice, int ty, int tx, float (&acc)[kMicro][kMicro]) {
  const float* as = slice + ty * kMicro;
  const float* bs = slice + kTileK * kAStride + tx * kMicro;
#pragma unroll
  for (int kk = 0; kk < kTileK; ++kk) {
    const float4 a4 = *reinterpret_cast<const float4*>(as + kk * kAStride);
    const float4 b4 = *reinterpret_cast<const float4*>(bs + kk * kBStride);
    const float a[kMicro] = {a4.x, a4.y, a4.z, a4.w};
    const float b[kMicro] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
    for (int i = 0; i < kMicro; ++i)
#pragma unroll
      for (int j = 0; j < kMicro; ++j)
        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// acc = the tile's products over all of k (double-buffered slices, one
// barrier per slice). The loop body has no branches: the next slice's loads
// are issued before the multiply so their latency overlaps it (past the last
// slice the bounds checks yield zeros without touching memory, and storing
// them into the idle buffer is harmless). Ends with a barrier: shared memory
// is free afterwards.
__device__ __forceinline__ void accumulate_tile(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                long long batch, long long m0, long long n0,
                                                float (&acc)[kMicro][kMicro]) {
  const int tx = threadIdx.x % kThreadCols, ty = threadIdx.x / kThreadCols;
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  if (slices <= 0)
    return;
  float a[kALoads][kAWidth], b[kBLoads][kBWidth];
  load_slice(args, e, a_base, b_base, m0, n0, slice_k(e, 0), a, b);
  store_slice(smem, a, b);
  __syncthreads();
#pragma unroll 1 // constant small K would otherwise unroll whole slices and blow up registers
  for (long long s = 0; s < slices; ++s) {
    load_slice(args, e, a_base, b_base, m0, n0, slice_k(e, s + 1), a, b);
    multiply_slice(smem + (s & 1) * kSliceFloats, ty, tx, acc);
    store_slice(smem + ((s + 1) & 1) * kSliceFloats, a, b);
    __syncthreads();
  }
}

// ---- tensor-core inner product (kInnerProduct 1 and 2) ----

// x = big + small, both tf32; |x - big - small| <= 2^-22 |x| or so.
// kRoundSmall false leaves the small part's low bits for the tensor cores
// to drop (<= 2^-21 |x|): half the instructions of the split (cvt.rna is
// emulated by four), which the register-staged gather path is bound by
// (chain 85's conv: 1.45 -> 1.31 ms, error unchanged at 2e-6).
template <bool kRoundSmall = true>
__device__ __forceinline__ void gemm_split(float x, unsigned int& big, unsigned int& small) {
  big = fusegen_tf32_bits(x);
  const float rest = x - __uint_as_float(big);
  small = kRoundSmall ? fusegen_tf32_bits(rest) : __float_as_uint(rest);
}

// acc (m16n8, fp32) += a (m16k8, tf32, row) * b (k8n8, tf32, col).
__device__ __forceinline__ void gemm_mma(float (&acc)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The products of one k slice for kRows row fragments of this warp's tile,
// from row fragment first_row on (a constant once unrolled). Fragment layouts
// are the PTX ISA's for m16n8k8 tf32 (g = lane / 4, t = lane % 4): A holds
// (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B holds (t, g), (t + 4, g).
// Slices are k-major (As[k][m], Bs[k][n]; element (k, x) at k * stride + x),
// or row-major on the cp.async path (As[m][k], Bs[n][k]; x * kRowStride + k).
template <int kRows>
__device__ __forceinline__ void multiply_slice_tc(const float* slice, int warp_m, int warp_n, int first_row,
                                                  float (&acc)[kRows][kFragsN][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Distance between elements 1 apart along k, and along m or n.
  constexpr int kAK = kAsync ? 1 : kAStride, kAX = kAsync ? kRowStride : 1;
  constexpr int kBK = kAsync ? 1 : kBStride, kBX = kAsync ? kRowStride : 1;
  const float* as = slice + (warp_m * kWarpM + first_row * 16 + g) * kAX + t * kAK;
  const float* bs = slice + (kAsync ? kBlockM * kRowStride : kTileK * kAStride) + (warp_n * kWarpN + g) * kBX + t * kBK;
#pragma unroll
  for (int k8 = 0; k8 < kTileK; k8 += 8) {
    // B's fragments for every column fragment, then A's one row fragment at
    // a time (fewer live registers than all of A at once).
    unsigned int b_big[kFragsN][2], b_small[kFragsN][2];
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const float* b = bs + k8 * kBK + j * 8 * kBX;
      const float v[2] = {b[0], b[4 * kBK]};
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if (kInnerProduct == 1)
          gemm_split<!kGathers>(v[r], b_big[j][r], b_small[j][r]);
        else
          b_big[j][r] = fusegen_tf32_bits(v[r]);
      }
    }
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const float* a = as + k8 * kAK + i * 16 * kAX;
      const float v[4] = {a[0], a[8 * kAX], a[4 * kAK], a[4 * kAK + 8 * kAX]};
      unsigned int a_big[4], a_small[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (kInnerProduct == 1)
          gemm_split<!kGathers>(v[r], a_big[r], a_small[r]);
        else
          a_big[r] = fusegen_tf32_bits(v[r]);
      }
      // The small terms first: they join the running sum before the big
      // product of the same step, which keeps more of their bits.
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) {
        if (kInnerProduct == 1) {
          gemm_mma(acc[i][j], a_small, b_big[j]);
          gemm_mma(acc[i][j], a_big, b_small[j]);
        }
        gemm_mma(acc[i][j], a_big, b_big[j]);
      }
    }
  }
}

// Shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned int gemm_shared_address(const void* pointer) {
  unsigned int address;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(pointer));
  return address;
}

// Copies 16 bytes from global to shared memory without passing through
// registers; a null source writes zeros (src-size 0 reads nothing, so any
// valid address may stand in for it).
__device__ __forceinline__ void gemm_copy16_async(float* destination, const float* source, const float* stand_in) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(gemm_shared_address(destination)),
               "l"(source ? source : stand_in), "r"(source ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void gemm_copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most kPending committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void gemm_copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Where row r, column k (a multiple of 4) of a row-major slice lives.
__device__ __forceinline__ int slice_offset(int r, int k) {
  if constexpr (kWgmma)
    return r * kRowStride + (((k / 4) ^ (r % 8)) * 4);
  else
    return r * kRowStride + k;
}

// Starts copying the k slice at k0 into `slice` (As[m][k], Bs[n][k]; zeros
// outside the problem).
__device__ __forceinline__ void copy_slice_async(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                                 long long b_base, long long m0, long long n0, long long k0,
                                                 float* slice) {
  constexpr int kVectorsPerRow = kTileK / 4;
  constexpr int kACopies = kBlockM * kVectorsPerRow / kThreads;
  constexpr int kBCopies = kBlockN * kVectorsPerRow / kThreads;
  static_assert(!kAsync ||
                    (kACopies * kThreads == kBlockM * kVectorsPerRow && kBCopies * kThreads == kBlockN * kVectorsPerRow),
                "slice copies must divide evenly among the threads");
  const float* stand_in = args.buf[0];
  // This thread's vectors: column kk of rows r0, r0 + kRowStep, ... The
  // operands' addresses are affine in their coordinates on this path (hook
  // contract), so one address per operand and a row step (a constant where
  // the extents are) give every copy's: a handful of instructions per
  // slice instead of an address computed per copy (bench/NOTES.md v32).
  constexpr int kRowStep = kThreads / kVectorsPerRow;
  const int r0 = static_cast<int>(threadIdx.x) / kVectorsPerRow, kk = (static_cast<int>(threadIdx.x) % kVectorsPerRow) * 4;
  const long long k = k0 + kk;
  const bool k_inside = k < e.depth;
  const float* a = a_element(args, a_base, m0 + r0, k);
  const long long a_step = a_element(args, a_base, m0 + r0 + kRowStep, k) - a;
#pragma unroll
  for (int i = 0; i < kACopies; ++i) {
    const int mm = r0 + i * kRowStep;
    gemm_copy16_async(slice + slice_offset(mm, kk), m0 + mm < e.rows && k_inside ? a + i * a_step : nullptr,
                      stand_in);
  }
  float* bs = slice + kBlockM * kRowStride;
  const float* b = b_address(args, b_base, k, n0 + r0);
  const long long b_step = b_address(args, b_base, k, n0 + r0 + kRowStep) - b;
  const float* b_small = kCopySmallB ? b_small_address(args, b_base, k, n0 + r0) : nullptr;
#pragma unroll
  for (int i = 0; i < kBCopies; ++i) {
    const int nn = r0 + i * kRowStep;
    const bool inside = n0 + nn < e.cols && k_inside;
    gemm_copy16_async(bs + slice_offset(nn, kk), inside ? b + i * b_step : nullptr, stand_in);
    if constexpr (kCopySmallB)
      gemm_copy16_async(bs + kBlockN * kRowStride + slice_offset(nn, kk), inside ? b_small + i * b_step : nullptr,
                        stand_in);
  }
}

// The products of one slice added to acc. Strict precision: the tensor
// cores' fp32 accumulation truncates, and over thousands of steps that bias
// grows past 1e-4 after a GroupNorm, so each slice's products are summed
// apart (few truncations, small values) and added to acc with rounded fp32
// adds, two row fragments at a time so that the separate sums fit in registers.
__device__ __forceinline__ void multiply_into(const float* slice, int warp_m, int warp_n,
                                              float (&acc)[kFragsM][kFragsN][4]) {
  if constexpr (kInnerProduct == 1) {
    constexpr int kChunk = kFragsM < 2 ? kFragsM : 2;
#pragma unroll
    for (int first = 0; first < kFragsM; first += kChunk) {
      float part[kChunk][kFragsN][4] = {};
      multiply_slice_tc<kChunk>(slice, warp_m, warp_n, first, part);
#pragma unroll
      for (int i = 0; i < kChunk; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            acc[first + i][j][r] += part[i][j][r];
    }
  } else {
    multiply_slice_tc<kFragsM>(slice, warp_m, warp_n, 0, acc);
  }
}

// ---- warpgroup MMA (sm_90a) ----

__device__ __forceinline__ void gemm_fence_async_proxy() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ __forceinline__ void gemm_wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void gemm_wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

// Waits until at most kPending committed groups of this warpgroup's products
// are still running.
template <int kPending>
__device__ __forceinline__ void gemm_wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
#endif
}

// ---- per-stage barriers (mbarrier, sm_90a) ----
// A stage's "filled" barrier completes once every thread's copies into it
// have landed (kThreads arrivals, each triggered by the thread's cp.async
// completing); its "freed" barrier once every thread's products that read it
// have finished (kThreads arrivals). A thread waiting on these waits for
// what it reads or overwrites, not for every warp of the block
// (bench/NOTES.md v31).

__device__ __forceinline__ void gemm_barrier_init(unsigned long long* barrier, unsigned int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(gemm_shared_address(barrier)), "r"(count) : "memory");
#else
  (void)barrier;
  (void)count;
#endif
}

__device__ __forceinline__ void gemm_barrier_inval(unsigned long long* barrier) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(gemm_shared_address(barrier)) : "memory");
#else
  (void)barrier;
#endif
}

// Arrives on `barrier` once every copy this thread has issued so far landed.
__device__ __forceinline__ void gemm_barrier_arrive_on_copies(unsigned long long* barrier) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(gemm_shared_address(barrier)) : "memory");
#else
  (void)barrier;
#endif
}

// Arrives on `barrier` (release: this thread's reads before it are done).
__device__ __forceinline__ void gemm_barrier_arrive(unsigned long long* barrier) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [%0]; }" ::"r"(gemm_shared_address(barrier))
               : "memory");
#else
  (void)barrier;
#endif
}

// Waits (acquire, at the block's scope or with kCluster the cluster's) until
// the phase of `barrier` with parity `parity` completed.
template <bool kCluster = false>
__device__ __forceinline__ void gemm_barrier_wait(unsigned long long* barrier, unsigned int parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned int address = gemm_shared_address(barrier);
  unsigned int done = 0;
  do {
    if constexpr (kCluster)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 "
                   "%0, 1, 0, p; }"
                   : "=r"(done)
                   : "r"(address), "r"(parity)
                   : "memory");
    else
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done)
                   : "r"(address), "r"(parity)
                   : "memory");
  } while (!done);
#else
  (void)barrier;
  (void)parity;
#endif
}

// Shared-memory matrix descriptor of a K-major tile with 128-byte rows in
// the 128-byte swizzle: start address, leading offset (unused by this
// layout, 1), stride between 8-row groups 1024 bytes, layout 1 (SW128).
__device__ __forceinline__ unsigned long long gemm_descriptor(const float* tile) {
  const unsigned long long address = gemm_shared_address(tile);
  return ((address & 0x3FFFFull) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// acc (m64n64, fp32) = a (64 x 8) * b (64 x 8)^T [+ acc if accumulate],
// both operands K-major tf32 in shared memory (descriptors).
__device__ __forceinline__ void gemm_wgmma_n64(float (&d)[8][4], unsigned long long a, unsigned long long b,
                                               int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
               "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
               "%32, %33, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3])
               : "l"(a), "l"(b), "r"(accumulate));
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

// acc (m64n128, fp32) = a (64 x 8) * b (128 x 8)^T [+ acc if accumulate],
// both operands K-major tf32 in shared memory (descriptors).
__device__ __forceinline__ void gemm_wgmma_n128(float (&d)[16][4], unsigned long long a, unsigned long long b,
                                               int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
               "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
               "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
               "%56, %57, %58, %59, %60, %61, %62, %63}, "
               "%64, %65, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                 "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
                 "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                 "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]),
                 "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                 "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
               : "l"(a), "l"(b), "r"(accumulate));
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

// acc (m64n256, fp32) = a (64 x 8) * b (256 x 8)^T [+ acc if accumulate],
// both operands K-major tf32 in shared memory (descriptors).
__device__ __forceinline__ void gemm_wgmma_n256(float (&d)[32][4], unsigned long long a, unsigned long long b,
                                               int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
               "{"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
               "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
               "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
               "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
               "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
               "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
               "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
               "%123, %124, %125, %126, %127"
               "}, %128, %129, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                 "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
                 "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),
                 "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                 "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),
                 "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),
                 "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]),
                 "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
                 "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]),
                 "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]),
                 "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]),
                 "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]),
                 "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]),
                 "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]),
                 "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]),
                 "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
                 "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]),
                 "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]),
                 "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]),
                 "+f"(d[31][3])
               : "l"(a), "l"(b), "r"(accumulate));
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

// One m64nN k8 step: the instruction for the block width (a template, so
// that configurations without wgmma instantiate neither).
template <int kN>
__device__ __forceinline__ void gemm_wgmma(float (&d)[kN][4], unsigned long long a, unsigned long long b,
                                           int accumulate) {
  static_assert(!kWgmma || kN == 32 || kN == 16 || kN == 8, "wgmma blocks are 256, 128 or 64 columns wide");
  if constexpr (kN == 32)
    gemm_wgmma_n256(d, a, b, accumulate);
  else if constexpr (kN == 16)
    gemm_wgmma_n128(d, a, b, accumulate);
  else if constexpr (kN == 8)
    gemm_wgmma_n64(d, a, b, accumulate);
}

// acc (m64n64 or m64n128, fp32) += a (64 x 8, tf32 fragments in registers:
// warp w of the warpgroup holds rows 16w.., as mma.sync's m16n8k8 A) * b
// (N x 8, K-major in shared memory)^T.
template <int kN>
__device__ __forceinline__ void gemm_wgmma_rs(float (&d)[kN][4], const unsigned int (&a)[4], unsigned long long b) {
  static_assert(!kWgmma || kInnerProduct != 1 || kN == 16 || kN == 8, "3xTF32 blocks are 128 or 64 columns wide");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kN == 16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
                 "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
                 "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                   "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                   "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                   "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                   "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                   "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                   "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
                   "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),
                   "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                   "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),
                   "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),
                   "+f"(d[15][2]), "+f"(d[15][3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else if constexpr (kN == 8)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
                 "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                   "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                   "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                   "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                   "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                   "+f"(d[7][2]), "+f"(d[7][3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

// This thread's A fragment of k step k8 of a landed slice for its
// warpgroup's rows, split into tf32 big and small parts: register r holds
// (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) of the warp's 16 rows (g =
// lane / 4, t = lane % 4), read through the 128-byte swizzle (conflict-free:
// the 8 rows of a lane group sit in 8 different 16-byte chunks).
__device__ __forceinline__ void load_split_a(const float* slice, int k8, unsigned int (&big)[4],
                                             unsigned int (&small)[4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row = (threadIdx.x / 128) * 64 + ((threadIdx.x / 32) % 4) * 16 + g;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int rr = row + (r & 1) * 8, k = k8 * 8 + t + (r >> 1) * 4;
    gemm_split(slice[rr * kRowStride + (((k / 4) ^ (rr % 8)) * 4) + k % 4], big[r], small[r]);
  }
}

// Writes the small parts of `count` floats to `small` (same layout; the
// split is element-wise, so the swizzle does not matter) and leaves the
// floats as they are: the tensor cores read their tf32 part, the truncated
// big part, and small = rna(x - trunc(x)) leaves at most 2^-21 |x| (2^-22
// with a rounded big part, which costs writing the slice back: about 8% of
// the shared-memory traffic that bounds this loop; bench/NOTES.md v10).
// All of a thread's loads come first: `small` may alias `slice` as far as the
// compiler knows, so a load after a store would wait for the load before it
// (bench/NOTES.md v34).
template <int kCount>
__device__ __forceinline__ void split_floats(const float* slice, float* small) {
  constexpr int kVectors = kCount / 4;
  static_assert(!kWgmma || kVectors % kThreads == 0, "split vectors must divide evenly among the threads");
  constexpr int kPerThread = kVectors / kThreads;
  float4 x[kPerThread > 0 ? kPerThread : 1];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    x[i] = *reinterpret_cast<const float4*>(slice + (threadIdx.x + i * kThreads) * 4);
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    *reinterpret_cast<float4*>(small + (threadIdx.x + i * kThreads) * 4) = make_float4(
        fusegen_tf32_rest(x[i].x), fusegen_tf32_rest(x[i].y), fusegen_tf32_rest(x[i].z), fusegen_tf32_rest(x[i].w));
}

// One slice's TF32 products with wgmma for this thread's warpgroup (rows
// 64 * (warp / 4) and up, over the block's width) added to `sums`,
// committed as one group.
__device__ __forceinline__ void issue_slice_wgmma(const float* slice, float (&sums)[kFragsN][4]) {
  const int group = threadIdx.x / 128;
  const unsigned long long a = gemm_descriptor(slice + group * 64 * kRowStride);
  const unsigned long long b = gemm_descriptor(slice + kBlockM * kRowStride);
#pragma unroll
  for (int k8 = 0; k8 < kTileK / 8; ++k8) {
    // k steps advance 32 bytes within the 128-byte rows: 2 in the
    // descriptor's 16-byte address units.
    const unsigned long long step = 2ull * k8;
    gemm_wgmma(sums, a + step, b + step, 1);
  }
  gemm_wgmma_commit();
}

// One slice's 3xTF32 products for this thread's warpgroup, A from registers,
// B in the slice (its big parts as the tensor cores read it) and its small
// parts in `b_small`: small*big +
// big*small + big*big added to `sums`, one commit group per k step. A's
// fragments go through two register sets: a set is refilled (shared loads
// and the split, while the previous step's products run) once the products
// two steps back, which read it, have finished.
__device__ __forceinline__ void issue_slice_wgmma_split(const float* slice, const float* b_small,
                                                        float (&sums)[kFragsN][4]) {
  const unsigned long long b = gemm_descriptor(slice + kBlockM * kRowStride);
  const unsigned long long b_rest = gemm_descriptor(b_small);
  unsigned int a_big[2][4], a_small[2][4];
#pragma unroll
  for (int k8 = 0; k8 < kTileK / 8; ++k8) {
    if (k8 >= 2)
      gemm_wgmma_wait<1>();
    load_split_a(slice, k8, a_big[k8 & 1], a_small[k8 & 1]);
    gemm_wgmma_fence(); // the fragments (and sums) were written by ordinary instructions
    const unsigned long long step = 2ull * k8; // 32 bytes in 16-byte units
    gemm_wgmma_rs(sums, a_small[k8 & 1], b + step);
    gemm_wgmma_rs(sums, a_big[k8 & 1], b_rest + step);
    gemm_wgmma_rs(sums, a_big[k8 & 1], b + step);
    gemm_wgmma_commit();
  }
}

// Waits for this warpgroup's products of a slice and adds their separate
// sums to the accumulators with rounded fp32 adds (strict precision: see
// multiply_into()).
__device__ __forceinline__ void add_slice_sums(float (&acc)[kFragsN][4], const float (&sums)[kFragsN][4]) {
  gemm_wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < kFragsN; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      acc[j][r] += sums[j][r];
}

// Starts copying slices 0 .. kAhead - 1 into stages 0 .. kAhead - 1, one
// commit group each (empty past the last slice, so group counts stay
// uniform): the prologue of both cp.async pipelines.
template <int kAhead>
__device__ __forceinline__ void copy_first_slices(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                                  long long b_base, long long m0, long long n0, long long slices,
                                                  float* smem) {
#pragma unroll
  for (int stage = 0; stage < kAhead; ++stage) {
    if (stage < slices)
      copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, stage), smem + stage * kAsyncSliceFloats);
    gemm_copy_commit();
  }
}

// Starts copying slice `next` into its stage once every thread's products
// of the slice that stage held (next - kStages) have finished, and has the
// stage's "filled" barrier count this thread's copies.
__device__ __forceinline__ void refill_stage(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                             long long b_base, long long m0, long long n0, long long next, float* smem,
                                             unsigned long long* filled, unsigned long long* freed) {
  if (next >= e.slices)
    return;
  const int stage = static_cast<int>(next % kStages);
  if (next >= kStages)
    gemm_barrier_wait(&freed[stage], static_cast<unsigned int>(next / kStages - 1) & 1u);
  copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next), smem + stage * kAsyncSliceFloats);
  gemm_barrier_arrive_on_copies(&filled[stage]);
}

// 3xTF32 products with wgmma where B's small parts arrive with each slice
// (kCopySmallB, v21), synchronized per stage (bench/NOTES.md v31) rather than
// by a block-wide barrier per slice. Every slice ends with a drain: its
// products go into separate sums that are added to acc with rounded fp32
// adds, as multiply_into() does. With a barrier per slice every warp waited
// there for the slowest one's drain; here a warpgroup waits only for its
// slice to land and, before refilling a stage, for both warpgroups'
// products that read it (2-3% off chain 39 strict). Copies run kStages - 1
// slices ahead: iteration s refills slice s - 1's stage after issuing its
// own products, so that it waits for the other warpgroup while they run.
__device__ __forceinline__ void accumulate_stages_wgmma(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                        long long a_base, long long b_base, long long m0, long long n0,
                                                        float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kAhead = kStages - 1;
  __shared__ unsigned long long filled[kStages], freed[kStages];
  if (threadIdx.x == 0)
    for (int stage = 0; stage < kStages; ++stage) {
      gemm_barrier_init(&filled[stage], kThreads);
      gemm_barrier_init(&freed[stage], kThreads);
    }
  __syncthreads(); // the barriers are initialized
  const long long slices = e.slices;
#pragma unroll 1
  for (long long next = 0; next < kAhead; ++next)
    refill_stage(args, e, a_base, b_base, m0, n0, next, smem, filled, freed);
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    const int stage = static_cast<int>(s % kStages);
    gemm_barrier_wait(&filled[stage], static_cast<unsigned int>(s / kStages) & 1u);
    gemm_fence_async_proxy(); // the tensor cores read what cp.async wrote
    float* slice = smem + stage * kAsyncSliceFloats;
    float sums[kFragsN][4] = {};
    issue_slice_wgmma_split(slice, slice + (kBlockM + kBlockN) * kRowStride, sums);
    refill_stage(args, e, a_base, b_base, m0, n0, s + kAhead, smem, filled, freed);
    add_slice_sums(acc[0], sums);
    gemm_barrier_arrive(&freed[stage]);
  }
  __syncthreads(); // shared memory is free for the epilogue, the barriers for inval
  if (threadIdx.x == 0)
    for (int stage = 0; stage < kStages; ++stage) {
      gemm_barrier_inval(&filled[stage]);
      gemm_barrier_inval(&freed[stage]);
    }
}

// The block's products with wgmma.
//   TF32: copies run kStages - 2 slices ahead and one group of products stays
//   in flight (wait_group 1), so a stage is refilled only after the products
//   that read it, two slices back, finished in both warpgroups. The tensor
//   cores take the fp32 bits as they are (they read the tf32 part). (Per-stage
//   barriers as in accumulate_stages_wgmma() measured 4% slower here, v31.)
//   3xTF32 with B split here: copies run kStages - 1 ahead. Each landed
//   slice's B is split once (every thread a share: small parts into one of
//   two buffers, the tensor cores truncate the slice itself to the big parts)
//   while slice s's products are on the tensor cores; each warpgroup loads
//   and splits its own rows of A in registers (wgmma's register-A form), so
//   the tensor cores read only B from shared memory (bench/NOTES.md v9). The
//   products of a slice go into separate sums that are added to acc with
//   rounded fp32 adds, as multiply_into() does.
//   3xTF32 with B's small parts copied: accumulate_stages_wgmma().
__device__ __forceinline__ void accumulate_block_wgmma(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                       long long batch, long long m0, long long n0,
                                                       float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kAhead = kInnerProduct == 1 ? kStages - 1 : kStages - 2;
  static_assert(!kWgmma || kAhead >= 2, "the wgmma pipeline needs more stages");
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  float* small = smem + kStages * kAsyncSliceFloats; // 3xTF32: two buffers of B's small parts
  constexpr int kBFloats = kBlockN * kRowStride;
  if constexpr (kCopySmallB) {
    accumulate_stages_wgmma(args, smem, e, a_base, b_base, m0, n0, acc);
  } else if constexpr (kInnerProduct != 1) {
    copy_first_slices<kAhead>(args, e, a_base, b_base, m0, n0, slices, smem);
    gemm_wgmma_fence(); // acc was zeroed by ordinary instructions
#pragma unroll 1
    for (long long s = 0; s < slices; ++s) {
      gemm_copy_wait<kAhead - 1>();
      gemm_fence_async_proxy(); // the tensor cores read what cp.async wrote
      __syncthreads();          // slice s has landed everywhere; slice s - 2's products finished
      const long long next = s + kAhead;
      if (next < slices)
        copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next),
                         smem + (next % kStages) * kAsyncSliceFloats);
      gemm_copy_commit();
      issue_slice_wgmma(smem + (s % kStages) * kAsyncSliceFloats, acc[0]);
      gemm_wgmma_wait<1>();
    }
    gemm_wgmma_wait<0>();
    gemm_copy_wait<0>();
    __syncthreads(); // shared memory is free for the epilogue
  } else {
    copy_first_slices<kAhead>(args, e, a_base, b_base, m0, n0, slices, smem);
    if (slices > 0) {
      gemm_copy_wait<kAhead - 1>();
      __syncthreads(); // slice 0 has landed
      split_floats<kBFloats>(smem + kBlockM * kRowStride, small);
      gemm_fence_async_proxy(); // the tensor cores read what the split wrote
      __syncthreads();
    }
#pragma unroll 1
    for (long long s = 0; s < slices; ++s) {
      // Slice s - 1's stage: its products finished and everyone passed the
      // barrier that ended the last iteration.
      const long long next = s + kAhead;
      if (next < slices)
        copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next),
                         smem + (next % kStages) * kAsyncSliceFloats);
      gemm_copy_commit();
      float sums[kFragsN][4] = {};
      issue_slice_wgmma_split(smem + (s % kStages) * kAsyncSliceFloats, small + (s & 1) * kBFloats, sums);
      if (s + 1 < slices) {
        gemm_copy_wait<kAhead - 1>();
        __syncthreads(); // slice s + 1 has landed
        split_floats<kBFloats>(smem + ((s + 1) % kStages) * kAsyncSliceFloats + kBlockM * kRowStride,
                               small + ((s + 1) & 1) * kBFloats);
      }
      add_slice_sums(acc[0], sums);
      gemm_fence_async_proxy();
      __syncthreads(); // the split is visible; slice s's buffers are free
    }
    gemm_copy_wait<0>();
    __syncthreads(); // shared memory is free for the epilogue
  }
}

// The block's products on the cp.async path: kStages - 1 slices in flight
// while one is multiplied, one barrier per slice.
__device__ __forceinline__ void accumulate_block_async(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                       long long batch, long long m0, long long n0,
                                                       float (&acc)[kFragsM][kFragsN][4]) {
  const int warp = threadIdx.x / 32, warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  copy_first_slices<kStages - 1>(args, e, a_base, b_base, m0, n0, slices, smem);
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    gemm_copy_wait<kStages - 2>();
    __syncthreads(); // slice s is visible to all; slice s - 1's buffer is free
    const long long next = s + kStages - 1;
    if (next < slices)
      copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next), smem + (next % kStages) * kAsyncSliceFloats);
    gemm_copy_commit();
    multiply_into(smem + (s % kStages) * kAsyncSliceFloats, warp_m, warp_n, acc);
  }
  gemm_copy_wait<0>();
  __syncthreads(); // shared memory is free for the epilogue
}

// As accumulate_tile, for the whole block on tensor cores where the cp.async
// path does not apply (the same register-staged double buffer).
__device__ __forceinline__ void accumulate_block_tc(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                    long long batch, long long m0, long long n0,
                                                    float (&acc)[kFragsM][kFragsN][4]) {
  const int warp = threadIdx.x / 32, warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  if (slices <= 0)
    return;
  float a[kALoads][kAWidth], b[kBLoads][kBWidth];
  load_slice(args, e, a_base, b_base, m0, n0, slice_k(e, 0), a, b);
  store_slice(smem, a, b);
  __syncthreads();
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    load_slice(args, e, a_base, b_base, m0, n0, slice_k(e, s + 1), a, b);
    multiply_into(smem + (s & 1) * kSliceFloats, warp_m, warp_n, acc);
    store_slice(smem + ((s + 1) & 1) * kSliceFloats, a, b);
    __syncthreads();
  }
}

// ---- epilogue stages ----

// Partial statistics per group of kStatsGroup adjacent columns over the tile's
// valid rows: count, mean and M2 by two passes over the staged tile.
__device__ __forceinline__ void tile_statistics(const FusegenArgs& args, float* smem, long long batch,
                                                long long row_tile, long long n0, long long cols, int valid_rows,
                                                int first_col, int end_col) {
  constexpr int kGroup = kStatsGroup > 0 ? kStatsGroup : 1;
  constexpr int kLanes = kGroup < 32 ? kGroup : 32; // a group's columns within one warp
  constexpr int kSpans = kGroup / kLanes;           // warps a group spans (2 when 64 wide)
  const float* tile = smem;
  float* partial = smem + kScratchOffset; // [kParts][kTileN]
  float* group_mean = partial + kParts * kTileN;
  const int column = threadIdx.x % kTileN, part = threadIdx.x / kTileN;
  const bool leader = threadIdx.x < kTileN && column % kGroup == 0;
  const float count = static_cast<float>(valid_rows) * static_cast<float>(kGroup);

  float sum = 0.0f;
#pragma unroll
  for (int r = 0; r < kPartRows; ++r) {
    const int row = part * kPartRows + r;
    if (row < valid_rows)
      sum += tile[row * kTileStride + column];
  }
  partial[part * kTileN + column] = fusegen_team_sum<kLanes>(sum);
  __syncthreads();
  if (leader) {
    float total = 0.0f;
    for (int p = 0; p < kParts; ++p)
      for (int s = 0; s < kSpans; ++s)
        total += partial[p * kTileN + column + s * 32];
    group_mean[column / kGroup] = total / count;
  }
  __syncthreads();

  const float mean = group_mean[column / kGroup];
  float squares = 0.0f;
#pragma unroll
  for (int r = 0; r < kPartRows; ++r) {
    const int row = part * kPartRows + r;
    if (row < valid_rows) {
      const float d = tile[row * kTileStride + column] - mean;
      squares = fmaf(d, d, squares);
    }
  }
  partial[part * kTileN + column] = fusegen_team_sum<kLanes>(squares);
  __syncthreads();
  if (leader && n0 + column < cols && column >= first_col && column < end_col) {
    float m2 = 0.0f;
    for (int p = 0; p < kParts; ++p)
      for (int s = 0; s < kSpans; ++s)
        m2 += partial[p * kTileN + column + s * 32];
    float* slot = stats_slot(args, batch, row_tile, n0 + column);
    slot[0] = count;
    slot[1] = mean;
    slot[2] = m2;
  }
}

// Normalizes every (row, group of kNormGroup columns) of the staged tile in
// place: (x - mean) / sqrt(biased var + eps), two passes. Thread (row, part)
// covers 16 columns; groups wider than that are shared by 2 or 4 lanes.
// Rows and columns outside the problem are ignored later; rows outside
// [first_row, end_row) are left as they are (whole warps: see kSplitShares).
__device__ __forceinline__ void normalize_tile(float* smem, int first_row, int end_row) {
  constexpr int kGroup = kNormGroup > 0 ? kNormGroup : 1;
  constexpr int kWidth = kGroup < kPartCols ? kGroup : kPartCols; // group columns per thread
  constexpr int kTeam = kGroup / kWidth;                          // lanes sharing a group
  const int row = threadIdx.x / kParts, part = threadIdx.x % kParts;
  if (row < first_row || row >= end_row)
    return;
  float* values = smem + row * kTileStride + part * kPartCols;
#pragma unroll
  for (int g = 0; g < kPartCols; g += kWidth) {
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kWidth; ++j)
      sum += values[g + j];
    const float mean = fusegen_team_sum<kTeam>(sum) / static_cast<float>(kGroup);
    float squares = 0.0f;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      const float d = values[g + j] - mean;
      squares = fmaf(d, d, squares);
    }
    const float var = fusegen_team_sum<kTeam>(squares) / static_cast<float>(kGroup);
    const float rstd = fusegen_rsqrt(var + kNormEps);
#pragma unroll
    for (int j = 0; j < kWidth; ++j)
      values[g + j] = (values[g + j] - mean) * rstd;
  }
}

// Reduces each row of the staged norm_apply() values over the tile's valid
// columns and folds the result into reduce_slot() (or stores it there:
// kRowReduceParts), for the rows in [first_row, end_row).
__device__ __forceinline__ void reduce_tile_rows(const FusegenArgs& args, const float* smem, long long batch,
                                                 long long m0, long long n0, int first_row, int end_row,
                                                 int valid_cols) {
  const int row = threadIdx.x / kParts, part = threadIdx.x % kParts;
  const float* values = smem + row * kTileStride;
  float result = kRowReduce == 1 ? __int_as_float(0x7f800000) : __int_as_float(0xff800000);
#pragma unroll
  for (int j = 0; j < kPartCols; ++j) {
    const int column = part * kPartCols + j;
    if (column < valid_cols)
      result = gemm_reduce_combine(result, values[column]);
  }
#pragma unroll
  for (int offset = 1; offset < kParts; offset <<= 1)
    result = gemm_reduce_combine(result, __shfl_xor_sync(0xffffffffu, result, offset));
  if (part == 0 && row >= first_row && row < end_row) {
    if constexpr (kRowReduceParts)
      *reduce_slot(args, batch, m0 + row, n0) = result;
    else
      gemm_reduce_store(reduce_slot(args, batch, m0 + row, n0), result);
  }
}

// Runs the epilogue stages on the accumulators of one tile. The accumulators
// go through shared memory first, so that each pass walks the tile row by row
// with consecutive threads on consecutive columns (coalesced stores), one
// element at a time (one copy of the epilogue code, few live registers).
// The tile's accumulators are staged in shared memory ([kTileM][kTileStride])
// and every thread has passed a barrier since. It finishes the share of the
// tile of kShareRows rows from first_row and kShareCols columns from
// first_col (the whole tile but with kSplitShares) and writes no other
// part of the tile.
template <int kShareRows = kTileM, int kShareCols = kTileN>
__device__ __forceinline__ void finish_staged_tile(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                   long long batch, long long row_tile, long long m0, long long n0,
                                                   int first_row = 0, int first_col = 0) {
  static_assert(!kEpilogueAlongM || (kShareRows == kTileM && kShareCols == kTileN), "along m: the whole tile");
  float* tile = smem;
  const int valid_rows = static_cast<int>(e.rows - m0 < kTileM ? e.rows - m0 : kTileM);
  const int valid_cols = static_cast<int>(e.cols - n0 < kTileN ? e.cols - n0 : kTileN);
  const int end_row = first_row + kShareRows;
  const int last_row = end_row < valid_rows ? end_row : valid_rows; // rows below it are stored
  const bool staged = kNormGroup > 0 || kStatsGroup > 0;
  // Stage 0; the staged stages keep its values (zeros outside the problem
  // up to the last valid column, along m, or row: the walk stops there, and
  // past it the staged accumulators stay, feeding only groups and rows
  // outside the problem, whose results are never stored).
  const int extent = kEpilogueAlongM ? valid_cols * kTileM : (last_row - first_row) * kShareCols;
#pragma unroll 1
  for (int index = threadIdx.x; index < extent; index += kThreads) {
    const int r = kEpilogueAlongM ? index % kTileM : first_row + index / kShareCols;
    const int c = kEpilogueAlongM ? index / kTileM : first_col + index % kShareCols;
    float* value = tile + r * kTileStride + c; // kTileStride is odd: no bank conflicts either way
    const bool valid = r < valid_rows && c < valid_cols;
    const float v = valid ? epilogue(args, batch, m0 + r, n0 + c, *value) : 0.0f;
    if (staged)
      *value = v;
  }
  if (!staged)
    return;
  __syncthreads();
  if (kStatsGroup > 0) {
    tile_statistics(args, smem, batch, row_tile, n0, e.cols, valid_rows, first_col, first_col + kShareCols);
    return;
  }
  normalize_tile(smem, first_row, end_row);
  __syncthreads();
#pragma unroll 1
  for (int index = threadIdx.x; index < kShareRows * kShareCols; index += kThreads) {
    const int r = kEpilogueAlongM ? index % kTileM : first_row + index / kShareCols;
    const int c = kEpilogueAlongM ? index / kTileM : first_col + index % kShareCols;
    if (r < last_row && c < valid_cols) {
      float* value = tile + r * kTileStride + c;
      const float y = norm_apply(args, batch, m0 + r, n0 + c, *value);
      if (kRowReduce != 0)
        *value = y;
    }
  }
  if (kRowReduce != 0) {
    __syncthreads();
    reduce_tile_rows(args, smem, batch, m0, n0, first_row, last_row, valid_cols);
  }
}

// SIMT: stages a thread's 4x4 micro-tile, then finishes the tile.
__device__ __forceinline__ void finish_tile(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                            long long batch, long long row_tile, long long m0, long long n0,
                                            const float (&acc)[kMicro][kMicro]) {
  const int tx = threadIdx.x % kThreadCols, ty = threadIdx.x / kThreadCols;
#pragma unroll
  for (int i = 0; i < kMicro; ++i)
#pragma unroll
    for (int j = 0; j < kMicro; ++j)
      smem[(ty * kMicro + i) * kTileStride + tx * kMicro + j] = acc[i][j];
  __syncthreads();
  finish_staged_tile(args, smem, e, batch, row_tile, m0, n0);
}

// Where this thread's first accumulator lies in the block (row, column):
// acc[i][j][2h + e] is at (row + 16i + 8h, column + 8j + e). The C layout of
// the tensor cores' fragments: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8,
// 2t + 1), a warp's fragments kWarpM x kWarpN of the block.
__device__ __forceinline__ void fragment_origin(int& row, int& column) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  row = (warp / kWarpsN) * kWarpM + lane / 4;
  column = (warp % kWarpsN) * kWarpN + 2 * (lane % 4);
}

// Tensor cores: stages this thread's accumulator fragments that lie in
// epilogue tile (tm, tn) at their places in the tile ([kTileM][kTileStride]).
__device__ __forceinline__ void stage_tile_tc(float* smem, const float (&acc)[kFragsM][kFragsN][4], int tm, int tn) {
  int row0, col0;
  fragment_origin(row0, col0);
  if (row0 / kTileM != tm) // a warp's rows lie in one tile
    return;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const int column = col0 + j * 8; // a fragment lies in one tile
      if (column / kTileN != tn)
        continue;
      float* at = smem + (row0 % kTileM + i * 16) * kTileStride + column % kTileN;
      at[0] = acc[i][j][0];
      at[1] = acc[i][j][1];
      at[8 * kTileStride] = acc[i][j][2];
      at[8 * kTileStride + 1] = acc[i][j][3];
    }
}

// kColumnNorm: normalizes columns [first_col, first_col + kCols) of the
// staged block (rows one below the other, [kBlockM][kTileStride]) in place
// over their valid_rows rows: a warp per column, two passes (the mean, then
// the squared deviations about it, each summed over the lanes in a fixed
// order); lane 0 hands the column's statistics to column_stats(). Columns
// outside the problem are normalized too but never stored.
template <int kCols>
__device__ __forceinline__ void normalize_columns(const FusegenArgs& args, float* smem, long long batch, long long n0,
                                                  long long cols, int valid_rows, int first_col) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float count = static_cast<float>(valid_rows);
#pragma unroll 1
  for (int column = first_col + warp; column < first_col + kCols; column += kThreads / 32) {
    float* values = smem + column;
    float sum = 0.0f;
    for (int row = lane; row < valid_rows; row += 32)
      sum += values[row * kTileStride];
    const float mean = fusegen_team_sum<32>(sum) / count;
    float squares = 0.0f;
    for (int row = lane; row < valid_rows; row += 32) {
      const float d = values[row * kTileStride] - mean;
      squares = fmaf(d, d, squares);
    }
    const float m2 = fusegen_team_sum<32>(squares);
    // 1/sqrt of the biased variance, as the finalize kernel computes it.
    const float rstd = 1.0f / sqrtf(fmaxf(m2 / count, 0.0f) + kNormEps);
    for (int row = lane; row < valid_rows; row += 32)
      values[row * kTileStride] = (values[row * kTileStride] - mean) * rstd;
    if (lane == 0 && n0 + column < cols)
      column_stats(args, batch, n0 + column, count, mean, m2);
  }
}

// kColumnNorm: finishes columns [first_col, first_col + kCols) of the staged
// block, which holds every row of them (the planner gives such a kernel
// blocks that do): epilogue(), the column norm, norm_apply().
template <int kCols>
__device__ __forceinline__ void finish_column_norm(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                   long long batch, long long m0, long long n0, int first_col) {
  const int valid_rows = static_cast<int>(e.rows - m0 < kBlockM ? e.rows - m0 : kBlockM);
  const int valid_cols = static_cast<int>(e.cols - n0 < kTileN ? e.cols - n0 : kTileN);
#pragma unroll 1
  for (int index = threadIdx.x; index < valid_rows * kCols; index += kThreads) {
    const int r = index / kCols, c = first_col + index % kCols;
    float* value = smem + r * kTileStride + c;
    *value = c < valid_cols ? epilogue(args, batch, m0 + r, n0 + c, *value) : 0.0f;
  }
  __syncthreads();
  normalize_columns<kCols>(args, smem, batch, n0, e.cols, valid_rows, first_col);
  __syncthreads();
#pragma unroll 1
  for (int index = threadIdx.x; index < valid_rows * kCols; index += kThreads) {
    const int r = index / kCols, c = first_col + index % kCols;
    if (c < valid_cols)
      norm_apply(args, batch, m0 + r, n0 + c, smem[r * kTileStride + c]);
  }
}

// Stages the block's accumulators: one epilogue tile, or with kColumnNorm
// every tile of the block one below the other.
__device__ __forceinline__ void stage_block_tc(float* smem, const float (&acc)[kFragsM][kFragsN][4]) {
  if constexpr (kColumnNorm) {
#pragma unroll 1
    for (int tm = 0; tm < kBlockM / kTileM; ++tm)
      stage_tile_tc(smem + tm * kTileM * kTileStride, acc, tm, 0);
  } else {
    stage_tile_tc(smem, acc, 0, 0);
  }
}

// Tensor cores: finishes the block's epilogue tiles one after another.
__device__ __forceinline__ void finish_block_tc(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                long long batch, long long m0, long long n0,
                                                const float (&acc)[kFragsM][kFragsN][4]) {
  if constexpr (kColumnNorm) {
    if (m0 >= e.rows || n0 >= e.cols)
      return;        // the same for every thread
    __syncthreads(); // shared memory may still hold the last k slices or the cluster's sums
    stage_block_tc(smem, acc);
    __syncthreads();
    finish_column_norm<kTileN>(args, smem, e, batch, m0, n0, 0);
  } else {
#pragma unroll 1
    for (int tm = 0; tm < kBlockM / kTileM; ++tm)
#pragma unroll 1
      for (int tn = 0; tn < kBlockN / kTileN; ++tn) {
        const long long tile_m0 = m0 + tm * kTileM, tile_n0 = n0 + tn * kTileN;
        if (tile_m0 >= e.rows || tile_n0 >= e.cols)
          continue;      // the same for every thread
        __syncthreads(); // the previous tile's epilogue may still read shared memory
        stage_tile_tc(smem, acc, tm, tn);
        __syncthreads();
        finish_staged_tile(args, smem, e, batch, tile_m0 / kTileM, tile_m0, tile_n0);
      }
  }
}

// ---- split-K across a thread-block cluster (kSplitK > 1, sm_90) ----
//
// The kSplitK blocks of a cluster multiply disjoint shares of the k slices
// into the same output block. Their accumulators are added over distributed
// shared memory: each block stages its accumulators in its own shared memory
// (element i of thread t at i * kThreads + t: every block has the same
// fragment layout), then each adds a 1/kSplitK share of the elements over the
// ranks in rank order (deterministic) and stores the sums into rank 0's
// staging, in place (an element is read and written by its owner only). Rank 0
// loads the sums back and runs the epilogue alone.
//
// Where the epilogue's rows are independent of each other (kSplitRows: no
// column statistics, walked along rows, one epilogue tile per block), each
// rank instead finishes its own 1/kSplitK of the tile's rows: chain 62
// small's rank 0 spent 3.9 of the kernel's 9.4 us in the epilogue alone
// (bench/NOTES.md v27). With column statistics (kSplitCols: groups of
// columns, all rows) or a column norm, each rank finishes a 1/kSplitK of the
// columns the same way (v28). These shares are pushed, not pulled (v40):
// each thread writes its accumulators with st.async straight into the push
// area of the rank whose share holds them, which counts the bytes on that
// rank's mbarrier; a rank waits there for its share from every rank and adds
// the parts in rank order (the sums of the pull before, in the same order).
// A pull needs a cluster barrier with release semantics between the staging
// and the reads, which the compiler makes a GPU-wide memory barrier: ncu put
// 14% of chain 62 small's warp samples on the two ERRBARs of its pull.

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900 // (the host pass of nvcc checks nothing)
constexpr bool kHaveClusters = true;
#else
constexpr bool kHaveClusters = false;
#endif
static_assert(kSplitK == 1 || kSplitK == 2 || kSplitK == 4 || kSplitK == 8, "kSplitK is 1, 2, 4 or 8");
static_assert(kSplitK == 1 || (kInnerProduct != 0 && kHaveClusters), "split-K needs tensor cores and sm_90");
static_assert(kSplitK == 1 ||
                  (kBlockM * kBlockN % (kSplitK * kThreads) == 0 && kDynamicSharedFloats >= kBlockM * kBlockN),
              "split-K stages the block's accumulators in shared memory");
constexpr bool kSplitOneTile = kSplitK > 1 && !kEpilogueAlongM && kBlockM == kTileM && kBlockN == kTileN;
constexpr bool kSplitRows = kSplitOneTile && kStatsGroup == 0 && !kColumnNorm;
constexpr bool kSplitCols = kSplitOneTile && kStatsGroup > 0 && (kTileN / kSplitK) % kStatsGroup == 0;
// A column norm's block is every row of one tile's columns: each rank
// finishes 1/kSplitK of them.
constexpr bool kSplitColumnNorm = kSplitK > 1 && kColumnNorm;
constexpr bool kSplitShares = kSplitRows || kSplitCols || kSplitColumnNorm;
constexpr int kShareRows = kSplitRows ? kTileM / kSplitK : kSplitColumnNorm ? kBlockM : kTileM; // a rank's share
constexpr int kShareCols = kSplitCols || kSplitColumnNorm ? kTileN / kSplitK : kTileN;
// normalize_tile and reduce_tile_rows skip rows a warp at a time (a warp
// covers 32 / kParts rows), so a rank's rows are whole warps'.
static_assert(!kSplitShares || (kShareRows % (32 / kParts) == 0 && kShareRows * kShareCols % kThreads == 0),
              "a rank's rows must be whole warps' rows");
static_assert(kBlockBegin >= 0 && kBlockEnd >= 0 && (kBlockBegin == 0 || kBlockEnd == 0),
              "a launch is a split tail (kBlockBegin) or leaves one (kBlockEnd), not both");
static_assert(kBlockBegin == 0 || kInnerProduct != 0, "a split tail runs on tensor cores");

__device__ __forceinline__ unsigned int cluster_rank() {
  unsigned int rank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kSplitK > 1)
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
  return rank;
}

// A cluster barrier in two halves, to do work between this thread's
// arrival and its wait for everyone else's: shared-memory writes before a
// thread arrives are visible to the whole cluster after its wait.
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// Every thread of the cluster arrives; shared-memory writes before it are
// visible to the whole cluster after it.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// The shared::cluster address of `pointer` (this block's shared memory) in
// the block of cluster rank `rank`.
__device__ __forceinline__ unsigned int cluster_address(const float* pointer, unsigned int rank) {
  unsigned int address = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(address) : "r"(gemm_shared_address(pointer)), "r"(rank));
#endif
  return address;
}

__device__ __forceinline__ float cluster_load(unsigned int address) {
  float value = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(address) : "memory");
#endif
  return value;
}

__device__ __forceinline__ void cluster_store(unsigned int address, float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(address), "f"(value) : "memory");
#endif
}

// The arrival half of a cluster barrier without release semantics (no
// memory barrier): for ordering that needs none.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}

constexpr int kShareFloats = kShareRows * kShareCols;
// Rank q's part of this rank's share at [q * kShareFloats]: element i of a
// share is row i / kShareCols, column i % kShareCols of it.
__shared__ __align__(16) float gemm_push_area[kSplitShares ? kSplitK * kShareFloats : 1];
__shared__ unsigned long long gemm_push_barrier; // counts the bytes of the push area's phase

// Arms the push barrier for the next share: its phase completes once every
// rank's part has landed.
__device__ __forceinline__ void arm_push_barrier() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1; }" ::"r"(
                   gemm_shared_address(&gemm_push_barrier)),
               "r"(static_cast<unsigned int>(kSplitK * kShareFloats * 4))
               : "memory");
#endif
}

// At the kernel's start: the push barrier initialized and armed, and this
// thread's arrival at the cluster barrier that the first push waits for (no
// rank may signal a barrier before its owner initialized it).
__device__ __forceinline__ void start_split_push() {
  if (threadIdx.x == 0) {
    gemm_barrier_init(&gemm_push_barrier, 1);
    arm_push_barrier();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
  }
  cluster_arrive_relaxed();
}

// Writes two adjacent floats into the push area of rank `owner` (at the
// local address `at`, mapped) and counts them on its push barrier.
__device__ __forceinline__ void push_pair(float* at, unsigned int owner, float x, float y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(
                   cluster_address(at, owner)),
               "f"(x), "f"(y), "r"(cluster_address(reinterpret_cast<const float*>(&gemm_push_barrier), owner))
               : "memory");
#endif
}

// This thread's accumulators, each pair to the rank whose share holds it
// (a column norm's rows are the block's).
__device__ __forceinline__ void push_split_shares(const float (&acc)[kFragsM][kFragsN][4], unsigned int rank) {
  int row0, col0;
  fragment_origin(row0, col0);
  float* part = gemm_push_area + rank * kShareFloats;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + i * 16 + h * 8, col = col0 + j * 8;
        const unsigned int owner = static_cast<unsigned int>(kSplitRows ? row / kShareRows : col / kShareCols);
        const int at = kSplitRows ? (row % kShareRows) * kShareCols + col : row * kShareCols + col % kShareCols;
        push_pair(part + at, owner, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
}

// f(accumulator, its staging offset) for each of this thread's accumulators:
// element i of thread t is staged at i * kThreads + t.
template <typename F>
__device__ __forceinline__ void for_each_accumulator(float (&acc)[kFragsM][kFragsN][4], F f) {
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        f(acc[i][j][r], ((i * kFragsN + j) * 4 + r) * kThreads + static_cast<int>(threadIdx.x));
}

// Adds the cluster's accumulators; true (and the sums in acc) in rank 0.
// Shared memory is free on entry (accumulate_* end with a barrier).
__device__ __forceinline__ bool reduce_split_k(float* smem, float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kPerThread = kFragsM * kFragsN * 4;
  constexpr int kShare = kPerThread * kThreads / kSplitK; // elements each rank adds
  const unsigned int rank = cluster_rank();
  for_each_accumulator(acc, [&](float& value, int at) { smem[at] = value; });
  cluster_sync(); // every rank's accumulators are staged
#pragma unroll
  for (int v = 0; v < kShare / kThreads; ++v) {
    const float* element = smem + rank * kShare + v * kThreads + threadIdx.x;
    float sum = cluster_load(cluster_address(element, 0));
#pragma unroll
    for (unsigned int q = 1; q < kSplitK; ++q)
      sum += cluster_load(cluster_address(element, q));
    cluster_store(cluster_address(element, 0), sum);
  }
  cluster_sync(); // rank 0 holds the sums; no rank reads another's shared memory after this
  if (rank != 0)
    return false;
  for_each_accumulator(acc, [&](float& value, int at) { value = smem[at]; });
  return true;
}

// kSplitShares: the cluster's sums of this rank's share of the block (its
// rows, or its columns), pushed by every rank, and their epilogue. Shared
// memory is free on entry. The cluster barrier's wait pairs with the arrival
// at the kernel's start (every push barrier is initialized) or at the end of
// the previous block (every rank has read its push area); the arrival here
// follows this rank's reads of its push area, whose values are stored
// before it, so it needs no release. gemm_main waits for the last arrival.
__device__ __forceinline__ void finish_split_share(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                   long long batch, long long m0, long long n0,
                                                   const float (&acc)[kFragsM][kFragsN][4], unsigned int& pushes) {
  const int rank = static_cast<int>(cluster_rank());
  const int first_row = kSplitRows ? rank * kShareRows : 0;
  const int first_col = kSplitCols || kSplitColumnNorm ? rank * kShareCols : 0;
  cluster_wait();
  push_split_shares(acc, static_cast<unsigned int>(rank));
  // The other ranks' stores are released at the cluster's scope by their
  // byte counts: acquired at the same scope.
  gemm_barrier_wait<true>(&gemm_push_barrier, pushes++ & 1u);
#pragma unroll
  for (int v = 0; v < kShareFloats / kThreads; ++v) {
    const int index = v * kThreads + static_cast<int>(threadIdx.x);
    float sum = gemm_push_area[index];
#pragma unroll
    for (int q = 1; q < kSplitK; ++q)
      sum += gemm_push_area[q * kShareFloats + index];
    smem[(first_row + index / kShareCols) * kTileStride + first_col + index % kShareCols] = sum;
  }
  if (threadIdx.x == 0)
    arm_push_barrier(); // the phase cannot complete before this thread's arrival
  cluster_arrive_relaxed();
  __syncthreads();
  if (m0 < e.rows && n0 < e.cols) { // the same for every rank
    if constexpr (kColumnNorm)
      finish_column_norm<kShareCols>(args, smem, e, batch, m0, n0, first_col);
    else
      finish_staged_tile<kShareRows, kShareCols>(args, smem, e, batch, m0 / kTileM, m0, n0, first_row, first_col);
  }
}

// One output block on tensor cores: its products (this rank's share with
// split-K), the cluster's sum, and the epilogue in the rank that holds it
// (each rank its share with kSplitShares).
__device__ __forceinline__ void tensor_core_block(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                  long long batch, long long m0, long long n0, unsigned int& pushes) {
  float acc[kFragsM][kFragsN][4] = {};
  if constexpr (kWgmma)
    accumulate_block_wgmma(args, smem, e, batch, m0, n0, acc);
  else if constexpr (kAsync)
    accumulate_block_async(args, smem, e, batch, m0, n0, acc);
  else
    accumulate_block_tc(args, smem, e, batch, m0, n0, acc);
  if constexpr (kWaitLate)
    fusegen_grid_wait();
  if constexpr (kSplitShares) {
    finish_split_share(args, smem, e, batch, m0, n0, acc, pushes);
    return;
  }
  if constexpr (kSplitK > 1)
    if (!reduce_split_k(smem, acc))
      return; // the same for the whole block: rank 0 finishes the output block
  finish_block_tc(args, smem, e, batch, m0, n0, acc);
}

// The output block (row-major index) that block s of a rastered launch
// takes: groups of kRasterRows row blocks (the last one shorter), each
// walked column by column, so the 132 blocks of an H100 wave span about
// 132 / kRasterRows column blocks of B instead of all of them.
__device__ __forceinline__ long long raster_block(long long s, long long row_blocks, long long column_blocks) {
  const long long group_blocks = kRasterRows * column_blocks;
  const long long group = s / group_blocks, first_row = group * kRasterRows;
  const long long rows = min(static_cast<long long>(kRasterRows), row_blocks - first_row);
  const long long within = s - group * group_blocks;
  return (first_row + within % rows) * column_blocks + within / rows;
}

// The launch's output blocks for this block (a cluster's with split-K).
__device__ __forceinline__ void gemm_blocks(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                            unsigned int& pushes) {
  const long long batches = gemm_batches(args);
  const long long row_blocks = (e.rows + kBlockM - 1) / kBlockM;
  // grid.x covers the column blocks exactly (up to 2^31 - 1 of them), kSplitK
  // blocks (a cluster) each; batches and row blocks beyond gridDim.z /
  // gridDim.y (65535) are looped over. A third, innermost loop over columns
  // costs about 60 registers.
  const long long column_blocks = (e.cols + kBlockN - 1) / kBlockN;
  // A split tail exists only with one batch and every row block in its main
  // launch's grid.y (EmitGemm's tail_split), so it rasters as that launch does.
  if constexpr (kBlockBegin > 0) { // a split tail: one output block per cluster
    long long block = kBlockBegin + static_cast<long long>(blockIdx.x / kSplitK);
    if (block < row_blocks * column_blocks) {
      if constexpr (kRasterRows > 0)
        block = raster_block(block, row_blocks, column_blocks);
      tensor_core_block(args, smem, e, 0, (block / column_blocks) * kBlockM, (block % column_blocks) * kBlockN, pushes);
    }
    return;
  }
  const long long column_block = blockIdx.x / kSplitK;
  if (column_block * kBlockN >= e.cols)
    return;
  const bool rastered = kRasterRows > 0 && batches == 1 && row_blocks <= gridDim.y;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z)
    for (long long row_block = blockIdx.y; row_block < row_blocks; row_block += gridDim.y) {
      long long block = row_block * column_blocks + column_block; // the launch's block s
      if (kBlockEnd > 0 && block >= kBlockEnd)
        continue; // the split tail's
      if (rastered)
        block = raster_block(block, row_blocks, column_blocks);
      const long long m0 = (block / column_blocks) * kBlockM, n0 = (block % column_blocks) * kBlockN;
      __syncthreads(); // the previous block's epilogue may still read shared memory
      if constexpr (kInnerProduct == 0) {
        float acc[kMicro][kMicro] = {};
        accumulate_tile(args, smem, e, batch, m0, n0, acc);
        if constexpr (kWaitLate)
          fusegen_grid_wait();
        finish_tile(args, smem, e, batch, m0 / kBlockM, m0, n0, acc);
      } else {
        tensor_core_block(args, smem, e, batch, m0, n0, pushes);
      }
    }
}

__device__ __forceinline__ void gemm_main(const FusegenArgs& args) {
  // SIMT: static shared memory; tensor cores: the launch's dynamic shared
  // memory (more than the static 48 KB limit).
  __shared__ __align__(16) float static_smem[kInnerProduct == 0 ? kSharedFloats : 1];
  extern __shared__ __align__(16) float fusegen_gemm_dynamic_smem[];
  float* smem = kInnerProduct == 0 ? static_smem : fusegen_gemm_dynamic_smem;
  if constexpr (kWgmma) // the 128-byte swizzle repeats every 1024 bytes
    smem += (1024 - gemm_shared_address(smem) % 1024) % 1024 / 4;
  if constexpr (kSplitShares)
    start_split_push();
  fill_depth_table(args);
  GemmExtents e{gemm_rows(args), gemm_cols(args), gemm_depth(args), 0, 0};
  e.slices = (e.depth + kTileK - 1) / kTileK;
  if constexpr (kSplitK > 1) { // this rank's share of the slices
    const long long share = (e.slices + kSplitK - 1) / kSplitK;
    e.first_slice = min(e.slices, share * cluster_rank());
    e.slices = min(e.slices - e.first_slice, share);
  }
  unsigned int pushes = 0; // shares this block pushed: its push barrier's phase
  gemm_blocks(args, smem, e, pushes);
  if constexpr (kSplitShares)
    cluster_wait(); // for the last arrival: no rank signals this block's barrier any more
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSM) fusegen_gemm(const FusegenArgs args) { gemm_main(args); }
}
