// A fusion plan: the kernels a fusion runs as, which IR nodes each computes,
// and the device buffers between them. Built by plan_fusion (Planner.h);
// consumed by the CUDA generator and printed by `fusegen plan`.
//
// Each kernel is one of a few kinds. Its nodes are organised as an optional
// pointwise prologue (applied to the main input as it is loaded) followed by
// stages: an anchor op (contraction, normalization, reduction, window; none
// for elementwise kernels) and the pointwise ops applied to its result.
#pragma once

#include "fusegen/IR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusegen {

enum class KernelKind {
  Elementwise,   // pointwise nodes over one output domain
  Gemm,          // linear / matmul / conv2d (implicit GEMM) with fused epilogue stages
  RowReduce,     // normalization or reduction over trailing (contiguous) dims
  Window,        // max/avg/adaptive pooling with prologue and epilogue
  ColumnStats,   // per-column partial statistics of a tensor (batch_norm input not from a GEMM)
  StatsFinalize, // combines partial statistics; updates batch_norm running stats
  GenericReduce, // fallback: reduction or normalization over non-trailing dims
};
const char* kernel_kind_name(KernelKind kind);

using BufferId = uint32_t;

// Device memory a plan touches. Arguments and outputs are the caller's;
// intermediates, statistics and scratch live in the workspace. Scratch is
// room a kernel may use for its own ends (a strict GEMM's B split once per
// call); the code generator gives it no memory when the kernel does not.
struct PlanBuffer {
  enum class Role { Argument, Output, Intermediate, Statistics, Scratch };
  std::string name;
  Role role = Role::Intermediate;
  ValueId value = kNoId; // the IR value held (not for statistics)
  Shape shape;           // in floats
  // Per dim: the dim's extent is ceil(shape[i] / ceil_div[i]) (partial
  // statistics per row tile); empty or 1 means the dim as is.
  std::vector<int64_t> ceil_div;
  std::string what;      // for statistics: what the floats are
  // Partial results of a row minimum/maximum across GEMM tiles (KernelStep::
  // row_reduce_parts): what a reader applies over the parts (the
  // allocation's dim 0) to get the value; None for a plain buffer.
  enum class Combine : uint8_t { None, Min, Max };
  Combine combine = Combine::None;
  // An intermediate stored with dim 1 (the channels) moved last, as the
  // convolution that alone reads it loads its input (KernelStep::a_layout):
  // its elementwise producer writes it so, and no copy pass runs.
  bool channels_last = false;
};
const char* buffer_role_name(PlanBuffer::Role role);
const char* combine_name(PlanBuffer::Combine combine); // "min", "max", "" for None

struct Stage {
  NodeId op = kNoId;             // the anchor; kNoId for a pure pointwise stage
  std::vector<NodeId> pointwise; // applied to the anchor's result, in order
};

struct KernelStep {
  KernelKind kind = KernelKind::Elementwise;
  std::string name;               // C symbol of the kernel
  std::vector<NodeId> prologue;   // pointwise nodes applied while loading the main input
  std::vector<Stage> stages;
  // The normalization whose partial statistics this kernel's epilogue emits
  // (finished by a later kernel), and the one whose statistics it applies.
  NodeId stats_out = kNoId;
  NodeId stats_in = kNoId;
  // The GEMM of stats_out (a batch_norm after a convolution) finalizes the
  // statistics itself: its last blocks merge the partials, write the
  // finalized statistics and update the running stats (no finalize kernel).
  bool finalizes_stats = false;
  // A strict linear over many rows: scratch for its weight's tf32 small
  // parts, which the GEMM may split once per call instead of in every block.
  BufferId b_split = kNoId;
  // A convolution over many input channels: scratch for channels-last copies
  // of its input ([N, spatial..., C]) and weight ([O, taps..., C/groups]),
  // written once per call, from which both operands load as 16-byte vectors
  // along k on the tensor-core path.
  BufferId a_layout = kNoId, b_layout = kNoId;
  // A GEMM whose row minimum/maximum crosses its 64-column tiles: 0 when the
  // tiles combine it with atomics into the result (filled with +-inf first);
  // P > 0 when each of the P tiles writes its own partial and the readers
  // (elementwise kernels) combine them: no fill, no atomics.
  int64_t row_reduce_parts = 0;
  std::vector<BufferId> reads;  // buffers read (sorted)
  std::vector<BufferId> writes; // buffers written (sorted)
  std::vector<std::string> notes; // why the kernel looks the way it does

  // Every IR node computed here, prologue first, in program order.
  std::vector<NodeId> nodes() const;
  NodeId anchor() const; // first stage's op, or kNoId
};

// Planner assumptions that the code generator must honour.
struct PlanOptions {
  int gemm_tile_m = 64; // rows of a GEMM output tile
  int gemm_tile_n = 64; // columns of a GEMM output tile: whole norm groups must fit
};

struct Plan {
  Fusion fusion; // the planned fusion (possibly symbolic)
  PlanOptions options;
  std::vector<PlanBuffer> buffers;
  std::vector<KernelStep> kernels;

  const PlanBuffer& buffer(BufferId id) const { return buffers.at(id); }
  // The buffer holding `value`, or kNoId if it is not materialized.
  BufferId buffer_of(ValueId value) const;
  // The kernel that computes `node`.
  size_t kernel_of(NodeId node) const;
  // A caller's argument that no kernel writes (batch_norm's running stats
  // are written): its values are there before the first kernel.
  bool is_unwritten_argument(BufferId id) const;
};

} // namespace fusegen
