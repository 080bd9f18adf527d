// The code generation driver: per fusion, one template instance per planned
// kernel (wrapped in its own namespace), then per fusion its launch plan and
// the host launcher printed from it, and a header.
#include "fusegen/Codegen.h"
#include "fusegen/Target.h"

#include "codegen/BuildLaunchPlan.h"
#include "codegen/CodeWriter.h"
#include "codegen/Emitters.h"
#include "codegen/HostLauncher.h"
#include "codegen/RearrangePass.h"
#include "fusegen/Planner.h"
#include "fusegen/TemplateText.h"
#include "plan/GpuSupport.h"

#include <set>
#include <sstream>

namespace fusegen {
namespace {

using codegen::CodeWriter;
using codegen::EmitContext;
using codegen::KernelSource;
using codegen::RearrangeSpec;

constexpr int64_t kWorkspaceAlignment = 256;

codegen::KernelEmitter emitter_for(KernelKind kind) {
  switch (kind) {
  case KernelKind::Elementwise: return codegen::emit_elementwise;
  case KernelKind::Gemm: return codegen::emit_gemm;
  case KernelKind::RowReduce: return codegen::emit_row_reduce;
  case KernelKind::Window: return codegen::emit_window;
  case KernelKind::ColumnStats: return codegen::emit_column_stats;
  case KernelKind::StatsFinalize: return codegen::emit_stats_finalize;
  case KernelKind::GenericReduce: return codegen::emit_generic_reduce;
  }
  return {};
}

const templates::TemplateText* find_template(std::string_view file) {
  return templates::find_template_text(templates::kAllTemplates, file);
}

// Concatenates a template's fragments with the emitter's hook replacements.
Result<std::string> instantiate(const KernelSource& source, const std::string& kernel) {
  const templates::TemplateText* text = find_template(source.template_file);
  if (!text)
    return Error{"internal error: no template '" + source.template_file + "' for kernel " + kernel};
  std::string out(text->fragments[0]);
  std::set<std::string> used;
  for (size_t i = 0; i < text->hooks.size(); ++i) {
    const templates::HookInfo& hook = text->hooks[i];
    auto it = source.hooks.find(std::string(hook.name));
    if (it == source.hooks.end())
      return Error{"internal error: kernel " + kernel + " leaves hook '" + std::string(hook.name) + "' of " +
                   source.template_file + " unfilled"};
    used.insert(it->first);
    out += it->second;
    out += text->fragments[i + 1];
  }
  for (const auto& [name, replacement] : source.hooks)
    if (!used.count(name))
      return Error{"internal error: kernel " + kernel + " fills hook '" + name + "' that " + source.template_file +
                   " does not have"};
  return out;
}

std::string comment_block(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    out += "//" + (line.empty() ? "" : " " + line) + "\n";
  return out;
}

// Workspace buffers (intermediates, statistics, the scratch a kernel uses)
// packed at aligned offsets; scratch no kernel uses gets no memory.
void layout_workspace(const Plan& plan, const EmitContext& ctx, const std::set<BufferId>& scratch_used,
                      GeneratedFusion& out) {
  SizeExpr offset = ctx.constant(0);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& buffer = plan.buffers[i];
    if (buffer.role == PlanBuffer::Role::Argument || buffer.role == PlanBuffer::Role::Output)
      continue;
    if (buffer.role == PlanBuffer::Role::Scratch && !scratch_used.count(static_cast<BufferId>(i))) {
      out.workspace.push_back({static_cast<BufferId>(i), offset, ctx.constant(0)});
      continue;
    }
    SizeExpr floats = ctx.constant(1);
    for (size_t d = 0; d < buffer.shape.size(); ++d) {
      SizeExpr extent = ctx.size(buffer.shape, d, d + 1);
      int64_t divisor = d < buffer.ceil_div.size() ? buffer.ceil_div[d] : 1;
      floats = ctx.mul(floats, divisor > 1 ? ctx.ceil_div(extent, divisor) : extent);
    }
    SizeExpr bytes = ctx.mul(floats, ctx.constant(4));
    out.workspace.push_back({static_cast<BufferId>(i), offset, bytes});
    SizeExpr end = offset.value && bytes.value ? ctx.constant(*offset.value + *bytes.value)
                                               : SizeExpr{"(" + offset.c + " + " + bytes.c + ")", std::nullopt};
    offset = ctx.mul(ctx.ceil_div(end, kWorkspaceAlignment), ctx.constant(kWorkspaceAlignment));
  }
  out.workspace_bytes = offset;
}

// Where a kernel's refusal points in the spec: its anchor op, else its first
// op, else the fusion.
SourceLoc kernel_loc(const Plan& plan, size_t k) {
  const KernelStep& step = plan.kernels[k];
  NodeId node = step.anchor();
  if (node == kNoId && !step.nodes().empty())
    node = step.nodes().front();
  return node != kNoId ? plan.fusion.node(node).loc : plan.fusion.loc;
}

constexpr const char* kFillKernel = R"(// Fills a buffer with one value (e.g. +inf before an atomic minimum).
extern "C" __global__ void fusegen_fill(float* data, float value, long long count) {
  fusegen_grid_dependencies();
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = value;
}
)";

} // namespace

std::string format_gemm_block(const GemmBlock& block) {
  return std::to_string(block.rows) + "x" + std::to_string(block.cols) +
         (block.split_k > 1 ? ":" + std::to_string(block.split_k) : "");
}

namespace {

// Stops a device compilation for another architecture than `gpu`'s with a
// message naming the right one. nvcc's host pass has no __CUDA_ARCH__ and
// passes; nvcc without -arch compiles for its default (an older sm_XY) and
// stops here. For sm_90a the check is on the 9.0 generation only: nvcc
// -arch=sm_90a (CUDA 13) also compiles a plain compute_90 PTX, without
// __CUDA_ARCH_FEAT_SM90_ALL, for which the GEMM template falls back to
// mma.sync; that pass cannot be told from -arch=sm_90's.
std::string arch_guard(const Target& gpu) {
  const std::string target = gpu.compile_arch();
  return "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != " + std::to_string(gpu.arch * 10) +
         "\n#error \"generated for " + target + "; compile with -arch=" + target +
         " (or generate for your GPU with fusegen --arch sm_XY)\"\n#endif\n";
}

} // namespace

Result<GeneratedCode> generate_cuda(const std::vector<Plan>& plans, const CodegenOptions& options) {
  Result<Target> found_target = target_for_arch(options.arch);
  if (!found_target)
    return Error{found_target.error()};
  const Target& gpu = found_target.value();
  const templates::TemplateText* helpers = find_template("helpers.cu");
  if (!helpers)
    return Error{"internal error: templates/helpers.cu is not embedded"};
  GeneratedCode code;
  CodeWriter source;
  source.line("// Generated by fusegen " FUSEGEN_VERSION " from " + options.source_name + ". Do not edit.");
  const std::string target = gpu.compile_arch();
  source.line("// Target " + target + " (nvcc -arch=" + target +
              "). Compile with nvcc (host launchers included) or define FUSEGEN_DEVICE_ONLY for device code only.");
  if (options.arch_guard)
    source.raw(arch_guard(gpu));
  source.line();
  source.raw(helpers->fragments[0]);
  source.line();
  source.raw(kFillKernel);
  CodeWriter launchers;
  CodeWriter header;
  for (const Plan& plan : plans) {
    if (std::optional<Error> gap = plan::gpu_kernel_gap(plan.fusion))
      return *gap;
    GeneratedFusion fusion;
    fusion.name = plan.fusion.name;
    fusion.precision = options.precision.value_or(plan.fusion.precision);
    fusion.dim_symbols = plan.fusion.symbols();
    if (fusion.dim_symbols.size() > static_cast<size_t>(kMaxKernelDims))
      return Error{"fusion '" + fusion.name + "' has more than " + std::to_string(kMaxKernelDims) + " symbolic dims",
                   plan.fusion.loc};
    if (plan.buffers.size() > static_cast<size_t>(kMaxKernelBuffers))
      return Error{"fusion '" + fusion.name + "' needs " + std::to_string(plan.buffers.size()) +
                       " buffers; generated kernels take at most " + std::to_string(kMaxKernelBuffers),
                   plan.fusion.loc};
    for (const PlanBuffer& buffer : plan.buffers)
      fusion.buffer_names.push_back(buffer.name);
    source.line();
    source.line("// ===== fusion " + fusion.name + " (precision=" + precision_name(fusion.precision) + ") =====");
    // Every kernel's launches in order (kernel index, source), then the
    // copies of call arguments that kernels read, hoisted into one launch
    // before all of them: they need nothing a kernel computes.
    std::vector<std::pair<size_t, KernelSource>> launches;
    std::vector<RearrangeSpec> argument_copies;
    size_t copies_owner = 0;
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      EmitContext ctx(plan, k, options, gpu, fusion.dim_symbols);
      Result<KernelSource> kernel = emitter_for(plan.kernels[k].kind)(ctx);
      if (!kernel)
        return Error{"fusion '" + fusion.name + "', kernel " + ctx.kernel_name() + ": " + kernel.error(),
                     kernel_loc(plan, k)};
      if (argument_copies.empty())
        copies_owner = k;
      std::move(kernel.value().argument_copies.begin(), kernel.value().argument_copies.end(),
                std::back_inserter(argument_copies));
      for (KernelSource& leader : kernel.value().leaders)
        launches.emplace_back(k, std::move(leader));
      std::vector<KernelSource> followers = std::move(kernel.value().followers);
      launches.emplace_back(k, std::move(kernel.value()));
      for (KernelSource& follower : followers)
        launches.emplace_back(k, std::move(follower));
    }
    if (!argument_copies.empty())
      launches.emplace(
          launches.begin(), copies_owner,
          codegen::rearrange_pass(EmitContext(plan, copies_owner, options, gpu, fusion.dim_symbols), argument_copies));
    std::set<BufferId> scratch_used;
    for (auto& [k, launch] : launches) {
      const std::string name = "fusegen_" + plan.kernels[k].name + launch.name_suffix;
      launch.launch.name = name;
      if (launch.name_suffix.empty()) // leaders and followers say their own kind
        launch.launch.kind = plan.kernels[k].kind;
      scratch_used.insert(launch.scratch_used.begin(), launch.scratch_used.end());
      launch.launch.template_file = launch.template_file;
      Result<std::string> text = instantiate(launch, name);
      if (!text)
        return Error{text.error()};
      source.line();
      source.raw(comment_block(launch.name_suffix.empty() ? print_kernel_plan(plan, k) : name + ": " + launch.note));
      source.line("namespace " + name + "_impl {");
      source.raw(text.value());
      source.line("} // namespace " + name + "_impl");
      fusion.kernels.push_back(std::move(launch.launch));
    }
    if (!plan.kernels.empty())
      layout_workspace(plan, EmitContext(plan, 0, options, gpu, fusion.dim_symbols), scratch_used, fusion);
    else
      fusion.workspace_bytes = {"0LL", 0}; // only copies (`output y = x`): no workspace
    fusion.launch = codegen::build_launch_plan(plan, fusion);
    codegen::HostLauncher launcher = codegen::print_host_launcher(plan, fusion.launch);
    launchers.raw(launcher.definitions);
    launchers.line();
    header.raw(launcher.declarations);
    code.fusions.push_back(std::move(fusion));
  }
  source.line();
  source.line("#ifndef FUSEGEN_DEVICE_ONLY");
  source.line("#include <cuda_runtime.h>");
  source.line();
  source.raw(launchers.str());
  source.line("#endif // FUSEGEN_DEVICE_ONLY");
  code.source = source.take();

  CodeWriter h;
  h.line("// Generated by fusegen " FUSEGEN_VERSION " from " + options.source_name + ". Do not edit.");
  h.line("// Launchers of the kernels in the matching .cu; each returns the first CUDA error.");
  h.line("#pragma once");
  h.line("#include <cuda_runtime.h>");
  h.line("#include <stddef.h>");
  h.line();
  h.line("#ifdef __cplusplus");
  h.line("extern \"C\" {");
  h.line("#endif");
  h.line();
  h.raw(header.str());
  h.line("#ifdef __cplusplus");
  h.line("}");
  h.line("#endif");
  code.header = h.take();
  return code;
}

} // namespace fusegen
