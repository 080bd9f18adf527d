// A pass that rearranges an operand into scratch once per call before the
// kernel that reads it (a convolution's channels-last copies): what to copy,
// from where, and how element `index` of the destination finds its source.
// The passes themselves are built by RearrangePass.cpp.
#pragma once

#include "fusegen/Plan.h"
#include "fusegen/SizeExpr.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusegen::codegen {

// Writes scratch `to` element by element: `decode` defines `from` (an offset
// into the source buffer) and `inside` (false: a zero) for element `index`;
// four consecutive destination elements are four channels, `channel_stride`
// apart in the source.
struct RearrangeSpec {
  BufferId to = kNoId;
  BufferId source = kNoId;         // the buffer read
  std::string from;                // the source's buffer expression
  std::vector<std::string> decode; // statements defining `from` and `inside`
  SizeExpr numel;
  std::string numel_text; // device code
  int64_t channels = 1, channel_stride = 1;
  // Where the copy also writes each value's tf32 small part (a strict GEMM's
  // B split once per call, KernelStep::b_split), or kNoId: one pass instead
  // of a copy and a split after it.
  BufferId tf32_small = kNoId;
  std::string suffix, note;
};

} // namespace fusegen::codegen
