// The front-end pass pipeline: a straight, named list of passes over each
// fusion. Later stages (planning, code generation) append their own lists.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"

#include <functional>
#include <string>
#include <vector>

namespace fusegen {

struct Pass {
  std::string name;
  // Returns false when it reported errors; the pipeline stops there.
  std::function<bool(Fusion&, Diagnostics&)> run;
};

const std::vector<Pass>& frontend_passes();
// Names accepted by --dump-after: "build-ir", every pass name, and "all".
std::vector<std::string> dump_points();

} // namespace fusegen
