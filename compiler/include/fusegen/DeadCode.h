// Removes nodes whose results reach no output and that update no state, then
// renumbers values and nodes densely (arguments keep their order).
#pragma once

#include "fusegen/IR.h"

namespace fusegen {

void eliminate_dead_code(Fusion& fusion);

} // namespace fusegen
