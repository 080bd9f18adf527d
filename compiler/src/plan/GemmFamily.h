// The GEMM kernel family's answers to "can this node join this GEMM kernel"
// (templates/gemm.cu: a contraction, then optionally one epilogue stage of a
// row norm or a column norm, then a row minimum/maximum; or the partial
// statistics of a norm that a later kernel applies). The planner asks these
// and nothing else about GEMM epilogues; docs/fusion.md states the rules.
#pragma once

#include "fusegen/Plan.h"

#include <string>

namespace fusegen::plan {

// An answer and the plan note that explains it (empty: nothing worth saying).
struct JoinAnswer {
  bool joins = false;
  std::string note;
};

// Whether the rows of the contraction's [M, C] result are rows of the GEMM
// itself (linear, or matmul of two matrices), so a tile holds whole rows.
bool result_rows_are_gemm_rows(const Fusion& fusion, const Node& contraction);

// The GEMM kernel `gemm` (its contraction alone so far) takes a row norm
// (group_norm/layer_norm over rows of [M, C]) whose groups fit a tile: the
// tile computes the statistics itself. `sole_use`: nothing else reads the
// norm's input.
JoinAnswer gemm_takes_row_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use,
                               const PlanOptions& options);

// A batched forward convolution: its GEMM rows are each sample's output
// positions (batch = sample and conv group), every one of them stored. Such
// a GEMM can emit per-channel partial statistics over its row tiles.
bool convolution_rows_are_positions(const Fusion& fusion, const Node& contraction);

// A GEMM kernel whose result a training batch_norm reads and nothing else: a
// 2-D result whose rows are the GEMM's, or a batched forward convolution's
// (the precondition of both batch_norm answers below).
bool gemm_feeds_batch_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use);

// The GEMM kernel takes the whole training batch_norm when one block holds
// all its rows (N known, at most one tile of rows, or 128 with vector
// operands): the block normalizes each column itself ("column_norm").
JoinAnswer gemm_takes_batch_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm,
                                 const PlanOptions& options);

// The GEMM kernel with a fused row norm takes a following min/max over dim 1
// of its 2-D result: per-tile partial results combined across tiles.
JoinAnswer gemm_takes_row_min_max(const Fusion& fusion, const KernelStep& gemm, const Node& reduce);

// The convolution kernel emits partial statistics per (sample, channel
// group, row tile) of a grouped norm (group_norm) of its result, which a
// later kernel applies: each norm group lies in one column tile and one
// convolution group.
JoinAnswer gemm_emits_group_statistics(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use,
                                       const PlanOptions& options);

// The note of a row min/max fused with atomics (partial_row_reductions
// rewrites it when the readers combine the parts instead).
std::string row_reduce_atomics_note(const std::string& op);

// Whether a convolution reads channels-last copies of its input and weight
// (KernelStep::a_layout): constant channel and spatial dims, at least 16
// input channels per group in multiples of 4, and a GEMM the narrow kernel
// does not take (more than 64 columns or a depth above 128).
bool conv_reads_channels_last(const Fusion& fusion, const Node& conv);
// A transposed convolution's kernel taps per output phase (the most any
// phase has): per dim ceil(k / (stride / gcd(stride, dilation))).
int64_t transposed_phase_taps(const Fusion& fusion, const Node& conv);

} // namespace fusegen::plan
