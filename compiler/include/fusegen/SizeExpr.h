// A size known as a number (specialized dims) and/or as a C expression over
// the host launcher's dim parameters: how generated code and launch plans
// carry extents, grids and byte counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fusegen {

struct SizeExpr {
  std::string c;                // e.g. "((N + 63) / 64)"
  std::optional<int64_t> value; // when every dim involved is constant
  friend bool operator==(const SizeExpr&, const SizeExpr&) = default;
};

} // namespace fusegen
