// Placeholder until the generic_reduce emitter lands (being written now).
#include "codegen/Emitters.h"

namespace fusegen::codegen {

Result<KernelSource> emit_generic_reduce(const EmitContext&) { return Error{"no emitter for generic_reduce kernels yet"}; }

} // namespace fusegen::codegen
