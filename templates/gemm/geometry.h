// templates/gemm/geometry.h: the GEMM template's shared-memory layout, in
// floats, written once. Plain C++17 constexpr (no CUDA), used by the template
// (gemm/config.cuh lays shared memory out with it and checks the launch's
// kDynamicSharedFloats against it) and by the generator
// (compiler/src/codegen/EmitGemm.cpp sizes the launch with shared_floats()).
#pragma once

namespace gemm_layout {

constexpr int kTile = 64;     // rows and columns of an epilogue tile
constexpr int kThreads = 256; // threads of a block
// Floats after each row of a register-staged slice (As[k][m], Bs[k][n]): a
// fragment load's lanes (4 rows k x 8 columns) then hit 32 different banks.
constexpr int kStagedPad = 8;
// Floats after each row of a cp.async slice for mma.sync (As[m][k],
// Bs[n][k]): rows stay 16-byte aligned and a fragment load's lanes (8 rows x
// 4 columns) hit 32 banks. wgmma reads unpadded 128-byte rows (swizzled).
constexpr int kAsyncPad = 4;
// wgmma: slack to align the slices to the 128-byte swizzle's 1024 bytes.
constexpr int kWgmmaAlignFloats = 256;

constexpr int max_of(int a, int b) { return a > b ? a : b; }

// The epilogue: the staged tile ([tile_m][tile_n + 1]), a tile_n-float
// scratch row per part of threads / tile_n threads, and one more row.
constexpr int tile_stride(int tile_n) { return tile_n + 1; }
constexpr int epilogue_floats(int tile_m, int tile_n, int threads) {
  return tile_m * tile_stride(tile_n) + (threads / tile_n) * tile_n + tile_n;
}
// A column norm stages the block's tiles one below the other (every row).
constexpr int column_norm_floats(int block_m, int tile_n) { return block_m * tile_stride(tile_n); }

// One register-staged k slice of A ([tile_k][block_m + pad]) and B.
constexpr int staged_slice_floats(int block_m, int block_n, int tile_k) {
  return tile_k * ((block_m + kStagedPad) + (block_n + kStagedPad));
}

// One stage of the cp.async ring: A's and B's rows (and B's small parts,
// copied like B, when the pass before the kernel split B).
constexpr int async_row_stride(bool wgmma, int tile_k) { return wgmma ? tile_k : tile_k + kAsyncPad; }
constexpr bool copies_small_b(bool wgmma, int inner_product, bool b_split) {
  return wgmma && inner_product == 1 && b_split;
}
constexpr int async_slice_floats(bool wgmma, int inner_product, bool b_split, int block_m, int block_n, int tile_k) {
  return (block_m + block_n + (copies_small_b(wgmma, inner_product, b_split) ? block_n : 0)) *
         async_row_stride(wgmma, tile_k);
}
// wgmma with 3xTF32 splitting B in shared memory: two slices' small parts
// of B (A is split in registers). FP16x3 keeps them for its fallback.
constexpr int small_b_floats(bool wgmma, int inner_product, bool b_split, int block_n, int tile_k) {
  const bool splits_here = (inner_product == 1 && !b_split) || inner_product == 3;
  return wgmma && splits_here ? 2 * block_n * async_row_stride(wgmma, tile_k) : 0;
}
// The whole cp.async ring, before the epilogue reuses it.
constexpr int async_floats(bool wgmma, int inner_product, bool b_split, int block_m, int block_n, int tile_k,
                           int stages) {
  return stages * async_slice_floats(wgmma, inner_product, b_split, block_m, block_n, tile_k) +
         small_b_floats(wgmma, inner_product, b_split, block_n, tile_k) + (wgmma ? kWgmmaAlignFloats : 0);
}

// Split-K stages the block's accumulators for the cluster's sum.
constexpr int split_k_floats(int split_k, int block_m, int block_n) { return split_k > 1 ? block_m * block_n : 0; }

// A kernel's configuration, as its hooks set it.
struct SharedConfig {
  int inner_product; // 1 3xTF32, 2 TF32, 3 FP16x3
  int block_m, block_n, tile_k, stages, split_k;
  bool async;        // the cp.async path (both operands vectors along k)
  bool b_split;      // B's small parts copied with B (wgmma)
  bool column_norm;  // the block's rows staged together
};

// The launch's dynamic shared memory (kDynamicSharedFloats): the slices in
// flight or the epilogue's staging, whichever is larger. On the cp.async
// path one source serves mma.sync (sm_80, sm_90) and wgmma (sm_90a, 128-row
// blocks), so it gets the larger of both.
constexpr int shared_floats(const SharedConfig& c) {
  const int epilogue =
      max_of(epilogue_floats(kTile, kTile, kThreads), c.column_norm ? column_norm_floats(c.block_m, kTile) : 0);
  const int split = split_k_floats(c.split_k, c.block_m, c.block_n);
  if (!c.async)
    return max_of(max_of(2 * staged_slice_floats(c.block_m, c.block_n, c.tile_k), epilogue), split);
  const int mma_sync = async_floats(false, c.inner_product, c.b_split, c.block_m, c.block_n, c.tile_k, c.stages);
  const int wgmma = c.block_m == 128
                        ? async_floats(true, c.inner_product, c.b_split, c.block_m, c.block_n, c.tile_k, c.stages)
                        : 0;
  return max_of(max_of(mma_sync, wgmma), max_of(epilogue, split));
}

} // namespace gemm_layout
