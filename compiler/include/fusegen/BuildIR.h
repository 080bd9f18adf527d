// Semantic analysis: ast::SpecFile -> typed IR. Resolves names, matches call
// arguments against the op registry's signatures, materializes scalar
// literals, and runs every op's shape inference. Errors go to Diagnostics with
// the location of the offending name, argument or call.
#pragma once

#include "fusegen/Ast.h"
#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"

namespace fusegen {

// Returns the module built so far; it is only meaningful when `diags` reports
// no errors.
Module build_ir(const ast::SpecFile& spec, Diagnostics& diags);

} // namespace fusegen
