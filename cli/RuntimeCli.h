// Small helpers shared by the runtime commands (warmup, cache, run --device).
#pragma once

#include "fusegen/IR.h"
#include "fusegen/Result.h"
#include "fusegen/Specialize.h"

#include <optional>
#include <string>

namespace fusegen::cli {

// "" -> nullopt (each fusion's own), "strict", "tf32".
Result<std::optional<Precision>> parse_precision(const std::string& text);
// "N=128 M=64", or "(no dims)".
std::string dims_summary(const DimBindings& dims);

} // namespace fusegen::cli
