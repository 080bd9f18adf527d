// What a kernel emitter works with: the plan, its kernel, how dims and
// buffers are spelled in device and host code, and what it produces.
#pragma once

#include "codegen/RearrangeSpec.h"
#include "fusegen/Codegen.h"
#include "fusegen/Plan.h"
#include "fusegen/Result.h"
#include "fusegen/Target.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fusegen::codegen {

class EmitContext {
public:
  EmitContext(const Plan& plan, size_t kernel, const CodegenOptions& options, const Target& target,
              std::vector<std::string> dim_symbols);

  const Plan& plan() const { return plan_; }
  const Fusion& fusion() const { return plan_.fusion; }
  const KernelStep& step() const { return plan_.kernels[kernel_]; }
  size_t kernel_index() const { return kernel_; }
  const CodegenOptions& options() const { return options_; }
  // What the GPU has (features, SM count): asked here, never the arch number.
  const Target& target() const { return target_; }
  Precision precision() const { return options_.precision.value_or(plan_.fusion.precision); }
  std::string kernel_name() const { return "fusegen_" + step().name; }

  // A dim in device code: "1024LL" or "args.dim[0]".
  std::string dim(const Dim& d) const;
  // A dim in host launcher code: "1024LL" or the symbol ("N").
  std::string host_dim(const Dim& d) const;
  // Product of dims [first, last) in device code ("1LL" when empty).
  std::string product(const Shape& shape, size_t first, size_t last) const;
  // A size: C text for the launcher and a value when all dims are constant.
  // `device` picks the device spelling of dims.
  SizeExpr size(const Shape& shape, size_t first, size_t last) const;
  SizeExpr ceil_div(const SizeExpr& a, int64_t b) const;
  SizeExpr mul(const SizeExpr& a, const SizeExpr& b) const;
  SizeExpr constant(int64_t value) const;

  // `args.buf[3]` for a buffer, as `float*`.
  std::string buffer(BufferId id) const;
  // The buffer of a materialized value (asserts it is materialized).
  std::string value_buffer(ValueId value) const;
  // Element `at` of a materialized value as device code. Outside GEMMs, a
  // buffer this kernel does not write is read through the read-only
  // (non-coherent) path, __ldg: layer_norm over long rows, whose write pass
  // reads its affine params between its stores, ran 5% faster
  // (bench/NOTES.md v48).
  std::string read(ValueId value, const std::string& at) const;
  bool is_materialized(ValueId value) const { return plan_.buffer_of(value) != kNoId; }
  // A materialized value held as row-reduction partials that a reader
  // combines (PlanBuffer::combine), not as the value itself.
  bool is_partials(ValueId value) const {
    return plan_.buffer(plan_.buffer_of(value)).combine != PlanBuffer::Combine::None;
  }

  // The statistics buffer of a split normalization (partials or finalized).
  BufferId stats_buffer(NodeId norm, bool finalized) const;
  // Its statistics buffer named `prefix` + the norm's id (AssignBuffers:
  // "sample_stats_", "counters_", ...), or kNoId.
  BufferId stats_buffer(const std::string& prefix, NodeId norm) const;

private:
  const Plan& plan_;
  size_t kernel_;
  const CodegenOptions& options_;
  const Target& target_;
  std::vector<std::string> dim_symbols_;
};

// What an emitter returns for one kernel.
struct KernelSource {
  std::string template_file;                // e.g. "elementwise.cu"
  std::map<std::string, std::string> hooks; // hook name -> replacement declaration
  KernelLaunch launch;                      // name filled in by the driver
  // Launched right before / after this kernel for the same planned kernel,
  // each its own template instance named the kernel's name + its
  // name_suffix and described by its note (a GEMM's pass that splits B, its
  // split tail).
  std::vector<KernelSource> leaders, followers;
  // Copies of the call's arguments (buffers no kernel writes) that this
  // kernel reads: the driver runs every kernel's in one launch before the
  // fusion's first kernel (rearrange_pass).
  std::vector<RearrangeSpec> argument_copies;
  std::string name_suffix;
  std::string note;
  // The plan's scratch buffers this kernel uses: they get workspace memory
  // (the others none).
  std::vector<BufferId> scratch_used;
};

using KernelEmitter = std::function<Result<KernelSource>(const EmitContext&)>;

// A dim of known extent 1: broadcast against any extent.
bool is_unit(const Dim& dim);

// Row-major offset of an operand of `shape` broadcast against a domain whose
// coordinates are `coords` (outermost first; the operand aligns right).
std::string broadcast_offset(const EmitContext& ctx, const Shape& shape, const std::vector<std::string>& coords);

// Statements decoding `index` into coordinates c0..c{rank-1} of `shape`
// (as `const long long` variables named prefix + d).
void decode_index(const EmitContext& ctx, const Shape& shape, const std::string& index, const std::string& prefix,
                  std::vector<std::string>& lines);

} // namespace fusegen::codegen
