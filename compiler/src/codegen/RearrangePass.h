// The passes that rearrange operands once per call before the kernels that
// read them (RearrangeSpec): one launch of templates/elementwise.cu over the
// destinations of all `copies`, one after another.
#pragma once

#include "codegen/EmitContext.h"
#include "codegen/RearrangeSpec.h"

#include <vector>

namespace fusegen::codegen {

// Four channels of one element per float4 store where every copy's channels
// allow; with a copy's `tf32_small` each value's tf32 small part beside it.
// Named and described by the copy alone, else "_operand_copies" and the
// copies' notes.
KernelSource rearrange_pass(const EmitContext& ctx, const std::vector<RearrangeSpec>& copies);

} // namespace fusegen::codegen
