// The CPU reference interpreter: runs a fusion op by op in float64 with each
// op's reference implementation. The oracle for every GPU result.
#pragma once

#include "fusegen/HostTensor.h"
#include "fusegen/IR.h"
#include "fusegen/Result.h"

#include <functional>
#include <map>
#include <string>

namespace fusegen {

struct InterpreterResult {
  std::map<std::string, HostTensor> outputs; // by output name
  std::map<std::string, HostTensor> state;   // every state argument, after the run
};

// The interpreter keeps every value of a run in float64 on the host: a
// fusion whose values together hold more elements than this is refused with
// an error instead of failing to allocate (2^31 elements is 16 GiB).
inline constexpr int64_t kMaxInterpreterElements = int64_t{1} << 31;
// `concrete` must be specialized. Errors name the total and the limit.
Status check_interpreter_size(const Fusion& concrete);

struct InterpreterOptions {
  // Threads the contractions' references may use; 0: one per hardware
  // thread. Results are the same for any count.
  int threads = 0;
  // Called before each node runs (index in the specialized fusion, count),
  // e.g. to show progress on a long run.
  std::function<void(size_t index, size_t count, const Node& node)> on_node = {};
};

// `arguments` holds every input, param and state tensor by name. Symbolic dims
// are bound from their shapes; a missing, extra or mis-shaped tensor is an error.
Result<InterpreterResult> interpret(const Fusion& fusion, const std::map<std::string, HostTensor>& arguments,
                                    const InterpreterOptions& options = {});

} // namespace fusegen
