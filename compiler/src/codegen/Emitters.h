// One emitter per kernel kind: fills the hooks of that kind's template for a
// planned kernel and describes its launch. Each lives in Emit<Kind>.cpp.
#pragma once

#include "codegen/EmitContext.h"

namespace fusegen::codegen {

Result<KernelSource> emit_elementwise(const EmitContext& ctx);
Result<KernelSource> emit_gemm(const EmitContext& ctx);
Result<KernelSource> emit_row_reduce(const EmitContext& ctx);
Result<KernelSource> emit_generic_reduce(const EmitContext& ctx);
Result<KernelSource> emit_window(const EmitContext& ctx);
Result<KernelSource> emit_column_stats(const EmitContext& ctx);
Result<KernelSource> emit_stats_finalize(const EmitContext& ctx);

} // namespace fusegen::codegen
