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
constexpr int64_t kMaxRows = 16;
// Rows per tile: A's rows are read per column vector of B from L1/L2, so more
// rows per tile than columns per block make A's traffic the limit (SwiGLU at
// 16 tokens in one tile of 16: 0.41 ms, eager 0.34). Two tiles of 8 read B
// twice, the second time from L2 (templates/skinny_gemm.cu runs a block of
// columns' tiles side by side).
constexpr int kMaxTileRows = 8;
constexpr int kMaxWarps = 8;
constexpr int kMaxAccumulators = 32; // per thread along k: rows x columns (registers for loads besides)
constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535; // the template loops over the rest

int power_of_two_at_most(int64_t value, int cap) {
  int p = 1;
  while (p * 2 <= cap && p * 2 <= value)
    p *= 2;
  return p;
}

} // namespace

std::optional<SkinnyShape> skinny_shape(const EmitContext& ctx, const GemmMapping& g, const Stages& s) {
  const Node& anchor = ctx.fusion().node(ctx.step().anchor());
  if (ctx.options().gemm_block || plan::traits_of(anchor).contraction == ContractionForm::Convolution)
    return std::nullopt; // a forced block is for gemm.cu; a convolution's A has zeros (padding), not addresses
  if (s.norm || s.reduce || s.stats || s.column_norm || !g.operand_passes.empty() || !g.a_along_k)
    return std::nullopt; // pointwise epilogues only
  if (!g.launch_rows.value || *g.launch_rows.value > kMaxRows || *g.launch_rows.value < 1 || !g.launch_cols.value ||
      !g.launch_depth.value || !g.launch_batches.value)
    return std::nullopt;
  const int64_t rows = *g.launch_rows.value, cols = *g.launch_cols.value, depth = *g.launch_depth.value;
  const int64_t batches = *g.launch_batches.value;
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
  for (const char* name : {"rows", "batches", "cols", "depth", "a_offset", "b_offset", "a_address", "b_address",
                           "epilogue_stores", "epilogue"})
    hooks[name] = shared_hooks.at(name);
  hooks["entry"] = entry_hook(ctx, "kWarps * 32", "skinny_gemm_main(args);");
  const int64_t block_cols = shape.b_along_k ? shape.cols : 32 * shape.vector;
  const SizeExpr tiles = ctx.ceil_div(g.launch_rows, shape.rows);
  source.launch.grid = {grid_stride_blocks(ctx, ctx.mul(ctx.ceil_div(g.launch_cols, block_cols), tiles), 1, kMaxGridX),
                        ctx.constant(1), grid_stride_blocks(ctx, g.launch_batches, 1, kMaxGridYZ)};
  source.launch.block = shape.warps * 32;
  return source;
}

} // namespace fusegen::codegen
