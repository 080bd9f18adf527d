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
//   1  3xTF32 on tensor cores (strict precision): every fp32 operand x is split
//      into big = tf32(x) (rounded to nearest) and small = tf32(x - big); per
//      k step acc += small_a*big_b + big_a*small_b + big_a*big_b with
//      mma.sync m16n8k8, accumulated in fp32 registers. The dropped
//      small*small term is below 2^-22 relative, so products and sums keep
//      fp32 accuracy.
//   2  TF32 on tensor cores (tf32 precision): acc += big_a*big_b only.
// Tensor-core blocks are 64x64, 128x64 or 128x128; eight warps each own a
// warp tile of m16n8 fragments.
// The k loop stages kTileK-deep slices of A and B in shared memory: copied
// with cp.async kStages slices ahead where both operands are 16-byte vectors
// along k (and multiplied with wgmma on sm_90a, 128-row blocks), else double
// buffered through registers, the next slice loaded while the current one is
// multiplied. Grid: x over column blocks (exactly), y over
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
// The hook contract is in gemm/hooks.cuh.

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

// The pieces, one concern each; fusegen-template-tool embeds them here (one
// translation unit for NVRTC), nvcc finds them beside this file.
#include "gemm/geometry.h"               // shared-memory layout (also the generator's)
#include "gemm/hooks.cuh"                // the hook contract and its defaults
#include "gemm/config.cuh"               // fixed geometry and checks of the hooks
#include "gemm/loaders.cuh"              // operand addressing, register and cp.async loads
#include "gemm/mainloop_mma_sync.cuh"    // mma.sync main loops (sm_80 and later)
#include "gemm/barriers.cuh"             // mbarriers (sm_90)
#include "gemm/mainloop_wgmma.cuh"       // wgmma main loops (sm_90a)
#include "gemm/mainloop_fp16x3.cuh"      // FP16x3 products on wgmma (sm_90a)
#include "gemm/epilogue_stats.cuh"       // partial column statistics of a tile
#include "gemm/epilogue_row_norm.cuh"    // row norm and row reduction of a tile
#include "gemm/epilogue_tile.cuh"        // staging a tile, the hooks' stages, stores
#include "gemm/epilogue_column_norm.cuh" // column norm over a block's rows
#include "gemm/epilogue_block.cuh"       // a block's epilogue, tile by tile
#include "gemm/split_k.cuh"              // split-K across a thread-block cluster

// ---- the block loop and the entry ----

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
      tensor_core_block(args, smem, e, batch, m0, n0, pushes);
      if constexpr (kStatsFinalize)
        fusegen_finalize_sample_stats<kThreads>(
            stats_counters(args), batch, batches, e.cols, (e.rows + kTileM - 1) / kTileM,
            static_cast<unsigned int>(row_blocks * column_blocks), reinterpret_cast<FusegenWelford*>(smem),
            [&](long long sample, long long tile, long long n) { return stats_slot(args, sample, tile, n); },
            [&](long long sample, long long n) { return sample_stats_slot(args, sample, n); },
            [&](long long n, FusegenWelford total) { finalize_column(args, n, total); });
    }
}

__device__ __forceinline__ void gemm_main(const FusegenArgs& args) {
  // The launch's dynamic shared memory (more than the static 48 KB limit).
  extern __shared__ __align__(16) float fusegen_gemm_dynamic_smem[];
  float* smem = fusegen_gemm_dynamic_smem;
  if constexpr (kWgmma) // the 128-byte swizzle repeats every 1024 bytes
    smem += (1024 - fusegen_shared_address(smem) % 1024) % 1024 / 4;
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
    fusegen_cluster_wait(); // for the last arrival: no rank signals this block's barrier any more
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSM) fusegen_gemm(const FusegenArgs args) { gemm_main(args); }
}
