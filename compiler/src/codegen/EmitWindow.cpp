// Placeholder until the window emitter lands (being written now).
#include "codegen/Emitters.h"

namespace fusegen::codegen {

Result<KernelSource> emit_window(const EmitContext&) { return Error{"no emitter for window kernels yet"}; }

} // namespace fusegen::codegen
