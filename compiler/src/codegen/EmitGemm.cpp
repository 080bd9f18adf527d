// GEMM kernels (templates/gemm.cu): linear, matmul and conv2d (implicit GEMM)
// mapped onto the template's batched [M, N] x K problem, with the planned
// epilogue stages: stage-0 pointwise ops on the contraction result, then
// optionally a row norm (group_norm / layer_norm over the columns of an
// [M, C] result) with its pointwise ops and a row min/max, or partial
// statistics for a batch_norm (per row tile and column) or a group_norm after
// conv2d (per sample, group and row tile). See docs/kernels-gemm.md.
#include "codegen/BatchNormStats.h"
#include "codegen/Emitters.h"
#include "codegen/GemmParts.h"
#include "codegen/HookBody.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "codegen/RearrangePass.h"
#include "fusegen/OpRegistry.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace fusegen::codegen {
namespace {

// Geometry of templates/gemm.cu (static_asserted there); kTile and the
// shared-memory layout come from templates/gemm/geometry.h (GemmParts.h).
constexpr int kTileK = 16;
constexpr int kThreads = gemm_layout::kThreads;
// Tensor-core blocks below one per SM (Target::sm_count) leave SMs idle, so
// a smaller block or a split-K is chosen.
// Row blocks per group of a rastered grid (templates/gemm.cu, raster_rows):
// an H100 wave of 132 blocks then spans about 8 column blocks of B instead
// of all of them (chain 39: 32). 62 and 75 ran 1-5% faster strict and 0-8%
// tf32, 39 from 3% faster to 0.5% slower; 8 was no better (NOTES v25).
constexpr int kRasterRowBlocks = 16;
constexpr int kTensorCoreTileK = 32; // four k steps per barrier
constexpr int kGatherTileK = 8;      // element loads: few staging registers (two blocks per SM)
constexpr int kTensorCoreStages = 4; // slices in flight on the cp.async path
constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535; // the template loops over the rest

struct Params {
  std::vector<std::pair<std::string, std::string>> list; // (type, name)
  std::string text() const {
    std::string out;
    for (const auto& [type, name] : list)
      out += (out.empty() ? "" : ", ") + type + " " + name;
    return out;
  }
};

// A function hook whose unused parameters are voided (warnings are errors).
std::string hook(const std::string& return_type, const std::string& name, const Params& params,
                 std::vector<std::string> body) {
  std::vector<std::string> voids;
  for (const auto& [type, param] : params.list)
    if (!mentions(body, param))
      voids.push_back("(void)" + param + ";");
  body.insert(body.begin(), voids.begin(), voids.end());
  return function_hook(return_type, name, params.text(), body);
}

// The template's inner product (1 3xTF32, 2 TF32, 3 FP16x3), block, slice depth and
// load path.
struct GemmVariant {
  int inner_product = 1;
  int block_m = kTile, block_n = kTile;
  bool column_norm = false; // the block's rows staged together (templates/gemm.cu "column_norm")
  int tile_k = kTileK;
  bool async = false; // cp.async pipeline: both operands vectors along k
  int stages = 2;
  int split_k = 1;      // blocks (a cluster) sharing an output block's depth
  bool b_split = false; // 3xTF32 on wgmma with B's small parts split before the kernel
  // Dynamic shared memory: the slices in flight, or the epilogue's staging
  // if larger (templates/gemm/geometry.h; the template asserts it is enough).
  int64_t shared_floats() const {
    return gemm_layout::shared_floats(
        {inner_product, block_m, block_n, tile_k, stages, split_k, async, b_split, column_norm});
  }
};

// Tensor cores for every precision: strict precision through the 3xTF32
// split keeps fp32 accuracy. The largest block that still gives every SM a
// block: bigger blocks re-read A and B fewer times (128x128 halves the
// traffic of 64x64), but a launch of a few big blocks leaves SMs idle.
// Unknown extents (symbolic dims) take the largest block.
Result<GemmVariant> choose_variant(const EmitContext& ctx, const GemmMapping& g, const Stages& s) {
  GemmVariant v;
  v.column_norm = s.column_norm;
  v.inner_product = ctx.precision() == Precision::TF32 ? 2 : 1;
  // Deeper slices when loads are 16-byte vectors; element-wise operand loads
  // (conv2d's gather) need the staging registers for their addresses.
  // (8-deep slices give 16-byte loads too little to do: one vector operand
  // keeps 16.)
  v.tile_k = g.a_vector && g.b_vector ? kTensorCoreTileK : !g.a_vector && !g.b_vector ? kGatherTileK : kTileK;
  v.async = g.a_vector && g.b_vector && g.a_along_k && g.b_along_k;
  // wgmma keeps one group of TF32 products in flight, so its ring has one
  // stage more for the same copies in flight (templates/gemm.cu).
  v.stages = !v.async ? 2 : v.inner_product == 2 ? kTensorCoreStages + 1 : kTensorCoreStages;
  // With mma.sync, strict precision's separate per-slice sums do not fit in
  // registers beside a 128x128 block's accumulators (ptxas spills), so it
  // starts at 128x64. On sm_90 linear-like operands take wgmma (no fragment
  // registers), where 128x128 fits.
  const bool wgmma = ctx.target().wgmma && g.a_vector && g.b_vector && g.a_along_k && g.b_along_k;
  // Element-wise operand loads (conv2d's gather) are latency-bound: 64x64
  // blocks run two per SM (templates/gemm.cu), which measured faster.
  const bool gathers = !(g.a_vector && g.b_vector);
  // What the template can run: gathers only in 64x64 blocks (three per SM);
  // strict mma.sync at most 128x64 (its separate sums spill beside 128x128);
  // 256 columns only for TF32 on wgmma (128 accumulators per thread, no room
  // for strict's separate sums). Empty when supported, else why not.
  auto unsupported = [&](int bm, int bn) -> std::string {
    if (s.column_norm && (bn != kTile || !g.launch_rows.value || bm < *g.launch_rows.value))
      return "a fused batch_norm takes blocks " + std::to_string(kTile) + " columns wide that hold all " +
             (g.launch_rows.value ? std::to_string(*g.launch_rows.value) + " " : "") + "rows";
    if (gathers && bm * bn > 64 * 64)
      return "gathered operands take 64x64";
    if (v.inner_product == 1 && !wgmma && bm * bn > 128 * 64)
      return "strict mma.sync takes at most 128x64";
    if (bn > 128 && !(v.inner_product == 2 && wgmma && bm == 128))
      return "256-column blocks are for tf32 on wgmma, 128 rows";
    return "";
  };
  const int64_t enough_blocks = ctx.target().sm_count;
  constexpr int kStreamingBlock = 128, kStreamingSplit = 8; // one block row over a long k, below
  // 128x256 slices fill shared memory at 4 stages.
  const int stages = v.stages;
  auto set_block = [&](int bm, int bn) {
    v.block_m = bm;
    v.block_n = bn;
    v.stages = bn > 128 ? kTensorCoreStages : stages;
  };
  // Blocks of a launch, when its extents are known.
  auto blocks_of = [&](int bm, int bn) -> std::optional<int64_t> {
    if (!g.launch_rows.value || !g.launch_cols.value || !g.launch_batches.value)
      return std::nullopt;
    return ((*g.launch_rows.value + bm - 1) / bm) * ((*g.launch_cols.value + bn - 1) / bn) *
           std::max<int64_t>(*g.launch_batches.value, 1);
  };
  const std::optional<int64_t> slices =
      g.launch_depth.value ? std::optional<int64_t>((*g.launch_depth.value + v.tile_k - 1) / v.tile_k) : std::nullopt;
  // Split-K (templates/gemm.cu "split_k"): for launches of few blocks, whose
  // SMs would otherwise sit idle while each block walks all of k.
  auto unsupported_split = [&](int bm, int bn, int split) -> std::string {
    if (split == 1)
      return "";
    if (ctx.step().finalizes_stats)
      return "its last blocks finalize the statistics, so no output block is split";
    if (!ctx.target().clusters)
      return "split-K needs sm_90 or later (thread-block clusters)";
    const std::optional<int64_t> blocks = blocks_of(bm, bn);
    if (!blocks || !slices)
      return "split-K needs known extents";
    if (*blocks >= enough_blocks)
      return "split-K is for launches of fewer than " + std::to_string(enough_blocks) + " blocks";
    if (*slices < split)
      return "k has " + std::to_string(*slices) + " slices of " + std::to_string(v.tile_k) + ", fewer than the split";
    return "";
  };
  if (const std::optional<GemmBlock>& forced = ctx.options().gemm_block) {
    std::string why = unsupported(forced->rows, forced->cols);
    if (why.empty())
      why = unsupported_split(forced->rows, forced->cols, forced->split_k);
    if (!why.empty())
      return Error{"this GEMM kernel cannot take " + format_gemm_block(*forced) + " blocks (" + why + ")"};
    set_block(forced->rows, forced->cols);
    v.split_k = forced->split_k;
    return v;
  }
  // One block row (up to 64 rows that skinny_gemm.cu does not take) over a long k
  // streams B, and wants more blocks in flight than one wave of blocks that
  // each walk all of k: on the H100, 128x128 blocks split 8 ways beat the
  // rule below by 7-40% at 64 tokens (SwiGLU d 4096, pre-norm MLP d 2048;
  // autotuned, bench/NOTES.md v48, v49).
  if (g.launch_rows.value && *g.launch_rows.value <= 64 && g.launch_batches.value && *g.launch_batches.value <= 1 &&
      slices && *slices >= 2 * kStreamingSplit && unsupported(kStreamingBlock, kStreamingBlock).empty() &&
      unsupported_split(kStreamingBlock, kStreamingBlock, kStreamingSplit).empty()) {
    set_block(kStreamingBlock, kStreamingBlock);
    v.split_k = kStreamingSplit;
    return v;
  }
  for (const auto& [bm, bn, unused_split] : kGemmBlocks) {
    if (!unsupported(bm, bn).empty())
      continue;
    if (bn > kTile && g.launch_cols.value && *g.launch_cols.value <= bn / 2)
      continue; // half the block would be past the last column
    if (bm > kTile && g.launch_rows.value && *g.launch_rows.value <= kTile)
      continue; // likewise past the last row
    set_block(bm, bn);
    const std::optional<int64_t> blocks = blocks_of(bm, bn);
    if (!blocks || *blocks >= enough_blocks)
      break;
  }
  if (std::string why = unsupported(v.block_m, v.block_n); !why.empty())
    return Error{"no block of the GEMM template fits this kernel (" + why + ")"};
  // Still too few blocks: the largest split that keeps a launch within one
  // block per SM and gives every block at least two slices.
  const std::optional<int64_t> blocks = blocks_of(v.block_m, v.block_n);
  for (int split : {8, 4, 2})
    if (unsupported_split(v.block_m, v.block_n, split).empty() && *blocks * split <= enough_blocks &&
        *slices >= 2 * split) {
      v.split_k = split;
      break;
    }
  return v;
}

// ---- where the GEMM waits for the kernel before it ----

// The GEMM's products read only what no kernel before it in the call writes
// (no earlier kernel writes a buffer it reads, and no pass of its own splits
// B or copies the operands channels-last first): it waits for the kernel before it after its products, before its
// epilogue writes anything (templates/gemm.cu "wait_late"), so that its k
// loop runs beside that kernel. Its fills (+inf before a row minimum) are
// written by the kernel just before it and read by the epilogue only.
// bench/NOTES.md v29 (chain 75 small).
bool waits_late(const EmitContext& ctx, const GemmVariant& v) {
  if (v.b_split || ctx.step().a_layout != kNoId) // a pass of its own writes what it reads
    return false;
  const std::vector<BufferId>& reads = ctx.step().reads;
  for (size_t k = 0; k < ctx.kernel_index(); ++k)
    for (BufferId written : ctx.plan().kernels[k].writes)
      if (std::binary_search(reads.begin(), reads.end(), written))
        return false;
  return true;
}

// ---- B split once per call ----

// A strict linear the planner gave scratch for (many rows) whose products
// run on wgmma (sm_90, 128-row blocks on the cp.async path) has its weight
// split into tf32 parts by a pass before the GEMM, and the GEMM copies the
// small parts per slice beside B instead of splitting B in shared memory in
// every block (templates/gemm.cu "b_split"; bench/NOTES.md v21).
// A convolution whose B is its weight's dense copy (KernelStep::b_layout)
// splits that copy the same way, for 3xTF32 only (FP16x3 on convolutions
// keeps its in-loop split).
bool splits_b_once(const EmitContext& ctx, const GemmVariant& v) {
  const ContractionForm form = plan::traits_of(ctx.fusion().node(ctx.step().anchor())).contraction;
  const bool fp16x3 = ctx.options().strict_product.value_or(StrictProduct::ThreeTF32) == StrictProduct::FP16x3;
  const bool dense_b = form == ContractionForm::RowsTimesWeight ||
                       (form == ContractionForm::Convolution && ctx.step().b_layout != kNoId && !fp16x3);
  return ctx.step().b_split != kNoId && ctx.target().wgmma && v.inner_product == 1 && v.async && v.block_m == 128 &&
         v.tile_k == kTensorCoreTileK && dense_b;
}

// The buffer B is read from where it is split once per call: a linear's
// weight, or a convolution's dense copy of it.
BufferId split_b_source(const EmitContext& ctx) {
  if (ctx.step().b_layout != kNoId)
    return ctx.step().b_layout;
  return ctx.plan().buffer_of(operand(ctx.fusion().node(ctx.step().anchor()), "weight"));
}

// Where B's small parts are: they mirror B's buffer element for element, so
// a convolution's (any layout: groups, transposed phases) are read where
// b_address reads, in the other buffer.
std::vector<std::string> small_b_address(const EmitContext& ctx, const GemmMapping& g) {
  const std::string split = ctx.buffer(ctx.step().b_split);
  if (ctx.step().b_layout != kNoId)
    return returns(split + " + (b_address(args, b_base, k, n) - " + ctx.buffer(ctx.step().b_layout) + ")");
  return returns(split + " + n * " + g.depth + " + k"); // a linear's weight [N, K]
}

// Strict products as FP16x3 (templates/gemm/mainloop_fp16x3.cuh) where the
// target (or the options) chooses them and the kernel runs on wgmma (the
// cp.async path in 128-row blocks, 32-deep slices). B split once per call
// comes in 32-deep chunks of fp16 halves, so its depth must be known and a
// multiple of 32; else the pass splits it for 3xTF32.
// Not the default: on the H100 it measured no faster than 3xTF32 (chain 62
// 1.56 -> 1.49 ms, 39 5.83 -> 5.88 ms; bench/NOTES.md v47), so only
// CodegenOptions::strict_product asks for it.
bool takes_fp16x3(const EmitContext& ctx, const GemmMapping& g, const GemmVariant& v) {
  const StrictProduct product = ctx.options().strict_product.value_or(StrictProduct::ThreeTF32);
  const bool on_wgmma = ctx.target().wgmma && v.async && v.block_m == 128 && v.tile_k == 32;
  const bool whole_chunks = g.launch_depth.value && *g.launch_depth.value % 32 == 0;
  return product == StrictProduct::FP16x3 && ctx.target().fp16x3_products && v.inner_product == 1 && on_wgmma &&
         (!v.b_split || whole_chunks);
}

// The compute hooks of the pass that splits B into FP16x3's halves: each
// 32-deep chunk of a row becomes 32 hi halves then 32 lo halves in the same
// 128 bytes, so element `index` (depth a multiple of 32) puts its hi half at
// half 2 * index - index % 32 and its lo half 32 halves later.
void fp16x3_split_hooks(KernelSource& pass, const std::string& from, const std::string& to) {
  const std::string params = "const FusegenArgs& args, long long index";
  const std::string halves = "reinterpret_cast<unsigned short*>(" + to + ") + (2 * index - index % 32)";
  pass.hooks["compute"] =
      function_hook("void", "compute", params,
                    {"unsigned int hi, lo;", "fusegen_fp16x3_split2(" + from + "[index], 0.0f, hi, lo);",
                     "unsigned short* h = " + halves + ";", "h[0] = static_cast<unsigned short>(hi & 0xffffu);",
                     "h[32] = static_cast<unsigned short>(lo & 0xffffu);"});
  pass.hooks["compute4"] =
      function_hook("void", "compute4", params,
                    {"const float4 x = *reinterpret_cast<const float4*>(" + from + " + index);",
                     "unsigned int hi01, lo01, hi23, lo23;", "fusegen_fp16x3_split2(x.x, x.y, hi01, lo01);",
                     "fusegen_fp16x3_split2(x.z, x.w, hi23, lo23);", "unsigned short* h = " + halves + ";",
                     "*reinterpret_cast<uint2*>(h) = make_uint2(hi01, hi23);",
                     "*reinterpret_cast<uint2*>(h + 32) = make_uint2(lo01, lo23);"});
}

// The pass before the GEMM, on templates/elementwise.cu, over B's buffer
// (the weight, or a convolution's dense copy of it). 3xTF32: its small
// parts, x - trunc_tf32(x) rounded to tf32 (fusegen_tf32_rest, as the
// in-loop split computes them). FP16x3: its hi and lo halves
// (fp16x3_split_hooks).
KernelSource b_split_pass(const EmitContext& ctx, BufferId b, const GemmVariant& v) {
  const std::string from = ctx.buffer(b), to = ctx.buffer(ctx.step().b_split);
  const Shape& shape = ctx.plan().buffer(b).shape;
  KernelSource pass;
  pass.template_file = "elementwise.cu";
  pass.launch.kind = KernelKind::Elementwise;
  pass.name_suffix = "_split_b";
  const std::string weight_name = ctx.plan().buffer(b).name, split_name = ctx.plan().buffer(ctx.step().b_split).name;
  pass.note = v.inner_product == 3 ? "splits " + weight_name + " into fp16 hi and lo halves for " + ctx.kernel_name() +
                                         "'s FP16x3 products (into " + split_name + ")"
                                   : "splits " + weight_name + " into tf32 parts for " + ctx.kernel_name() +
                                         " (its small parts into " + split_name + ")";
  const std::string params = "const FusegenArgs& args, long long index";
  pass.hooks["block_size"] = constant_hook("kBlockSize", kThreads);
  pass.hooks["vector_width"] = constant_hook("kVectorWidth", 4);
  pass.hooks["numel"] = args_function_hook("long long", "numel", ctx.product(shape, 0, shape.size()));
  pass.hooks["vector_ok"] = function_hook("bool", "vector_ok", "const FusegenArgs& args",
                                          {"return ((reinterpret_cast<unsigned long long>(" + from +
                                           ") | reinterpret_cast<unsigned long long>(" + to + ")) & 15ULL) == 0;"});
  if (v.inner_product == 3) {
    fp16x3_split_hooks(pass, from, to);
  } else {
    pass.hooks["compute"] =
        function_hook("void", "compute", params, {to + "[index] = fusegen_tf32_rest(" + from + "[index]);"});
    pass.hooks["compute4"] =
        function_hook("void", "compute4", params,
                      {"const float4 x = *reinterpret_cast<const float4*>(" + from + " + index);",
                       "*reinterpret_cast<float4*>(" + to +
                           " + index) = make_float4(fusegen_tf32_rest(x.x), fusegen_tf32_rest(x.y), "
                           "fusegen_tf32_rest(x.z), fusegen_tf32_rest(x.w));"});
  }
  pass.hooks["entry"] = entry_hook(ctx, "kBlockSize", "elementwise_main(args);", "", pass.name_suffix);
  pass.launch.grid = {grid_stride_blocks(ctx, ctx.size(shape, 0, shape.size()), kThreads * 4, 65536), ctx.constant(1),
                      ctx.constant(1)};
  pass.launch.block = kThreads;
  pass.scratch_used.push_back(ctx.step().b_split);
  return pass;
}

// ---- the last wave: a split tail ----

// A launch of one or more full waves of 128x128 blocks (one per SM) and a
// few blocks more would run those few in a last wave of its own while the
// other SMs idle (chain 39 v0.1: 4096 blocks, 31 waves and 4). They go to a
// second launch instead, each split over a cluster of 8 (or 4, 2) blocks, so
// the last wave takes about 1/8 of a block's time (bench/NOTES.md v20). The
// wave is 132 blocks, the H100 SXM's SMs; on a part with fewer the split
// still runs, only where the last wave falls changes.
struct TailSplit {
  int64_t first_block = 0; // row-major over (row block, column block)
  int64_t blocks = 0;
  int split = 1;
};

std::optional<TailSplit> tail_split(const EmitContext& ctx, const GemmMapping& g, const GemmVariant& v) {
  if (!ctx.target().clusters || ctx.options().gemm_block || v.split_k > 1 || v.block_m != 128 || v.block_n != 128 ||
      ctx.step().finalizes_stats) // one launch finishes every output block
    return std::nullopt;
  const int64_t enough_blocks = ctx.target().sm_count;
  if (!g.launch_rows.value || !g.launch_cols.value || !g.launch_depth.value || !g.launch_batches.value ||
      *g.launch_batches.value != 1)
    return std::nullopt;
  const int64_t row_blocks = (*g.launch_rows.value + v.block_m - 1) / v.block_m;
  const int64_t column_blocks = (*g.launch_cols.value + v.block_n - 1) / v.block_n;
  if (row_blocks > kMaxGridYZ || column_blocks > kMaxGridX) // the main launch would loop
    return std::nullopt;
  const int64_t blocks = row_blocks * column_blocks, left = blocks % enough_blocks;
  const int64_t slices = (*g.launch_depth.value + v.tile_k - 1) / v.tile_k;
  if (blocks < enough_blocks || left == 0)
    return std::nullopt;
  for (int split : {8, 4, 2})
    if (left * split <= enough_blocks && slices >= 2 * split)
      return TailSplit{blocks - left, left, split};
  return std::nullopt;
}

// ---- few columns: templates/narrow_gemm.cu ----

// Column accumulators per thread. Up to 32 columns the narrow kernel beats
// gemm.cu in both precisions; from 33 to 64 at K = 72 only 3xTF32's (chain
// 85 v0.1, 64 channels: strict 1.32 -> 1.22 ms, tf32 1.16 -> 1.22 ms; NOTES
// v17); deeper, gathered, tf32's too (NOTES v63).
constexpr int64_t kNarrowMaxCols = 64;
constexpr int64_t kNarrowMaxColsTf32 = 32;
// Depth: up to 128 for any A; deeper only where gemm.cu would read A element
// by element (!a_vector: a convolution over fewer than 16 channels, e.g.
// conv3d 8 -> 32 with a 3x3x3 kernel, K = 216) into 64-column tiles.
constexpr int64_t kNarrowMaxDepth = 128;
constexpr int64_t kNarrowMaxDepthGathered = 1024;
constexpr int64_t kNarrowMaxSharedB = 8192; // floats of B in a block: depth x columns rounded up to 4
constexpr int kNarrowThreads = 128;         // threads per block, two statistics tiles

int64_t round_up4(int64_t n) { return (n + 3) / 4 * 4; }

// Columns a block computes: all of them, or the fewest equal parts (whole
// statistics groups) whose rows of B fit its shared memory; grid x runs
// over the parts.
std::optional<int64_t> narrow_column_part(int64_t cols, int64_t depth, int64_t stats_group) {
  for (int64_t parts = 1; parts <= cols; ++parts) {
    const int64_t part = cols / parts;
    if (cols % parts == 0 && (stats_group == 0 || part % stats_group == 0) &&
        depth * round_up4(part) <= kNarrowMaxSharedB)
      return part;
  }
  return std::nullopt;
}

// Rows per thread: two where both rows' accumulators fit (32 columns a
// block) and A's addresses split into row and tap offsets, so that each
// broadcast read of B feeds twice the FMAs. With padding every element's
// address is computed and checked; twice those took 168-254 registers and
// spilled.
int narrow_thread_rows(const GemmMapping& g, int64_t block_cols) {
  return round_up4(block_cols) <= 32 && g.a_depth_table > 0 ? 2 : 1;
}

// The narrow template takes a GEMM whose columns and depth are known and
// small, whose output is contiguous along m (threads on consecutive rows
// store side by side: conv2d's pixels), and whose epilogue is pointwise ops,
// optionally with partial statistics. A forced block is for gemm.cu. The
// columns each of its blocks computes, or nullopt where it does not take
// the GEMM.
std::optional<int64_t> narrow_block_cols(const EmitContext& ctx, const GemmMapping& g, const Stages& s) {
  if (ctx.options().gemm_block || !g.out_along_m || s.norm || s.reduce)
    return std::nullopt;
  if (!g.launch_cols.value || !g.launch_depth.value)
    return std::nullopt;
  const int64_t cols = *g.launch_cols.value, depth = *g.launch_depth.value;
  const bool deep = depth > kNarrowMaxDepth;
  if (deep && (g.a_vector || depth > kNarrowMaxDepthGathered))
    return std::nullopt;
  const bool tensor_cores_win = ctx.precision() == Precision::TF32 && !deep;
  if (cols > (tensor_cores_win ? kNarrowMaxColsTf32 : kNarrowMaxCols))
    return std::nullopt;
  return narrow_column_part(cols, depth, s.stats ? s.stats_group : 0);
}

KernelSource emit_narrow_gemm(const EmitContext& ctx, const GemmMapping& g, const Stages& s, int64_t block_cols,
                              const std::map<std::string, std::string>& shared_hooks) {
  KernelSource source;
  source.template_file = "narrow_gemm.cu";
  auto& hooks = source.hooks;
  const int64_t cols = *g.launch_cols.value;
  const int thread_rows = narrow_thread_rows(g, block_cols);
  hooks["threads"] = constant_hook("kThreads", kNarrowThreads);
  hooks["thread_rows"] = constant_hook("kThreadRows", thread_rows);
  hooks["cols"] = constant_hook("kCols", cols);
  hooks["block_cols"] = constant_hook("kBlockCols", block_cols);
  hooks["depth"] = constant_hook("kDepth", *g.launch_depth.value);
  hooks["stats_group"] = constant_hook("kStatsGroup", s.stats_group);
  hooks["stats_rows"] = constant_hook("kStatsRows", kTile);
  hooks["a_split"] = bool_hook("kASplit", g.a_depth_table > 0);
  for (const char* name : {"rows", "batches", "a_offset", "b_offset", "a_address", "b_address", "a_row",
                           "a_depth_offset", "epilogue_stores", "epilogue", "stats_slot", "stats_finalize",
                           "stats_counters", "sample_stats_slot", "finalize_column"})
    hooks[name] = shared_hooks.at(name);
  hooks["entry"] = entry_hook(ctx, "kThreads", "narrow_gemm_main(args);");
  source.launch.grid = {ctx.constant(cols / block_cols),
                        grid_stride_blocks(ctx, g.launch_rows, kNarrowThreads * thread_rows, kMaxGridYZ),
                        grid_stride_blocks(ctx, g.launch_batches, 1, kMaxGridYZ)};
  source.launch.block = kNarrowThreads;
  return source;
}

} // namespace

Result<KernelSource> emit_gemm(const EmitContext& ctx) {
  const PlanOptions& options = ctx.plan().options;
  if (options.gemm_tile_m != kTile || options.gemm_tile_n != kTile)
    return Error{"the GEMM template has " + std::to_string(kTile) + "x" + std::to_string(kTile) +
                 " tiles but the plan assumes " + std::to_string(options.gemm_tile_m) + "x" +
                 std::to_string(options.gemm_tile_n)};
  if (ctx.step().anchor() == kNoId)
    return Error{"internal error: GEMM kernel without a contraction"};
  Result<GemmMapping> mapping = map_contraction(ctx, ctx.fusion().node(ctx.step().anchor()));
  if (!mapping)
    return Error{mapping.error()};
  const GemmMapping& g = mapping.value();
  Result<Stages> stages = read_stages(ctx, g);
  if (!stages)
    return Error{stages.error()};
  const Stages& s = stages.value();

  std::string eps = "0.0f";
  if (s.norm) {
    eps = ops::cuda_float(std::get<double>(s.norm->attrs.at("eps")));
    if (eps.find("__") != std::string::npos)
      return Error{s.norm->op + " eps " + format_double(std::get<double>(s.norm->attrs.at("eps"))) + " is not finite"};
  }

  const Params args{{{"const FusegenArgs&", "args"}}};
  const Params batch_args{{{"const FusegenArgs&", "args"}, {"long long", "batch"}}};
  const Params batch_args_k{{{"const FusegenArgs&", "args"}, {"long long", "k"}}};
  auto element = [](const char* a, const char* b, const char* c) {
    return Params{{{"const FusegenArgs&", "args"}, {"long long", a}, {"long long", b}, {"long long", c}}};
  };
  Params value_params = element("batch", "m", "n");
  Params epilogue_params = value_params;
  epilogue_params.list.push_back({"float", "acc"});
  epilogue_params.list.push_back({"EpilogueStores&", "stores"});
  Params norm_params = value_params;
  norm_params.list.push_back({"float", "normalized"});
  norm_params.list.push_back({"NormStores&", "stores"});

  // Hooks both templates declare alike.
  std::map<std::string, std::string> shared_hooks;
  shared_hooks["rows"] = hook("long long", "gemm_rows", args, returns(g.rows));
  shared_hooks["batches"] = hook("long long", "gemm_batches", args, returns(g.batches));
  shared_hooks["a_offset"] = hook("long long", "a_offset", batch_args, g.a_offset);
  shared_hooks["b_offset"] = hook("long long", "b_offset", batch_args, g.b_offset);
  shared_hooks["a_address"] = hook("const float*", "a_address", element("a_base", "m", "k"), g.a_address);
  shared_hooks["b_address"] = hook("const float*", "b_address", element("b_base", "k", "n"), g.b_address);
  // Without a depth table neither template calls a_row / a_depth_offset.
  shared_hooks["a_row"] = hook("const float*", "a_row",
                               Params{{{"const FusegenArgs&", "args"}, {"long long", "a_base"}, {"long long", "m"}}},
                               g.a_depth_table > 0 ? g.a_row : returns("nullptr"));
  shared_hooks["a_depth_offset"] =
      hook("int", "a_depth_offset", batch_args_k, g.a_depth_table > 0 ? g.a_depth_offset : returns("0"));
  shared_hooks["epilogue_stores"] = constant_hook("kEpilogueStores", epilogue_stores(ctx));
  shared_hooks["epilogue"] = hook("float", "epilogue", epilogue_params, epilogue_body(ctx, g, s));
  shared_hooks["stats_slot"] =
      hook("float*", "stats_slot", element("batch", "row_tile", "n"), stats_slot_body(ctx, g, s));
  Result<StatsFinalizeBodies> finalize = stats_finalize_bodies(ctx, s);
  if (!finalize)
    return Error{finalize.error()};
  shared_hooks["stats_finalize"] = bool_hook("kStatsFinalize", ctx.step().finalizes_stats);
  shared_hooks["stats_counters"] = hook("unsigned int*", "stats_counters", args, finalize.value().counters);
  shared_hooks["sample_stats_slot"] =
      hook("float*", "sample_stats_slot",
           Params{{{"const FusegenArgs&", "args"}, {"long long", "batch"}, {"long long", "n"}}},
           finalize.value().sample_slot);
  shared_hooks["finalize_column"] =
      hook("void", "finalize_column",
           Params{{{"const FusegenArgs&", "args"}, {"long long", "n"}, {"FusegenWelford", "total"}}},
           finalize.value().finalize_column);
  shared_hooks["cols"] = hook("long long", "gemm_cols", args, returns(g.cols));
  shared_hooks["depth"] = hook("long long", "gemm_depth", args, returns(g.depth));
  // The channels-last copies run first, whichever template takes the GEMM:
  // copies of the call's arguments in the fusion's one copy launch, the
  // others in one pass right before this kernel. The copy that writes B (a
  // convolution's dense weight) also writes its tf32 small parts when
  // `b_small` is given.
  auto with_layout = [&](KernelSource source, BufferId b_small = kNoId) {
    std::vector<RearrangeSpec> before;
    for (RearrangeSpec copy : g.operand_copies) {
      if (copy.to == ctx.step().b_layout)
        copy.tf32_small = b_small;
      (ctx.plan().is_unwritten_argument(copy.source) ? source.argument_copies : before).push_back(std::move(copy));
    }
    if (!before.empty()) {
      KernelSource pass = rearrange_pass(ctx, before);
      source.scratch_used.insert(source.scratch_used.end(), pass.scratch_used.begin(), pass.scratch_used.end());
      source.leaders.insert(source.leaders.begin(), std::move(pass));
    }
    return source;
  };
  if (std::optional<int64_t> block_cols = narrow_block_cols(ctx, g, s))
    return with_layout(emit_narrow_gemm(ctx, g, s, *block_cols, shared_hooks));
  if (std::optional<SkinnyShape> skinny = skinny_shape(ctx, g, s))
    return emit_skinny_gemm(ctx, g, *skinny, shared_hooks);

  KernelSource source;
  source.template_file = "gemm.cu";
  auto& hooks = source.hooks;
  hooks.insert(shared_hooks.begin(), shared_hooks.end());
  hooks["tile_m"] = constant_hook("kTileM", kTile);
  hooks["tile_n"] = constant_hook("kTileN", kTile);
  Result<GemmVariant> chosen = choose_variant(ctx, g, s);
  if (!chosen)
    return Error{chosen.error()};
  GemmVariant& variant = chosen.value();
  variant.b_split = splits_b_once(ctx, variant);
  if (takes_fp16x3(ctx, g, variant))
    variant.inner_product = 3;
  hooks["block_m"] = constant_hook("kBlockM", variant.block_m);
  hooks["block_n"] = constant_hook("kBlockN", variant.block_n);
  hooks["tile_k"] = constant_hook("kTileK", variant.tile_k);
  hooks["threads"] = constant_hook("kThreads", kThreads);
  hooks["inner_product"] = constant_hook("kInnerProduct", variant.inner_product);
  hooks["stages"] = constant_hook("kStages", variant.stages);
  hooks["split_k"] = constant_hook("kSplitK", variant.split_k);
  hooks["block_begin"] = constant_hook("kBlockBegin", 0);
  // Rastered on sm_90 tensor cores where one block makes one output block
  // (measured there; a split tail takes its blocks the same way).
  const bool rastered = ctx.target().rastered_gemm_blocks && variant.inner_product != 0 && variant.split_k == 1;
  hooks["raster_rows"] = constant_hook("kRasterRows", rastered ? kRasterRowBlocks : 0);
  hooks["b_split"] = bool_hook("kBSplit", variant.b_split);
  hooks["b_small_address"] = hook("const float*", "b_small_address", element("b_base", "k", "n"),
                                  variant.b_split ? small_b_address(ctx, g) : returns("nullptr"));
  // 3xTF32's small parts of a convolution's dense weight come from its copy
  // (one pass fewer); else from a pass over B.
  const bool b_split_in_copy =
      variant.b_split && variant.inner_product == 1 &&
      std::any_of(g.operand_copies.begin(), g.operand_copies.end(),
                  [&](const RearrangeSpec& copy) { return copy.to == split_b_source(ctx); });
  if (variant.b_split && !b_split_in_copy) {
    source.leaders.push_back(b_split_pass(ctx, split_b_source(ctx), variant));
    source.scratch_used.push_back(ctx.step().b_split);
  }
  hooks["a_depth_table"] = constant_hook("kADepthTable", static_cast<int>(g.a_depth_table));
  hooks["a_vector"] = bool_hook("kAVector", g.a_vector);
  hooks["b_vector"] = bool_hook("kBVector", g.b_vector);
  hooks["a_affine"] = bool_hook("kAAffine", g.a_affine);
  hooks["shared_floats"] = constant_hook("kDynamicSharedFloats", static_cast<int>(variant.shared_floats()));
  hooks["a_along_k"] = bool_hook("kLoadAAlongK", g.a_along_k);
  hooks["b_along_k"] = bool_hook("kLoadBAlongK", g.b_along_k);
  hooks["epilogue_along_m"] = bool_hook("kEpilogueAlongM", g.out_along_m);
  hooks["norm_group"] = constant_hook("kNormGroup", s.norm_group);
  hooks["column_norm"] = bool_hook("kColumnNorm", s.column_norm);
  Result<std::vector<std::string>> column_stats = column_stats_body(ctx, s);
  if (!column_stats)
    return Error{column_stats.error()};
  hooks["column_stats"] = hook("void", "column_stats",
                               Params{{{"const FusegenArgs&", "args"},
                                       {"long long", "batch"},
                                       {"long long", "n"},
                                       {"float", "count"},
                                       {"float", "mean"},
                                       {"float", "m2"}}},
                               column_stats.value());
  hooks["norm_eps"] = "constexpr float kNormEps = " + eps + ";";
  hooks["stats_group"] = constant_hook("kStatsGroup", s.stats_group);
  hooks["row_reduce"] = constant_hook("kRowReduce", static_cast<int>(s.row_reduce));
  hooks["row_reduce_parts"] = bool_hook("kRowReduceParts", ctx.step().row_reduce_parts > 0);
  hooks["norm_stores"] = constant_hook("kNormStores", norm_stores(ctx, s));
  hooks["norm_apply"] = hook("float", "norm_apply", norm_params, norm_apply_body(ctx, s));
  Params row_params = batch_args;
  row_params.list.push_back({"long long", "m"});
  row_params.list.push_back({"long long", "n"});
  hooks["reduce_slot"] = hook("float*", "reduce_slot", row_params, reduce_slot_body(ctx, s));
  const bool wait_late = waits_late(ctx, variant);
  hooks["wait_late"] = bool_hook("kWaitLate", wait_late);
  hooks["entry"] = entry_hook(ctx, "kThreads, kMinBlocksPerSM", "gemm_main(args);",
                              variant.split_k > 1 ? "__cluster_dims__(kSplitK, 1, 1)" : "", "",
                              wait_late ? GridWait::Last : GridWait::First);

  SizeExpr column_blocks = grid_stride_blocks(ctx, g.launch_cols, variant.block_n, kMaxGridX);
  if (variant.split_k > 1)
    column_blocks = ctx.mul(column_blocks, ctx.constant(variant.split_k));
  source.launch.cluster = variant.split_k;
  source.launch.variant = std::to_string(variant.block_m) + "x" + std::to_string(variant.block_n) + " blocks, " +
                          (variant.inner_product == 2   ? "tf32 products"
                           : variant.inner_product == 3 ? "fp16x3 products (3xtf32 where operands leave fp16's range)"
                                                        : "3xtf32 products") +
                          (variant.split_k > 1 ? ", split-K " + std::to_string(variant.split_k) : "");
  source.launch.grid = {column_blocks, grid_stride_blocks(ctx, g.launch_rows, variant.block_m, kMaxGridYZ),
                        grid_stride_blocks(ctx, g.launch_batches, 1, kMaxGridYZ)};
  source.launch.block = kThreads;
  source.launch.shared_bytes = variant.shared_floats() * 4; // SIMT: static shared memory only
  if (s.reduce && ctx.step().row_reduce_parts == 0) {
    float start = s.row_reduce == RowReduce::Min ? std::numeric_limits<float>::infinity()
                                                 : -std::numeric_limits<float>::infinity();
    source.launch.fills.push_back({ctx.plan().buffer_of(s.reduce->result), start});
  }
  const std::optional<TailSplit> tail = tail_split(ctx, g, variant);
  hooks["block_end"] = constant_hook("kBlockEnd", tail ? tail->first_block : 0);
  if (tail) {
    GemmVariant split = variant;
    split.split_k = tail->split;
    KernelSource follower;
    follower.template_file = source.template_file;
    follower.launch.kind = KernelKind::Gemm;
    follower.scratch_used = source.scratch_used;
    follower.name_suffix = "_tail";
    follower.note = "the last " + std::to_string(tail->blocks) + " output blocks of " + ctx.kernel_name() +
                    ", each split over a cluster of " + std::to_string(tail->split) + " blocks";
    follower.hooks = hooks;
    follower.hooks["split_k"] = constant_hook("kSplitK", split.split_k);
    follower.hooks["shared_floats"] = constant_hook("kDynamicSharedFloats", static_cast<int>(split.shared_floats()));
    follower.hooks["block_end"] = constant_hook("kBlockEnd", 0);
    follower.hooks["block_begin"] = constant_hook("kBlockBegin", tail->first_block);
    follower.hooks["wait_late"] = bool_hook("kWaitLate", false); // it waits at its end
    follower.hooks["entry"] = entry_hook(ctx, "kThreads, kMinBlocksPerSM", "gemm_main(args);",
                                         "__cluster_dims__(kSplitK, 1, 1)", follower.name_suffix, GridWait::Last);
    follower.launch.cluster = split.split_k;
    follower.launch.variant = source.launch.variant + ", split over clusters of " + std::to_string(split.split_k);
    follower.launch.grid = {ctx.constant(tail->blocks * split.split_k), ctx.constant(1), ctx.constant(1)};
    follower.launch.block = kThreads;
    follower.launch.shared_bytes = split.shared_floats() * 4;
    source.followers.push_back(std::move(follower));
  }
  return with_layout(std::move(source), b_split_in_copy ? ctx.step().b_split : kNoId);
}

} // namespace fusegen::codegen
