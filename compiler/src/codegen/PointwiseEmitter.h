// Emits a kernel's pointwise IR nodes as C statements for one element of a
// domain: `const float v12 = fusegen_relu(v11);`. Values are produced on
// demand and memoized: bound expressions first (an accumulator, a loaded
// input), then pointwise nodes of this kernel, constants as literals, and
// anything else is loaded from its buffer at the element's coordinates
// (with broadcasting).
#pragma once

#include "codegen/EmitContext.h"

#include <map>
#include <string>
#include <vector>

namespace fusegen::codegen {

class PointwiseEmitter {
public:
  // `coords` are C expressions of the element's coordinates in `domain`.
  PointwiseEmitter(const EmitContext& ctx, std::vector<std::string>& lines, Shape domain,
                   std::vector<std::string> coords);

  // A value already available as a C float expression.
  void bind(ValueId value, std::string expr);
  // For the apply step of a split normalization: expressions of the mean and
  // 1/std that hold for the current element, and of its weight and bias
  // (each left empty: read from the finalized statistics buffer or the
  // param's buffer).
  struct NormTerms {
    std::string mean, rstd, weight, bias;
  };
  void bind_stats(NodeId norm, NormTerms terms);
  // The C expression of `value` at the current element.
  std::string value(ValueId value);

private:
  // Emits the line of one value whose operands are all available.
  void materialize(ValueId value);
  // The operands compute() asks value() for.
  std::vector<ValueId> operands_computed_from(const Node& node) const;
  std::string compute(const Node& node);
  std::string load(ValueId value);
  std::string channel_coord(size_t rank) const;
  std::string affine(const Node& node, const std::string& normalized, const std::string& channel,
                     const NormTerms* bound = nullptr);
  std::string apply_batch_norm_eval(const Node& node);
  std::string apply_split_norm(const Node& node);

  const EmitContext& ctx_;
  std::vector<std::string>& lines_;
  Shape domain_;
  std::vector<std::string> coords_;
  std::map<ValueId, std::string> values_;
  std::map<NodeId, NormTerms> stats_;
  std::vector<bool> in_kernel_; // node id -> computed by this kernel
};

} // namespace fusegen::codegen
