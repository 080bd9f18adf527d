// Finds and checks a template's hooks with Clang (the only LLVM-dependent
// part of fusegen-template-tool).
#pragma once

#include "HeaderWriter.h"
#include "fusegen/TemplateHooks.h"

#include <optional>
#include <vector>
#include <string>
#include <vector>

namespace fusegen::template_tool {

struct ClangSetup {
  std::string resource_dir;  // Clang's resource dir, for its CUDA headers
  std::string prelude;       // forced include declaring CUDA keywords and intrinsics
  std::vector<std::string> include_dirs;  // -I for what included templates include
};

// Parses `text`, the contents of `path`, as CUDA device code and checks its
// hooks against `spec`: each expected hook declared exactly once at namespace
// scope with the expected kind, name and signature, and no other hooks.
// Diagnostics go to stderr as `FILE:LINE:COL: error: MESSAGE`. Returns the
// hooks in source order, or nullopt after any error.
std::optional<std::vector<LocatedHook>> find_hooks(const std::string& path,
                                                   const std::string& text,
                                                   const templates::TemplateSpec& spec,
                                                   const ClangSetup& setup);

}  // namespace fusegen::template_tool
