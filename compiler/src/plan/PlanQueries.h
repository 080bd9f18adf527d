// Small questions about IR nodes that the planner's passes share.
#pragma once

#include "fusegen/IR.h"
#include "fusegen/OpRegistry.h"

#include <vector>

namespace fusegen::plan {

const OpDef& op_of(const Node& node);
bool is_pointwise(const Node& node); // pointwise, identity or an eval-mode batch_norm
bool is_constant(const Node& node);
bool is_training_batch_norm(const Node& node);
// Users of every value (node ids, ascending).
std::vector<std::vector<NodeId>> value_users(const Fusion& fusion);
bool is_output(const Fusion& fusion, ValueId value);
// The dims a reduction or normalization reduces over, normalized and sorted.
std::vector<int64_t> reduced_dims(const Fusion& fusion, const Node& node);
// True if `dims` are exactly the last dims of a tensor of `rank`.
bool are_trailing(const std::vector<int64_t>& dims, size_t rank);
// Channels per group for group_norm, or the normalized width for a
// layer_norm over one trailing dim, when the input is 2-D [rows, C]; 0 otherwise.
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
