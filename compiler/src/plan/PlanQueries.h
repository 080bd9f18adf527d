// Small questions about IR nodes that the planner's passes share.
#pragma once

#include "fusegen/IR.h"
#include "fusegen/OpRegistry.h"

#include <vector>

namespace fusegen::plan {

const OpDef& op_of(const Node& node);
bool is_pointwise(const Node& node); // pointwise, identity or an eval-mode batch_norm
bool is_constant(const Node& node);
const OpTraits& traits_of(const Node& node);
bool is_column_norm(const Node& node); // statistics over all but the channel dim (batch_norm)
bool is_training_batch_norm(const Node& node);
// A reduction to the minimum or maximum (values only).
bool is_min_max(const Node& node);
// A normalization by mean and variance over trailing dims of each row
// (group_norm, layer_norm, instance_norm; not softmax, not batch_norm).
bool is_row_moments(const Node& node);
// The number of channel groups of a per-(sample, group) statistic
// (group_norm's num_groups); 0 for ops whose statistic is not grouped.
int64_t channel_groups(const Node& node);
// Users of every value (node ids, ascending).
std::vector<std::vector<NodeId>> value_users(const Fusion& fusion);
bool is_output(const Fusion& fusion, ValueId value);
// The dims a reduction or normalization reduces over, normalized and sorted.
std::vector<int64_t> reduced_dims(const Fusion& fusion, const Node& node);
// True if `dims` are exactly the last dims of a tensor of `rank`.
bool are_trailing(const std::vector<int64_t>& dims, size_t rank);
// For a row-moments normalization over dim 1 of a 2-D input [rows, C]: the
// channels per statistic (C / groups for group_norm, C for a layer_norm over
// the last dim); 0 otherwise.
int64_t row_group_width(const Fusion& fusion, const Node& node);
// Whether a linear's or matmul's operands load as 16-byte vectors: their
// contiguous extents (the depth; matmul's B also its columns) are known
// multiples of 4. The GEMM kernel's vector loads, and with them its 128-row
// blocks, need it; the planner asks before fusing a batch_norm over 128 rows.
struct VectorOperands {
  bool a = false, b = false;
};
VectorOperands vector_operands(const Fusion& fusion, const Node& contraction);

} // namespace fusegen::plan
