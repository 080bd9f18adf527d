// Small helpers shared by the runtime commands (warmup, cache, run --device).
#pragma once

#include "fusegen/Specialize.h"

#include <string>

namespace fusegen::cli {

// "N=128 M=64", or "(no dims)".
std::string dims_summary(const DimBindings& dims);

} // namespace fusegen::cli
