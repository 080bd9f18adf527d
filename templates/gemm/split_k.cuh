// templates/gemm/split_k.cuh: split-K across a thread-block cluster
// (kSplitK > 1, sm_90).
#pragma once

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
static_assert(kSplitK == 1 || kHaveClusters, "split-K needs sm_90");
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

__device__ __forceinline__ unsigned int cluster_rank() {
  if constexpr (kSplitK > 1)
    return fusegen_cluster_rank();
  return 0;
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
                   fusegen_shared_address(&gemm_push_barrier)),
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
                   fusegen_cluster_address(at, owner)),
               "f"(x), "f"(y), "r"(fusegen_cluster_address(&gemm_push_barrier, owner))
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
  fusegen_cluster_sync(); // every rank's accumulators are staged
#pragma unroll
  for (int v = 0; v < kShare / kThreads; ++v) {
    const float* element = smem + rank * kShare + v * kThreads + threadIdx.x;
    fusegen_cluster_store(fusegen_cluster_address(element, 0), fusegen_cluster_sum<kSplitK>(element));
  }
  fusegen_cluster_sync(); // rank 0 holds the sums; no rank reads another's shared memory after this
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
  fusegen_cluster_wait();
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
