// templates/gemm/epilogue_column_norm.cuh: the fused column norm
// (kColumnNorm, a training batch_norm) over every row of a block.
#pragma once

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
  // The stand-in for elements outside: (0, 0), in the problem.
  for_each_chunked<EpilogueStores>(valid_rows * kCols, [&](int index, bool inside, EpilogueStores& stores) {
    const int r = index / kCols, c = first_col + index % kCols;
    const bool valid = inside && c < valid_cols;
    const int hr = valid ? r : 0, hc = valid ? c : 0;
    const float v = epilogue(args, batch, m0 + hr, n0 + hc, smem[hr * kTileStride + hc], stores);
    if (!valid)
      stores.clear();
    if (inside)
      smem[r * kTileStride + c] = valid ? v : 0.0f;
  });
  __syncthreads();
  normalize_columns<kCols>(args, smem, batch, n0, e.cols, valid_rows, first_col);
  __syncthreads();
  for_each_chunked<NormStores>(valid_rows * kCols, [&](int index, bool inside, NormStores& stores) {
    const int r = index / kCols, c = first_col + index % kCols;
    const bool valid = inside && c < valid_cols;
    const int hr = valid ? r : 0, hc = valid ? c : 0;
    norm_apply(args, batch, m0 + hr, n0 + hc, smem[hr * kTileStride + hc], stores);
    if (!valid)
      stores.clear();
  });
}
