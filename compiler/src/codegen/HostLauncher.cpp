#include "codegen/HostLauncher.h"

#include "codegen/CodeWriter.h"

#include <bit>

namespace fusegen::codegen {
namespace {

std::string launcher_params(const Plan& plan, const SymbolicLaunchPlan& launch) {
  std::string params;
  for (size_t i = 0; i < launch.buffers.size(); ++i) {
    const BufferBinding& buffer = launch.buffers[i];
    if (buffer.role == BufferBinding::Role::Argument) {
      bool written = plan.fusion.value(plan.buffer(static_cast<BufferId>(i)).value).kind == ValueKind::State;
      params += std::string(written ? "float* " : "const float* ") + buffer.name + ", ";
    } else if (buffer.role == BufferBinding::Role::Output) {
      params += "float* " + buffer.name + ", ";
    }
  }
  for (const OutputCopyOf<SizeExpr>& copy : launch.copies)
    params += "float* " + copy.output + ", ";
  for (const std::string& symbol : launch.dim_symbols)
    params += "long long " + symbol + ", ";
  return params + "void* workspace, cudaStream_t stream";
}

std::string workspace_params(const SymbolicLaunchPlan& launch) {
  std::string params;
  for (const std::string& symbol : launch.dim_symbols)
    params += (params.empty() ? "" : ", ") + std::string("long long ") + symbol;
  return params.empty() ? "void" : params;
}

void write_fill(const FillLaunchOf<SizeExpr>& fill, CodeWriter& w) {
  const std::string& count = fill.count.c;
  // The value travels as its bit pattern: exact for infinities and NaN
  // (__int_as_float is device-only, so convert on the host).
  w.open("");
  w.line("const int bits = " + std::to_string(std::bit_cast<int32_t>(fill.value_bits)) + ";");
  w.line("float value;");
  w.line("__builtin_memcpy(&value, &bits, sizeof value);");
  w.line("fusegen_fill<<<dim3((unsigned)((" + count + " + 255) / 256)), dim3(256), 0, stream>>>(args.buf[" +
         std::to_string(fill.buffer) + "], value, " + count + ");");
  w.close();
}

void write_kernel(const KernelLaunchOf<SizeExpr>& kernel, CodeWriter& w) {
  // C linkage, but C++ lookup still goes through the instance's namespace.
  const std::string qualified = kernel.name + "_impl::" + kernel.name;
  if (kernel.shared_bytes > 48 * 1024) {
    w.line("err = cudaFuncSetAttribute(" + qualified + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " +
           std::to_string(kernel.shared_bytes) + ");");
    w.line("if (err != cudaSuccess) return err;");
  }
  w.line(qualified + "<<<dim3((unsigned)" + kernel.grid[0].c + ", (unsigned)" + kernel.grid[1].c + ", (unsigned)" +
         kernel.grid[2].c + "), dim3(" + std::to_string(kernel.block) + "), " + std::to_string(kernel.shared_bytes) +
         ", stream>>>(args);");
  w.line("err = cudaGetLastError();");
  w.line("if (err != cudaSuccess) return err;");
}

} // namespace

HostLauncher print_host_launcher(const Plan& plan, const SymbolicLaunchPlan& launch) {
  const std::string prefix = "fusegen_" + launch.fusion;
  const std::string params = launcher_params(plan, launch);
  CodeWriter w;
  w.line("// Bytes of device memory " + prefix + "_launch needs as `workspace`: zero it once before its");
  w.line("// first launch (kernels that finalize their own statistics keep arrival counters there");
  w.line("// and leave them zero), and give each stream its own.");
  w.open("extern \"C\" size_t " + prefix + "_workspace_size(" + workspace_params(launch) + ")");
  for (const std::string& symbol : launch.dim_symbols)
    w.line("(void)" + symbol + ";");
  w.line("return (size_t)" + launch.workspace_bytes.c + ";");
  w.close();
  w.line();
  w.open("extern \"C\" cudaError_t " + prefix + "_launch(" + params + ")");
  w.line("FusegenArgs args = {};");
  for (size_t i = 0; i < launch.buffers.size(); ++i) {
    const BufferBinding& buffer = launch.buffers[i];
    if (buffer.role != BufferBinding::Role::Workspace)
      w.line("args.buf[" + std::to_string(i) + "] = const_cast<float*>(" + buffer.name + ");");
  }
  for (const WorkspaceBindingOf<SizeExpr>& slot : launch.workspace)
    w.line("args.buf[" + std::to_string(slot.buffer) + "] = reinterpret_cast<float*>(static_cast<char*>(workspace) + " +
           slot.offset.c + ");");
  for (size_t i = 0; i < launch.dim_symbols.size(); ++i)
    w.line("args.dim[" + std::to_string(i) + "] = " + launch.dim_symbols[i] + ";");
  w.line("cudaError_t err = cudaSuccess;");
  for (const KernelLaunchOf<SizeExpr>& kernel : launch.kernels) {
    for (const FillLaunchOf<SizeExpr>& fill : kernel.fills)
      write_fill(fill, w);
    write_kernel(kernel, w);
  }
  for (const OutputCopyOf<SizeExpr>& copy : launch.copies) {
    w.line("err = cudaMemcpyAsync(" + copy.output + ", args.buf[" + std::to_string(copy.buffer) + "], " + copy.bytes.c +
           ", cudaMemcpyDeviceToDevice, stream);");
    w.line("if (err != cudaSuccess) return err;");
  }
  w.line("return cudaSuccess;");
  w.close();

  CodeWriter h;
  h.line("// fusion " + launch.fusion);
  h.line("size_t " + prefix + "_workspace_size(" + workspace_params(launch) + ");");
  h.line("cudaError_t " + prefix + "_launch(" + params + ");");
  h.line();
  return {w.take(), h.take()};
}

} // namespace fusegen::codegen
