// Building hook bodies whose declarations (indices, coordinates, loads) are
// emitted only when used: nvcc rejects unused locals under -Werror, and a
// broadcast operand often needs only some coordinates.
#pragma once

#include "codegen/EmitContext.h"
#include "codegen/PointwiseEmitter.h"

#include <string>
#include <utility>
#include <vector>

namespace fusegen::codegen {

// True if `name` occurs in `text` as a whole identifier.
bool uses(const std::string& text, const std::string& name);

// A hook body: declarations first (kept only when the statements, or a later
// kept declaration, use them; each may use only those added before it), then
// statements.
class Body {
public:
  void declare(std::string name, std::string line) { decls_.push_back({std::move(name), std::move(line)}); }
  std::vector<std::string>& lines() { return lines_; }

  // The finished body; `params` that nothing uses are cast to void.
  std::vector<std::string> finish(const std::vector<std::string>& params) const;

private:
  std::vector<std::pair<std::string, std::string>> decls_;
  std::vector<std::string> lines_;
};

// c0..c{rank-1}.
std::vector<std::string> coord_names(size_t rank);

// Declares c0..c{rank-1}, the coordinates of flat index `index` in `shape`.
void declare_coordinates(const EmitContext& ctx, const Shape& shape, const std::string& index, Body& body);
// The same for an `index` that walks `shape` (rank 3 or more) channels-last:
// dim 1 varies fastest, then the last dim, and so on.
void declare_channels_last_coordinates(const EmitContext& ctx, const Shape& shape, const std::string& index,
                                       Body& body);

// Memory operands of this kernel's nodes with exactly the domain's shape load
// at the flat index itself (no coordinate arithmetic): declared as x<id> and
// bound in `pointwise`.
void bind_domain_loads(const EmitContext& ctx, const Shape& domain, const std::string& index, Body& body,
                       PointwiseEmitter& pointwise);

} // namespace fusegen::codegen
