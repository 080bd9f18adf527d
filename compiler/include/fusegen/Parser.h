// Spec front end: text -> ast::SpecFile. Syntax errors are reported to
// Diagnostics with locations; the parser recovers at statement boundaries so
// several errors can be reported in one run.
#pragma once

#include "fusegen/Ast.h"
#include "fusegen/Diagnostics.h"

namespace fusegen {

// Parses buffer `file` of `sources`. Always returns a tree (possibly partial);
// check `diags.has_errors()`.
ast::SpecFile parse_spec(const SourceManager& sources, uint32_t file, Diagnostics& diags);

} // namespace fusegen
