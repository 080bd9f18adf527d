#include "fusegen/Passes.h"

#include "fusegen/DeadCode.h"
#include "fusegen/Verifier.h"

namespace fusegen {

const std::vector<Pass>& frontend_passes() {
  static const std::vector<Pass> passes = {
      {"verify", verify_fusion},
      {"dead-code",
       [](Fusion& fusion, Diagnostics&) {
         eliminate_dead_code(fusion);
         return true;
       }},
      {"verify-final", verify_fusion},
  };
  return passes;
}

std::vector<std::string> dump_points() {
  std::vector<std::string> names = {"build-ir"};
  for (const Pass& pass : frontend_passes())
    names.push_back(pass.name);
  names.push_back("all");
  return names;
}

} // namespace fusegen
