// Checks the IR's structural invariants (ids, topological order, operand
// slots and types, outputs). A failure is a compiler bug, reported as an
// "internal error" diagnostic rather than an abort.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"

namespace fusegen {

bool verify_fusion(const Fusion& fusion, Diagnostics& diags);

} // namespace fusegen
