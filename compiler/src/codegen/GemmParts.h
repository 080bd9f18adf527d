// The GEMM emitter's parts (EmitGemm.cpp): how a contraction maps onto
// templates/gemm.cu's batched [M, N] x K problem (GemmMapping.cpp), and the
// epilogue stages the plan gives the kernel with their hook bodies
// (GemmEpilogue.cpp). Internal to compiler/src/codegen.
#pragma once

#include "codegen/EmitContext.h"
#include "fusegen/Result.h"

#include "gemm/geometry.h" // templates/gemm/geometry.h

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fusegen::codegen {

// Geometry of templates/gemm.cu (static_asserted there); its shared-memory
// layout is templates/gemm/geometry.h, shared with the template.
constexpr int kTile = gemm_layout::kTile; // rows and columns of an epilogue tile
constexpr int64_t kMaxDepthTable = 4096;  // ints of static shared memory for A's depth offsets (16 KB)

// How a contraction maps onto the template's problem: C[b][m][n] =
// sum_k A(b, m, k) * B(b, k, n), and where element (b, m, n) lives in the
// contraction's output.
struct GemmMapping {
  std::string rows, cols, depth, batches; // device code
  SizeExpr launch_rows, launch_cols, launch_batches, launch_depth;
  bool a_along_k = true, b_along_k = true; // which index is contiguous in memory
  bool out_along_m = false;                // the output is contiguous along m (conv2d's pixels), not n
  // 16-byte loads: the contiguous extent (and every batch offset) is a
  // multiple of 4, so vectors at indices divisible by 4 are aligned and whole.
  bool a_vector = false, b_vector = false;
  // a_address() is affine in m for a fixed k (the cp.async path then steps
  // from one row's address to the next); false for a convolution's gathered
  // rows on that path, whose every copy computes its own address.
  bool a_affine = true;
  // Copies launched before the GEMM that write the scratch its operands read
  // (a convolution's channels-last copies, KernelStep::a_layout; rearrange_pass).
  std::vector<RearrangeSpec> operand_copies;
  std::vector<std::string> a_offset, b_offset, a_address, b_address; // hook bodies
  // A's addresses as a_row(m) + a table of a_depth_offset(k) (templates/gemm.cu
  // "a_depth_table"): K entries, or 0 for a_address() alone.
  int64_t a_depth_table = 0;
  std::vector<std::string> a_row, a_depth_offset;
  // Statements defining the output coordinates from (batch, m, n), and their names.
  std::vector<std::string> coord_lines;
  std::vector<std::string> coords;
  std::string bias; // added to the accumulator; empty without bias
  // The output is a plain [M, N] matrix with coordinates (m, n) and one batch:
  // what the row norm, row reduction and batch_norm statistics assume.
  bool is_matrix = false;
};

// The contraction's mapping (linear, matmul, a convolution), from its op
// traits; an error for what the GEMM kernel cannot address.
Result<GemmMapping> map_contraction(const EmitContext& ctx, const Node& node);
// A convolution's (any rank, forward or transposed): ConvMapping.cpp.
Result<GemmMapping> map_convolution(const EmitContext& ctx, const Node& node);

// True if `name` occurs in `lines` as a whole identifier.
bool mentions(const std::vector<std::string>& lines, const std::string& name);
// The node's operand for tensor parameter `param`, or kNoId.
ValueId operand(const Node& node, const char* param);
const Shape& shape_of(const EmitContext& ctx, ValueId value);
// Inserts `(void)name;` after the first `defined` lines of `body` for each of
// `names` the rest of the body does not use (decoded coordinates).
std::vector<std::string> void_unused(std::vector<std::string> body, size_t defined,
                                     const std::vector<std::string>& names);

// ---- epilogue stages ----

enum class RowReduce { None = 0, Min = 1, Max = 2 };

// What the kernel does after the contraction, read off its KernelStep.
struct Stages {
  const Node* contraction = nullptr;
  const Node* norm = nullptr;   // stage 1: group_norm / layer_norm over columns, or batch_norm (column_norm)
  const Node* reduce = nullptr; // stage 2: min / max over dim 1
  const Node* stats = nullptr;  // stats_out: batch_norm or group_norm
  int64_t norm_group = 0, stats_group = 0;
  RowReduce row_reduce = RowReduce::None;
  // A training batch_norm over the GEMM's rows, all of them in one block
  // (the planner's rule; templates/gemm.cu "column_norm").
  bool column_norm = false;
};

// What the kernel does after the contraction, read off its KernelStep.
Result<Stages> read_stages(const EmitContext& ctx, const GemmMapping& g);
// Hook bodies of the epilogue stages (templates/gemm.cu "epilogue",
// "norm_apply", "stats_slot", "column_stats", "reduce_slot").
std::vector<std::string> epilogue_body(const EmitContext& ctx, const GemmMapping& g, const Stages& s);
std::vector<std::string> norm_apply_body(const EmitContext& ctx, const Stages& s);
std::vector<std::string> stats_slot_body(const EmitContext& ctx, const GemmMapping& g, const Stages& s);
Result<std::vector<std::string>> column_stats_body(const EmitContext& ctx, const Stages& s);
std::vector<std::string> reduce_slot_body(const EmitContext& ctx, const Stages& s);
// Hook bodies of a GEMM that finalizes its batch_norm (KernelStep::
// finalizes_stats; "stats_counters", "sample_stats_slot", "finalize_column"):
// null pointers and nothing when it does not.
struct StatsFinalizeBodies {
  std::vector<std::string> counters, sample_slot, finalize_column;
};
Result<StatsFinalizeBodies> stats_finalize_bodies(const EmitContext& ctx, const Stages& s);
std::vector<std::string> returns(const std::string& expr);
// Values the "epilogue" / "norm_apply" hooks store per element (their
// FusegenStores' size: "epilogue_stores", "norm_stores").
int epilogue_stores(const EmitContext& ctx);
int norm_stores(const EmitContext& ctx, const Stages& s);

// ---- few rows: templates/skinny_gemm.cu (SkinnyGemm.cpp) ----

// The template's shape for a GEMM it takes (its hooks of the same names).
struct SkinnyShape {
  int warps = 8, rows = 1, cols = 1, vector = 1;
  bool b_along_k = true;
  // Tiled (13 to 48 rows): A and B staged in shared memory, kSplit blocks
  // of a cluster over k (templates/skinny_gemm.cu).
  bool tiled = false;
  int tile_cols = 128, split = 1, stages = 4;
  int64_t shared_bytes() const; // the tiled form's dynamic shared memory
};

// The skinny template's shape for the kernel's GEMM, or nullopt where it does
// not take it: rows unknown or more than a few (16; 64 tiled, in strict
// precision along k), a convolution, an epilogue beyond pointwise ops, a
// forced gemm.cu block.
std::optional<SkinnyShape> skinny_shape(const EmitContext& ctx, const GemmMapping& g, const Stages& s);
// `shared_hooks`: the hooks every GEMM template declares alike (EmitGemm.cpp).
KernelSource emit_skinny_gemm(const EmitContext& ctx, const GemmMapping& g, const SkinnyShape& shape,
                              const std::map<std::string, std::string>& shared_hooks);

} // namespace fusegen::codegen
