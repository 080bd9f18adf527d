// The CPU reference interpreter: runs a fusion op by op in float64 with each
// op's reference implementation. The oracle for every GPU result.
#pragma once

#include "fusegen/HostTensor.h"
#include "fusegen/IR.h"
#include "fusegen/Result.h"

#include <map>
#include <string>

namespace fusegen {

struct InterpreterResult {
  std::map<std::string, HostTensor> outputs; // by output name
  std::map<std::string, HostTensor> state;   // every state argument, after the run
};

// `arguments` holds every input, param and state tensor by name. Symbolic dims
// are bound from their shapes; a missing, extra or mis-shaped tensor is an error.
Result<InterpreterResult> interpret(const Fusion& fusion, const std::map<std::string, HostTensor>& arguments);

} // namespace fusegen
