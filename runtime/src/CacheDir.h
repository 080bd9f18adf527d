// Choosing, creating and vetting the disk cache directory. The cache holds
// code the runtime loads onto the GPU, so a directory others can write to is
// never used.
#pragma once

#include "fusegen/CacheAdmin.h"
#include "fusegen/Result.h"

#include <string>

namespace fusegen::runtime {

// Creates `path` (and missing parents) with mode 0700 if `create` and it is
// missing, then checks that it is a directory, owned by this user and not
// group- or world-writable. The error says why it cannot be used.
Status prepare_cache_dir(const std::string& path, bool create);

} // namespace fusegen::runtime
