// templates/gemm/epilogue_stats.cuh: a tile's partial statistics per group
// of columns (kStatsGroup), combined across tiles by a later kernel.
#pragma once

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
