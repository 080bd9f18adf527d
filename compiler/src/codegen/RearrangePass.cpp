// The passes that rearrange a convolution's operands once per call before
// its GEMM (GemmMapping::operand_copies): templates/elementwise.cu over the
// destination, four channels of one element per float4 store; with
// `tf32_small` each value's tf32 small part beside it.
#include "codegen/GemmParts.h"
#include "codegen/KernelParts.h"

namespace fusegen::codegen {

KernelSource rearrange_pass(const EmitContext& ctx, const RearrangeSpec& spec) {
  constexpr int kPassThreads = 256;
  const std::string to = ctx.buffer(spec.to);
  const std::string cs = std::to_string(spec.channel_stride) + "LL";
  std::vector<std::string> one = spec.decode, four = spec.decode;
  one.push_back("const float value = inside ? " + spec.from + "[from] : 0.0f;");
  one.push_back(to + "[index] = value;");
  four.push_back("const float* src = " + spec.from + " + from;");
  four.push_back("const float4 value = inside ? make_float4(src[0], src[" + cs + "], src[2 * " + cs + "], src[3 * " +
                 cs + "]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);");
  four.push_back("*reinterpret_cast<float4*>(" + to + " + index) = value;");
  if (spec.tf32_small != kNoId) { // as EmitGemm's b_split_pass computes them
    const std::string small = ctx.buffer(spec.tf32_small);
    one.push_back(small + "[index] = fusegen_tf32_rest(value);");
    four.push_back("*reinterpret_cast<float4*>(" + small +
                   " + index) = make_float4(fusegen_tf32_rest(value.x), fusegen_tf32_rest(value.y), "
                   "fusegen_tf32_rest(value.z), fusegen_tf32_rest(value.w));");
  }
  KernelSource pass;
  pass.template_file = "elementwise.cu";
  pass.launch.kind = KernelKind::Elementwise;
  pass.name_suffix = spec.suffix;
  pass.note = spec.note;
  const std::string params = "const FusegenArgs& args, long long index";
  pass.hooks["block_size"] = constant_hook("kBlockSize", kPassThreads);
  pass.hooks["vector_width"] = constant_hook("kVectorWidth", spec.channels % 4 == 0 ? 4 : 1);
  pass.hooks["numel"] = args_function_hook("long long", "numel", spec.numel_text);
  const std::string aligned = spec.tf32_small == kNoId ? "reinterpret_cast<unsigned long long>(" + to + ")"
                                                       : "(reinterpret_cast<unsigned long long>(" + to +
                                                             ") | reinterpret_cast<unsigned long long>(" +
                                                             ctx.buffer(spec.tf32_small) + "))";
  pass.hooks["vector_ok"] =
      function_hook("bool", "vector_ok", "const FusegenArgs& args", {"return (" + aligned + " & 15ULL) == 0;"});
  pass.hooks["compute"] = function_hook("void", "compute", params, one);
  pass.hooks["compute4"] = function_hook("void", "compute4", params, four);
  pass.hooks["entry"] = entry_hook(ctx, "kBlockSize", "elementwise_main(args);", "", pass.name_suffix);
  pass.launch.grid = {grid_stride_blocks(ctx, spec.numel, kPassThreads * 4, 65536), ctx.constant(1), ctx.constant(1)};
  pass.launch.block = kPassThreads;
  pass.scratch_used.push_back(spec.to);
  if (spec.tf32_small != kNoId) {
    pass.scratch_used.push_back(spec.tf32_small);
    pass.note += ", and its tf32 small parts into " + ctx.plan().buffer(spec.tf32_small).name;
  }
  return pass;
}

} // namespace fusegen::codegen
