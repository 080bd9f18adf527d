// Pieces of hook text every emitter writes the same way.
#pragma once

#include "codegen/EmitContext.h"
#include "codegen/PointwiseEmitter.h"

#include <string>
#include <vector>

namespace fusegen::codegen {

// `constexpr int kName = value;`
std::string constant_hook(const std::string& name, int64_t value);
// `constexpr bool kName = true;`
std::string bool_hook(const std::string& name, bool value);
// A `__device__ __forceinline__` function hook with the given signature
// (after the return type) and body lines.
std::string function_hook(const std::string& return_type, const std::string& name, const std::string& params,
                          const std::vector<std::string>& body);
// A function hook of `(const FusegenArgs& args)` returning `expr`, with
// `(void)args;` first where expr does not use args (warnings are errors).
std::string args_function_hook(const std::string& return_type, const std::string& name, const std::string& expr);
// Where an entry waits for the kernel launched before it (programmatic
// dependent launches, templates/helpers.cu): first, as every kernel that
// reads what the one before wrote; or last, for a kernel that reads nothing
// the one before writes (a GEMM's split tail, which then runs beside that
// kernel's last wave), so that its end still means every grid before it ended.
// A GEMM whose products read nothing the kernels before it write waits last
// too, and also in each block before its epilogue (gemm.cu "wait_late").
enum class GridWait { First, Last };
// The renamed `__global__` entry calling the template's main function; its
// name is the kernel's name + name_suffix.
std::string entry_hook(const EmitContext& ctx, const std::string& launch_bounds, const std::string& main_call,
                       const std::string& attributes = "", const std::string& name_suffix = "",
                       GridWait wait = GridWait::First);
// The values this kernel computes that live in memory: (value, buffer).
std::vector<std::pair<ValueId, BufferId>> stored_values(const EmitContext& ctx);
// Puts one element's `stores` (value, buffer), each at `offset` in its
// buffer, in a hook's FusegenStores named `stores` (templates/helpers.cu):
// the template writes them (the epilogue and store_element contracts).
void defer_stores(const EmitContext& ctx, const std::vector<std::pair<ValueId, BufferId>>& stores,
                  const std::string& offset, PointwiseEmitter& pointwise, std::vector<std::string>& lines);
// Values this kernel reads from memory that it does not compute itself.
std::vector<ValueId> loaded_values(const EmitContext& ctx);
// Blocks for a grid-stride loop over `work` items, `per_block` items per
// block: at least 1, at most `cap`.
SizeExpr grid_stride_blocks(const EmitContext& ctx, const SizeExpr& work, int64_t per_block, int64_t cap);
// The least power of two >= value, at most `cap` (a power of two); 1 for value <= 1.
int power_of_two_at_least(int64_t value, int cap);
// a / b rounded up, for a >= 0 and b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace fusegen::codegen
