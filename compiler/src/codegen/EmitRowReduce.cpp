// Placeholder until the row_reduce emitter lands (being written now).
#include "codegen/Emitters.h"

namespace fusegen::codegen {

Result<KernelSource> emit_row_reduce(const EmitContext&) { return Error{"no emitter for row_reduce kernels yet"}; }

} // namespace fusegen::codegen
