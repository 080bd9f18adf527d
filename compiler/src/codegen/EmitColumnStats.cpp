// Placeholder until the column_stats emitter lands (being written now).
#include "codegen/Emitters.h"

namespace fusegen::codegen {

Result<KernelSource> emit_column_stats(const EmitContext&) { return Error{"no emitter for column_stats kernels yet"}; }

} // namespace fusegen::codegen
