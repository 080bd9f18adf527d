// The statements that finish a training batch_norm's statistics, shared by
// the stats-finalize kernel and an apply that merges the partials itself
// (few rows): 1/std from the merged (count, mean, M2), and the running
// stats updated as torch does.
#pragma once

#include "codegen/EmitContext.h"

#include <string>
#include <vector>

namespace fusegen::codegen {

// `1.0f / sqrtf(biased variance + eps)` of the FusegenWelford `total`.
std::string batch_norm_rstd(const std::string& total, double eps);

// Statements updating running_mean and running_var at `channel` from the
// batch's `mean` and FusegenWelford `total` (momentum-weighted, unbiased
// variance); none when the node updates nothing. An error when eps or the
// momentum is not finite or a running stat is not a `state` tensor.
Result<std::vector<std::string>> running_stat_updates(const EmitContext& ctx, const Node& node,
                                                      const std::string& channel, const std::string& mean,
                                                      const std::string& total);

} // namespace fusegen::codegen
