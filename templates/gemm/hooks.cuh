// templates/gemm/hooks.cuh: the points the generator fills in.
#pragma once

// The GEMM template's hooks (checked by fusegen-template-tool against
// compiler/include/fusegen/hooks/GemmHooks.h), with defaults that ship: a
// linear's configuration (see the end of the contract).
//
//   "tile_m"        constexpr int kTileM       rows of an epilogue tile (64)
//   "tile_n"        constexpr int kTileN       columns of an epilogue tile (64)
//   "block_m"       constexpr int kBlockM      rows of a block (64 or 128)
//   "block_n"       constexpr int kBlockN      columns of a block (64 or 128, or 256
//                                  for TF32 on wgmma)
//   "tile_k"        constexpr int kTileK       depth of a shared-memory slice (8, 16 or 32)
//   "threads"       constexpr int kThreads     threads per block (256)
//   "inner_product" constexpr int kInnerProduct  1 3xTF32, 2 TF32, 3 FP16x3
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
//                                  column (kBlockN == kTileN)
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
//                                  (on the cp.async path, kAsync, b_address
//                                  and b_small_address, and a_address unless
//                                  kAAffine is false, are affine in their
//                                  coordinates: copy_slice_async() steps from
//                                  one row's address to the next)
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
//   "a_affine"      constexpr bool kAAffine  a_address() is affine in m for a
//                                  fixed k (the cp.async path steps from one
//                                  row's address to the next); false: every
//                                  copy computes its own (a convolution's
//                                  gathered rows over a channels-last input)
//   "split_k"       constexpr int kSplitK   1, or 2, 4 or 8 (sm_90):
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
//                                  instead of split in shared memory; FP16x3
//                                  (kInnerProduct 3): B comes as fp16 hi and
//                                  lo halves (gemm/mainloop_fp16x3.cuh)
//   "b_small_address" const float* b_small_address(args, b_base, k, n)  where
//                                  B element (k, n)'s small part is (kBSplit),
//                                  with B's strides (copy_slice_async() steps
//                                  both by B's row step); FP16x3: the 4-byte
//                                  word at the same place in the halves'
//                                  buffer
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
//                                  path (vector operands along k)
//   "shared_floats" constexpr int kDynamicSharedFloats  the launch's dynamic
//                                  shared memory in floats: at least
//                                  gemm_layout::shared_floats() (gemm/geometry.h)
//   "epilogue_stores" constexpr int kEpilogueStores  values epilogue() stores
//                                  per element
//   "epilogue"      float epilogue(args, batch, m, n, acc, stores)  stage 0 for
//                                  a valid element: puts each value it stores,
//                                  with its address, in stores (the template
//                                  writes them after running the hook on more
//                                  elements, so that their loads are not queued
//                                  behind these stores: helpers.cu
//                                  FusegenStores); returns the value the next
//                                  stage (norm or statistics) reads. No other
//                                  effects: the template also calls it on a
//                                  stand-in element and drops those stores
//   "norm_stores"   constexpr int kNormStores  values norm_apply() stores per element
//   "norm_apply"    float norm_apply(args, batch, m, n, normalized, stores)
//                                  stage 1 for a valid element given (x - mean)
//                                  * rstd: affine params, pointwise ops, its
//                                  stores deferred as epilogue()'s; returns the
//                                  value the row reduction reads
//   "stats_slot"    float* stats_slot(args, batch, row_tile, n)  the (count, mean,
//                                  M2) triple of the statistics group whose
//                                  first column is n, for the epilogue tile
//                                  (64 rows) row_tile
//   "reduce_slot"   float* reduce_slot(args, batch, m, n)  the row reduction's
//                                  output element of row m for the tile whose
//                                  first column is n
//   "stats_finalize" constexpr bool kStatsFinalize  the kernel also finalizes
//                                  the statistics (a batch_norm after a
//                                  convolution, kStatsGroup 1): the last block
//                                  of each sample merges its tiles' triples
//                                  into sample_stats_slot(), the last sample's
//                                  merges those (helpers.cu
//                                  fusegen_finalize_sample_stats)
//   "stats_counters" unsigned int* stats_counters(args)  batches + 1 arrival
//                                  counters, zero between launches
//   "sample_stats_slot" float* sample_stats_slot(args, batch, n)  the merged
//                                  triple of column n over sample batch
//   "finalize_column" void finalize_column(args, n, total)  writes column n's
//                                  finalized statistics (and running stats)
//   "column_stats"  void column_stats(args, batch, n, count, mean, m2)  the
//                                  column norm's statistics of column n over
//                                  count rows (running stats updates)
//   "entry"         the __global__ kernel; the generator renames it
//
// Defaults below: a configuration the generator ships, a strict (3xTF32)
// linear on the cp.async path in 128x64 blocks (wgmma on sm_90a, mma.sync
// elsewhere): C[M, N] = A[M, K] * B[N, K]^T with A = buf[0], B = buf[1] (the
// weight), C = buf[2], M, N, K = dim[0], dim[1], dim[2] and K a multiple of 4.
// gemm.cu compiles alone with nvcc and NVRTC (helpers.cu beside it).

FUSEGEN_HOOK("tile_m") constexpr int kTileM = 64;

FUSEGEN_HOOK("tile_n") constexpr int kTileN = 64;

FUSEGEN_HOOK("block_m") constexpr int kBlockM = 128;

FUSEGEN_HOOK("block_n") constexpr int kBlockN = 64;

FUSEGEN_HOOK("tile_k") constexpr int kTileK = 32;

FUSEGEN_HOOK("threads") constexpr int kThreads = 256;

FUSEGEN_HOOK("inner_product") constexpr int kInnerProduct = 1;

FUSEGEN_HOOK("a_along_k") constexpr bool kLoadAAlongK = true;

FUSEGEN_HOOK("b_along_k") constexpr bool kLoadBAlongK = true;

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
  return batch * args.dim[1] * args.dim[2];
}

FUSEGEN_HOOK("a_address")
__device__ __forceinline__ const float* a_address(const FusegenArgs& args, long long a_base, long long m,
                                                  long long k) {
  return args.buf[0] + a_base + m * args.dim[2] + k;
}

FUSEGEN_HOOK("b_address")
__device__ __forceinline__ const float* b_address(const FusegenArgs& args, long long b_base, long long k,
                                                  long long n) {
  return args.buf[1] + b_base + n * args.dim[2] + k;
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

FUSEGEN_HOOK("a_vector") constexpr bool kAVector = true;

FUSEGEN_HOOK("b_vector") constexpr bool kBVector = true;

FUSEGEN_HOOK("a_affine") constexpr bool kAAffine = true;

FUSEGEN_HOOK("shared_floats")
constexpr int kDynamicSharedFloats = gemm_layout::shared_floats({1, 128, 64, 32, 4, 1, true, false, false});

FUSEGEN_HOOK("stages") constexpr int kStages = 4;

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

FUSEGEN_HOOK("raster_rows") constexpr int kRasterRows = 16;

FUSEGEN_HOOK("wait_late") constexpr bool kWaitLate = false;

FUSEGEN_HOOK("epilogue_stores") constexpr int kEpilogueStores = 1;

struct EpilogueStores : FusegenStores<kEpilogueStores> {};

FUSEGEN_HOOK("epilogue")
__device__ __forceinline__ float epilogue(const FusegenArgs& args, long long batch, long long m, long long n, float acc,
                                          EpilogueStores& stores) {
  stores.at[0] = args.buf[2] + (batch * args.dim[0] + m) * args.dim[1] + n;
  stores.value[0] = acc;
  return acc;
}

FUSEGEN_HOOK("norm_stores") constexpr int kNormStores = 0;

struct NormStores : FusegenStores<kNormStores> {};

FUSEGEN_HOOK("norm_apply")
__device__ __forceinline__ float norm_apply(const FusegenArgs& args, long long batch, long long m, long long n,
                                            float normalized, NormStores& stores) {
  (void)args;
  (void)batch;
  (void)m;
  (void)n;
  (void)stores;
  return normalized;
}

FUSEGEN_HOOK("stats_slot")
__device__ __forceinline__ float* stats_slot(const FusegenArgs& args, long long batch, long long row_tile,
                                             long long n) {
  (void)batch;
  return args.buf[3] + (row_tile * args.dim[1] + n) * 3;
}

FUSEGEN_HOOK("stats_finalize") constexpr bool kStatsFinalize = false;

FUSEGEN_HOOK("stats_counters")
__device__ __forceinline__ unsigned int* stats_counters(const FusegenArgs& args) {
  return reinterpret_cast<unsigned int*>(args.buf[5]);
}

FUSEGEN_HOOK("sample_stats_slot")
__device__ __forceinline__ float* sample_stats_slot(const FusegenArgs& args, long long batch, long long n) {
  return args.buf[6] + (batch * args.dim[1] + n) * 3;
}

FUSEGEN_HOOK("finalize_column")
__device__ __forceinline__ void finalize_column(const FusegenArgs& args, long long n, FusegenWelford total) {
  args.buf[7][2 * n] = total.mean;
  args.buf[7][2 * n + 1] = 1.0f / sqrtf(total.m2 / total.count + 1e-5f);
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
