// Values of options that several commands take (--arch, --precision),
// checked with messages that name the form expected.
#pragma once

#include "fusegen/IR.h"
#include "fusegen/Result.h"

#include <optional>
#include <string>

namespace fusegen::cli {

// --arch: "sm_90" -> 90, for an arch fusegen supports (target_for_arch).
Result<int> parse_sm_arch(const std::string& text);

// --precision: "" -> nullopt (each fusion's own), "strict", "tf32".
Result<std::optional<Precision>> parse_precision(const std::string& text);

// --strict-product: "" -> nullopt (the generator's choice), "3xtf32", "fp16x3".
Result<std::optional<StrictProduct>> parse_strict_product_option(const std::string& text);

} // namespace fusegen::cli
