// templates/gemm/epilogue_block.cuh: a block's epilogue, tile by tile.
#pragma once

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
