// Placeholder until the stats_finalize emitter lands (being written now).
#include "codegen/Emitters.h"

namespace fusegen::codegen {

Result<KernelSource> emit_stats_finalize(const EmitContext&) { return Error{"no emitter for stats_finalize kernels yet"}; }

} // namespace fusegen::codegen
