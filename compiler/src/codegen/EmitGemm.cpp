// Placeholder until the gemm emitter lands (being written now).
#include "codegen/Emitters.h"

namespace fusegen::codegen {

Result<KernelSource> emit_gemm(const EmitContext&) { return Error{"no emitter for gemm kernels yet"}; }

} // namespace fusegen::codegen
