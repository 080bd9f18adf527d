// GEMMs with few rows (templates/skinny_gemm.cu): when the GEMM kernel takes
// one, and the template's shape for it. See docs/kernels-gemm.md.
#include "codegen/GemmParts.h"
#include "codegen/KernelParts.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <limits>

namespace fusegen::codegen {
namespace {

// Up to this many rows a GEMM is memory-bound on fp32 FMAs (2 * M FLOPs per
// 4-byte element of B: 8 FLOP/byte at 16, an H100's FMA balance is 22), so
// streaming B once beats gemm.cu's tensor-core tiles of 64 rows.
constexpr int64_t kMaxRows = 12;
// Rows per tile: A's rows are read per column vector of B from L1/L2, so more
// rows per tile than columns per block make A's traffic the limit (SwiGLU at
// 16 tokens in one tile of 16: 0.41 ms, eager 0.34). Two tiles of 8 read B
// twice, the second time from L2 (templates/skinny_gemm.cu runs a block of
// columns' tiles side by side).
constexpr int kMaxTileRows = 8;
constexpr int kMaxWarps = 8;
// From 13 to this many rows, in strict precision along k, the tiled form (A
// and B staged in shared memory). Measured on the H100 (bench/NOTES.md v59,
// SwiGLU d 4096 and pre-norm MLP d 2048): at 16 rows as fast as the row
// tiles or faster (SwiGLU 0.298 ms against 0.35), at 24-48 rows 15-45%
// faster than gemm.cu's 3xTF32 blocks; at 64 rows 3-6% slower, its FMAs
// (2 * 64 FLOPs per 4 bytes of B, past the H100's balance) the limit.
// tf32's single tensor-core product keeps gemm.cu.
constexpr int64_t kMaxTiledRows = 48;
constexpr int kTiledMaxCols = 128;         // per block: 32 accumulators a thread at 64 rows
constexpr int kTiledMaxSplit = 8;          // a portable cluster
constexpr int kTiledMinStagesPerSplit = 4; // a split shorter than this is mostly its pipeline's fill
constexpr int kTiledBlocksPerSM = 2;       // the template's launch bound
constexpr int kTiledWaves = 4;             // splits stop at this many waves of blocks
constexpr int kTiledTileK = 32, kTiledStride = kTiledTileK + 4; // templates/skinny_gemm.cu kTileK, kTileStride
constexpr int kMaxAccumulators = 32; // per thread along k: rows x columns (registers for loads besides)
constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535; // the template loops over the rest

int power_of_two_at_most(int64_t value, int cap) {
  int p = 1;
  while (p * 2 <= cap && p * 2 <= value)
    p *= 2;
  return p;
}

// The tiled form for rows (13..48) x cols over depth: a split over a
// cluster, and the most stages whose shared memory lets two blocks share an
// SM.
SkinnyShape tiled_shape(const Target& target, int64_t rows, int64_t cols, int64_t depth, int64_t batches) {
  SkinnyShape shape;
  shape.tiled = true;
  shape.b_along_k = true;
  shape.vector = 4;
  shape.warps = 8;
  shape.rows = static_cast<int>(ceil_div(rows, 8) * 8);
  shape.tile_cols = cols >= kTiledMaxCols ? kTiledMaxCols : static_cast<int>(ceil_div(cols, 32) * 32);
  const int64_t blocks = ceil_div(cols, shape.tile_cols) * std::min<int64_t>(batches, kMaxGridYZ);
  const int64_t wanted = kTiledBlocksPerSM * static_cast<int64_t>(target.sm_count);
  const int64_t stages = ceil_div(depth, kTiledTileK);
  // Deep splits: many short blocks ran faster than one wave of long ones
  // (SwiGLU's 86 blocks of columns at 32 rows: split 3 into one wave of 258
  // blocks 0.52 ms, split 4 0.39, split 8 into 688 blocks 0.39; pre-norm MLP
  // 0.154, 0.146, 0.136), so split up to 8 ways while that is under a few
  // waves and each share keeps a few stages.
  if (target.clusters)
    while (shape.split < kTiledMaxSplit && blocks * shape.split < kTiledWaves * wanted &&
           stages >= static_cast<int64_t>(shape.split + 1) * kTiledMinStagesPerSplit)
      ++shape.split;
  for (shape.stages = 4; shape.stages > 2; --shape.stages)
    if (shape.shared_bytes() * kTiledBlocksPerSM <= target.max_shared_bytes_per_block)
      break;
  return shape;
}

} // namespace

int64_t SkinnyShape::shared_bytes() const {
  if (!tiled)
    return 0;
  // templates/skinny_gemm.cu kTiledSharedFloats: the stages, or the partial
  // tile (rows of tile_cols + 8) that reuses them.
  const int64_t stage_floats = static_cast<int64_t>(rows + tile_cols) * kTiledStride;
  return std::max<int64_t>(stages * stage_floats, static_cast<int64_t>(rows) * (tile_cols + 8)) * 4;
}

std::optional<SkinnyShape> skinny_shape(const EmitContext& ctx, const GemmMapping& g, const Stages& s) {
  const Node& anchor = ctx.fusion().node(ctx.step().anchor());
  if (ctx.options().gemm_block || plan::traits_of(anchor).contraction == ContractionForm::Convolution)
    return std::nullopt; // a forced block is for gemm.cu; a convolution's A has zeros (padding), not addresses
  if (s.norm || s.reduce || s.stats || s.column_norm || !g.operand_copies.empty() || !g.a_along_k)
    return std::nullopt; // pointwise epilogues only
  if (!g.launch_rows.value || *g.launch_rows.value < 1 || !g.launch_cols.value || !g.launch_depth.value ||
      !g.launch_batches.value)
    return std::nullopt;
  const int64_t rows = *g.launch_rows.value, cols = *g.launch_cols.value, depth = *g.launch_depth.value;
  const int64_t batches = *g.launch_batches.value;
  if (rows > kMaxRows) {
    if (rows > kMaxTiledRows || ctx.precision() != Precision::Strict || !g.b_along_k || !g.a_vector || !g.b_vector ||
        cols < 1 || depth < 1)
      return std::nullopt;
    return tiled_shape(ctx.target(), rows, cols, depth, batches);
  }
  SkinnyShape shape;
  shape.rows = power_of_two_at_least(rows, kMaxTileRows);
  shape.b_along_k = g.b_along_k;
  // Enough blocks to keep every SM streaming B: a few per SM.
  const int64_t enough_blocks = 4 * static_cast<int64_t>(ctx.target().sm_count);
  if (shape.b_along_k) {
    shape.vector = g.a_vector && g.b_vector ? 4 : 1;
    shape.warps = power_of_two_at_most(ceil_div(depth, 32 * shape.vector), kMaxWarps);
    shape.cols = 1;
    for (int cols_per_block : {8, 4, 2})
      if (shape.rows * cols_per_block <= kMaxAccumulators &&
          ceil_div(cols, cols_per_block) * ceil_div(rows, shape.rows) * batches >= enough_blocks) {
        shape.cols = cols_per_block;
        break;
      }
  } else {
    // Lanes along n, warps along k: a block owns 32 * vector columns, so
    // few columns leave SMs idle; gemm.cu's split-K is better there.
    shape.vector = g.b_vector ? 4 : 1;
    if (ceil_div(cols, 32 * shape.vector) * batches < ctx.target().sm_count)
      shape.vector = 1;
    if (ceil_div(cols, 32 * shape.vector) * batches < ctx.target().sm_count)
      return std::nullopt;
    shape.warps = power_of_two_at_most(depth, kMaxWarps); // partial sums: 8 x 8 x 128 floats, 32 KiB
  }
  return shape;
}

KernelSource emit_skinny_gemm(const EmitContext& ctx, const GemmMapping& g, const SkinnyShape& shape,
                              const std::map<std::string, std::string>& shared_hooks) {
  KernelSource source;
  source.template_file = "skinny_gemm.cu";
  auto& hooks = source.hooks;
  hooks["warps"] = constant_hook("kWarps", shape.warps);
  hooks["tile_rows"] = constant_hook("kRows", shape.rows);
  hooks["block_cols"] = constant_hook("kCols", shape.cols);
  hooks["vector"] = constant_hook("kVector", shape.vector);
  hooks["b_along_k"] = bool_hook("kBAlongK", shape.b_along_k);
  hooks["tiled"] = bool_hook("kTiled", shape.tiled);
  hooks["tile_cols"] = constant_hook("kTileCols", shape.tile_cols);
  hooks["split"] = constant_hook("kSplit", shape.split);
  hooks["stages"] = constant_hook("kStages", shape.stages);
  for (const char* name : {"rows", "batches", "cols", "depth", "a_offset", "b_offset", "a_address", "b_address",
                           "epilogue_stores", "epilogue"})
    hooks[name] = shared_hooks.at(name);
  if (shape.tiled) {
    hooks["entry"] = entry_hook(ctx, "kWarps * 32, " + std::to_string(kTiledBlocksPerSM), "skinny_gemm_main(args);",
                                shape.split > 1 ? "__cluster_dims__(kSplit, 1, 1)" : "");
    source.launch.grid = {ctx.constant(ceil_div(*g.launch_cols.value, shape.tile_cols) * shape.split), ctx.constant(1),
                          grid_stride_blocks(ctx, g.launch_batches, 1, kMaxGridYZ)};
    source.launch.block = shape.warps * 32;
    source.launch.cluster = shape.split;
    source.launch.shared_bytes = shape.shared_bytes();
    source.launch.variant = "fp32 FMAs, tiles of " + std::to_string(shape.rows) + "x" +
                            std::to_string(shape.tile_cols) + " staged in shared memory, split-K " +
                            std::to_string(shape.split);
    return source;
  }
  hooks["entry"] = entry_hook(ctx, "kWarps * 32", "skinny_gemm_main(args);");
  const int64_t block_cols = shape.b_along_k ? shape.cols : 32 * shape.vector;
  const SizeExpr tiles = ctx.ceil_div(g.launch_rows, shape.rows);
  source.launch.grid = {grid_stride_blocks(ctx, ctx.mul(ctx.ceil_div(g.launch_cols, block_cols), tiles), 1, kMaxGridX),
                        ctx.constant(1), grid_stride_blocks(ctx, g.launch_batches, 1, kMaxGridYZ)};
  source.launch.block = shape.warps * 32;
  source.launch.variant = "fp32 FMAs, row tiles of " + std::to_string(shape.rows);
  return source;
}

} // namespace fusegen::codegen
