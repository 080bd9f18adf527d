// Text forms of a fusion: a readable one for --dump-after and `fusegen check`,
// and a canonical one (no local names, no locations) whose hash is the
// fusion's fingerprint.
#pragma once

#include "fusegen/IR.h"

#include <string>

namespace fusegen {

std::string print_fusion(const Fusion& fusion);
// Stable under renaming of local (intermediate) names and under whitespace and
// comments in the spec; includes argument and output names, which are part of
// the fusion's calling interface.
std::string canonical_form(const Fusion& fusion);
// SHA-256 of canonical_form, as 64 hex digits.
std::string fingerprint(const Fusion& fusion);

} // namespace fusegen
