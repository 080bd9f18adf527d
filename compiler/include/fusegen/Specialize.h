// Shape specialization: binds a fusion's symbolic dims to concrete sizes
// (from --dims or from the tensors of a call) and re-runs shape inference so
// every dim is a constant and every value-dependent check has been made.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"
#include "fusegen/Result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fusegen {

using DimBindings = std::map<std::string, int64_t>;

// Binds symbols from the shapes of the arguments of a call. Errors: a missing
// or unknown tensor, a wrong rank, a constant dim that differs, a symbol bound
// two ways, a symbol fixed by the spec bound to something else.
Result<DimBindings> bind_dims(const Fusion& fusion,
                              const std::map<std::string, std::vector<int64_t>>& shapes);

// Checks user-given bindings (e.g. `--dims N=128`): every symbol of the fusion
// bound, no unknown symbol, values positive and matching fixed dims.
Status check_bindings(const Fusion& fusion, const DimBindings& dims);

// Returns the fusion with every dim constant. Errors from re-running shape
// inference are reported at the nodes' locations.
std::optional<Fusion> specialize(const Fusion& fusion, const DimBindings& dims, Diagnostics& diags);

} // namespace fusegen
