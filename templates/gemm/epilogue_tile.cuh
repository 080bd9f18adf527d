// templates/gemm/epilogue_tile.cuh: a staged tile through the hooks'
// stages (epilogue(), statistics or row norm, norm_apply()) and its stores,
// and staging the tensor cores' accumulators.
#pragma once

// Elements a thread runs a stage hook on before it writes their stores.
constexpr int kEpilogueChunk = 4;

// Calls visit(index, inside, stores) for this thread's indices (threadIdx.x,
// + kThreads, ...), kEpilogueChunk at a time: the chunk's hook calls first,
// so that their parameter loads are in flight together, then the chunk's
// stores (helpers.cu FusegenStores; bench/NOTES.md v51). inside: index <
// extent. A visit runs its hook on every index, a valid stand-in element
// where its own is not, and clears that call's stores: straight-line code,
// which the compiler schedules across elements (a branch per element kept
// each element's loads behind the one before's). visit writes no global
// memory itself; shared memory it may.
template <class Stores, class Visit>
__device__ __forceinline__ void for_each_chunked(int extent, Visit visit) {
#pragma unroll 1
  for (int base = threadIdx.x; base < extent; base += kEpilogueChunk * kThreads) {
    Stores stores[kEpilogueChunk];
#pragma unroll
    for (int u = 0; u < kEpilogueChunk; ++u)
      visit(base + u * kThreads, base + u * kThreads < extent, stores[u]);
#pragma unroll
    for (int u = 0; u < kEpilogueChunk; ++u)
      stores[u].write();
  }
}

// Runs stage(r, c, staged value, stores) on this thread's elements of a
// tile share (index -> (r, c) along m or along rows of kShareCols, as the
// stages walk it), kEpilogueChunk at a time, and keep(r, c, inside, valid,
// result) after each. Elements outside rows < row_end or columns <
// valid_cols run the stage on the stand-in (first_row, 0), which must be in
// the problem, and their stores are dropped.
template <class Stores, int kShareCols, class Stage, class Keep>
__device__ __forceinline__ void walk_share(int extent, int first_row, int first_col, int row_end, int valid_cols,
                                           Stage stage, Keep keep, const float* tile) {
  for_each_chunked<Stores>(extent, [&](int index, bool inside, Stores& stores) {
    const int r = kEpilogueAlongM ? index % kTileM : first_row + index / kShareCols;
    const int c = kEpilogueAlongM ? index / kTileM : first_col + index % kShareCols;
    const bool valid = inside && r < row_end && c < valid_cols;
    const int hr = valid ? r : first_row, hc = valid ? c : 0;
    const float result = stage(hr, hc, tile[hr * kTileStride + hc], stores); // odd stride: no bank conflicts
    if (!valid)
      stores.clear();
    keep(r, c, inside, valid, result);
  });
}

// Runs the epilogue stages on the accumulators of one tile. The accumulators
// go through shared memory first, so that each pass walks the tile row by row
// with consecutive threads on consecutive columns (coalesced stores), a few
// elements at a time (for_each_chunked).
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
  walk_share<EpilogueStores, kShareCols>(
      extent, first_row, first_col, last_row, valid_cols,
      [&](int r, int c, float value, EpilogueStores& stores) {
        return epilogue(args, batch, m0 + r, n0 + c, value, stores);
      },
      [&](int r, int c, bool inside, bool valid, float v) {
        if (staged && inside)
          tile[r * kTileStride + c] = valid ? v : 0.0f;
      },
      tile);
  if (!staged)
    return;
  __syncthreads();
  if (kStatsGroup > 0) {
    tile_statistics(args, smem, batch, row_tile, n0, e.cols, valid_rows, first_col, first_col + kShareCols);
    return;
  }
  normalize_tile(smem, first_row, end_row);
  __syncthreads();
  if (first_row < last_row) // else the stand-in is outside
    walk_share<NormStores, kShareCols>(
        kShareRows * kShareCols, first_row, first_col, last_row, valid_cols,
        [&](int r, int c, float value, NormStores& stores) {
          return norm_apply(args, batch, m0 + r, n0 + c, value, stores);
        },
        [&](int r, int c, bool, bool valid, float y) {
          if (kRowReduce != 0 && valid)
            tile[r * kTileStride + c] = y;
        },
        tile);
  if (kRowReduce != 0) {
    __syncthreads();
    reduce_tile_rows(args, smem, batch, m0, n0, first_row, last_row, valid_cols);
  }
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
