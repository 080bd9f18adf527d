// The statements that finish a training batch_norm's statistics, shared by
// the stats-finalize kernel, an apply that merges the partials itself (few
// rows) and a convolution GEMM that finalizes them in its last blocks: 1/std
// from the merged (count, mean, M2), and the running stats updated as torch
// does.
#pragma once

#include "codegen/EmitContext.h"

#include <string>
#include <vector>

namespace fusegen::codegen {

// `1.0f / sqrtf(biased variance + eps)` of the FusegenWelford `total`.
std::string batch_norm_rstd(const std::string& total, double eps);

// Statements writing the FusegenWelford `total`'s mean (declared `mean`) and
// 1/std (biased variance) to finalized statistics `stats` at [2 * row] and
// [2 * row + 1].
std::vector<std::string> finalized_stat_writes(const EmitContext& ctx, BufferId stats, const std::string& row,
                                               double eps);

// A training batch_norm's finalize at `channel`: those writes, then the
// running stats updated (running_stat_updates).
Result<std::vector<std::string>> batch_norm_finalize(const EmitContext& ctx, const Node& node, BufferId stats,
                                                     const std::string& channel);

// Statements updating running_mean and running_var at `channel` from the
// batch's `mean` and FusegenWelford `total` (momentum-weighted, unbiased
// variance); none when the node updates nothing. An error when eps or the
// momentum is not finite or a running stat is not a `state` tensor.
Result<std::vector<std::string>> running_stat_updates(const EmitContext& ctx, const Node& node,
                                                      const std::string& channel, const std::string& mean,
                                                      const std::string& total);

} // namespace fusegen::codegen
