// The spec front end as one call: parse, build the typed IR, run the pass
// pipeline. What the CLI, the tests and (later) the runtime use.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/IR.h"

#include <optional>
#include <string>

namespace fusegen {

struct FrontendOptions {
  // Print the IR after this pass ("all" for every pass); empty for none.
  std::string dump_after;
  // Where dumps go (stderr when null).
  std::string* dump_sink = nullptr;
};

// Compiles buffer `file` of `sources`. Returns the module when there were no
// errors; diagnostics (errors and warnings) are in `diags` either way.
std::optional<Module> compile_spec(const SourceManager& sources, uint32_t file, Diagnostics& diags,
                                   const FrontendOptions& options = {});
} // namespace fusegen
