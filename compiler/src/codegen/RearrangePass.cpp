#include "codegen/RearrangePass.h"
#include "codegen/KernelParts.h"

#include <cassert>

namespace fusegen::codegen {
namespace {

// Statements that write destination element `index` of `spec` (`four`:
// elements index .. index + 3, four channels).
std::vector<std::string> copy_body(const EmitContext& ctx, const RearrangeSpec& spec, bool four) {
  const std::string to = ctx.buffer(spec.to);
  const std::string cs = std::to_string(spec.channel_stride) + "LL";
  std::vector<std::string> lines = spec.decode;
  if (!four) {
    lines.push_back("const float value = inside ? " + spec.from + "[from] : 0.0f;");
    lines.push_back(to + "[index] = value;");
    if (spec.tf32_small != kNoId) // as EmitGemm's b_split_pass computes them
      lines.push_back(ctx.buffer(spec.tf32_small) + "[index] = fusegen_tf32_rest(value);");
    return lines;
  }
  lines.push_back("const float* src = " + spec.from + " + from;");
  lines.push_back("const float4 value = inside ? make_float4(src[0], src[" + cs + "], src[2 * " + cs + "], src[3 * " +
                  cs + "]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);");
  lines.push_back("*reinterpret_cast<float4*>(" + to + " + index) = value;");
  if (spec.tf32_small != kNoId)
    lines.push_back("*reinterpret_cast<float4*>(" + ctx.buffer(spec.tf32_small) +
                    " + index) = make_float4(fusegen_tf32_rest(value.x), fusegen_tf32_rest(value.y), "
                    "fusegen_tf32_rest(value.z), fusegen_tf32_rest(value.w));");
  return lines;
}

// Several copies over one flat index: copy i takes [ends[i - 1], ends[i]),
// with `index` rebased to its own first element.
std::vector<std::string> segmented_body(const EmitContext& ctx, const std::vector<RearrangeSpec>& copies,
                                        const std::vector<std::string>& ends, bool four) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < copies.size(); ++i) {
    const bool last = i + 1 == copies.size();
    lines.push_back(last ? "{" : "if (flat < " + ends[i] + ") {");
    lines.push_back("  const long long index = flat" + (i == 0 ? std::string() : " - " + ends[i - 1]) + ";");
    for (const std::string& line : copy_body(ctx, copies[i], four))
      lines.push_back("  " + line);
    if (!last)
      lines.push_back("  return;");
    lines.push_back("}");
  }
  return lines;
}

} // namespace

KernelSource rearrange_pass(const EmitContext& ctx, const std::vector<RearrangeSpec>& copies) {
  assert(!copies.empty() && "a rearrange pass without copies");
  constexpr int kPassThreads = 256;
  KernelSource pass;
  pass.template_file = "elementwise.cu";
  pass.launch.kind = KernelKind::Elementwise;
  const bool one = copies.size() == 1;
  pass.name_suffix = one ? copies[0].suffix : "_operand_copies";
  // Segment ends, and whether every copy stores whole float4s (its elements
  // come four channels at a time, so every segment starts at a multiple of 4).
  std::vector<std::string> ends;
  SizeExpr total = ctx.constant(0);
  bool vectors = true;
  std::string aligned;
  for (const RearrangeSpec& copy : copies) {
    total = {ends.empty() ? copy.numel.c : "(" + total.c + " + " + copy.numel.c + ")",
             total.value && copy.numel.value ? std::optional<int64_t>(*total.value + *copy.numel.value) : std::nullopt};
    ends.push_back(ends.empty() ? "(" + copy.numel_text + ")" : "(" + ends.back() + " + " + copy.numel_text + ")");
    vectors = vectors && copy.channels % 4 == 0;
    for (BufferId written : {copy.to, copy.tf32_small})
      if (written != kNoId) {
        aligned += (aligned.empty() ? "" : " | ") + std::string("reinterpret_cast<unsigned long long>(") +
                   ctx.buffer(written) + ")";
        pass.scratch_used.push_back(written);
      }
    pass.note += (pass.note.empty() ? "" : "; ") + copy.note;
    if (copy.tf32_small != kNoId)
      pass.note += ", and its tf32 small parts into " + ctx.plan().buffer(copy.tf32_small).name;
  }
  const std::string index = one ? "index" : "flat";
  const std::string params = "const FusegenArgs& args, long long " + index;
  pass.hooks["block_size"] = constant_hook("kBlockSize", kPassThreads);
  pass.hooks["vector_width"] = constant_hook("kVectorWidth", vectors ? 4 : 1);
  pass.hooks["numel"] = args_function_hook("long long", "numel", one ? copies[0].numel_text : ends.back());
  pass.hooks["vector_ok"] =
      function_hook("bool", "vector_ok", "const FusegenArgs& args", {"return ((" + aligned + ") & 15ULL) == 0;"});
  pass.hooks["compute"] = function_hook(
      "void", "compute", params, one ? copy_body(ctx, copies[0], false) : segmented_body(ctx, copies, ends, false));
  pass.hooks["compute4"] = function_hook(
      "void", "compute4", params, one ? copy_body(ctx, copies[0], true) : segmented_body(ctx, copies, ends, true));
  pass.hooks["entry"] = entry_hook(ctx, "kBlockSize", "elementwise_main(args);", "", pass.name_suffix);
  pass.launch.grid = {grid_stride_blocks(ctx, total, kPassThreads * 4, 65536), ctx.constant(1), ctx.constant(1)};
  pass.launch.block = kPassThreads;
  return pass;
}

} // namespace fusegen::codegen
