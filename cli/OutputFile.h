// Files the commands write (generated .cu and .h): never the spec they read,
// never half-written, and a failure says why.
#pragma once

#include "fusegen/Result.h"

#include <string>
#include <vector>

namespace fusegen::cli {

// Writes `text` to `path` through a temporary file beside it, renamed over
// `path` once complete. Refuses a path that is one of `inputs` (the spec: `-o
// spec.fg` would destroy it) or a directory; errors name the path and the
// system's reason ("cannot write out/k.cu: No such file or directory").
Status write_output_file(const std::string& path, const std::string& text, const std::vector<std::string>& inputs);

} // namespace fusegen::cli
