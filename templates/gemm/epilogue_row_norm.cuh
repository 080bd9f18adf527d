// templates/gemm/epilogue_row_norm.cuh: the fused row norm (kNormGroup) and
// the row reduction after it (kRowReduce).
#pragma once

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
