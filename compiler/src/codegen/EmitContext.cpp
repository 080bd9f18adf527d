#include "codegen/EmitContext.h"

#include <algorithm>
#include <cassert>

namespace fusegen::codegen {

EmitContext::EmitContext(const Plan& plan, size_t kernel, const CodegenOptions& options, const Target& target,
                         std::vector<std::string> dim_symbols)
    : plan_(plan), kernel_(kernel), options_(options), target_(target), dim_symbols_(std::move(dim_symbols)) {}

std::string EmitContext::dim(const Dim& d) const {
  if (d.is_constant())
    return std::to_string(d.value()) + "LL";
  auto it = std::find(dim_symbols_.begin(), dim_symbols_.end(), d.name());
  assert(it != dim_symbols_.end() && "symbol not among the fusion's dims");
  return "args.dim[" + std::to_string(it - dim_symbols_.begin()) + "]";
}

std::string EmitContext::host_dim(const Dim& d) const {
  return d.is_constant() ? std::to_string(d.value()) + "LL" : d.name();
}

std::string EmitContext::product(const Shape& shape, size_t first, size_t last) const {
  int64_t constant = 1;
  std::string symbolic;
  for (size_t i = first; i < last; ++i) {
    if (shape[i].is_constant())
      constant *= shape[i].value();
    else
      symbolic += (symbolic.empty() ? "" : " * ") + dim(shape[i]);
  }
  if (symbolic.empty())
    return std::to_string(constant) + "LL";
  return constant == 1 ? "(" + symbolic + ")" : "(" + std::to_string(constant) + "LL * " + symbolic + ")";
}

SizeExpr EmitContext::size(const Shape& shape, size_t first, size_t last) const {
  int64_t constant = 1;
  std::string symbolic;
  for (size_t i = first; i < last; ++i) {
    if (shape[i].is_constant())
      constant *= shape[i].value();
    else
      symbolic += (symbolic.empty() ? "" : " * ") + shape[i].name();
  }
  if (symbolic.empty())
    return {std::to_string(constant) + "LL", constant};
  return {constant == 1 ? "(" + symbolic + ")" : "(" + std::to_string(constant) + "LL * " + symbolic + ")",
          std::nullopt};
}

SizeExpr EmitContext::ceil_div(const SizeExpr& a, int64_t b) const {
  if (b == 1)
    return a;
  if (a.value)
    return constant((*a.value + b - 1) / b);
  return {"((" + a.c + " + " + std::to_string(b - 1) + ") / " + std::to_string(b) + ")", std::nullopt};
}

SizeExpr EmitContext::mul(const SizeExpr& a, const SizeExpr& b) const {
  if (a.value && b.value)
    return constant(*a.value * *b.value);
  return {"(" + a.c + " * " + b.c + ")", std::nullopt};
}

SizeExpr EmitContext::constant(int64_t value) const { return {std::to_string(value) + "LL", value}; }

std::string EmitContext::buffer(BufferId id) const { return "args.buf[" + std::to_string(id) + "]"; }

std::string EmitContext::value_buffer(ValueId value) const {
  BufferId id = plan_.buffer_of(value);
  assert(id != kNoId && "value is not materialized");
  return buffer(id);
}

std::string EmitContext::read(ValueId value, const std::string& at) const {
  const BufferId id = plan_.buffer_of(value);
  assert(id != kNoId && "value is not materialized");
  // Not in GEMMs: a load that may move anywhere may move above the main
  // loop and hold a register through it (skinny_gemm.cu then spilled).
  const std::vector<BufferId>& writes = step().writes;
  if (step().kind == KernelKind::Gemm || std::binary_search(writes.begin(), writes.end(), id))
    return buffer(id) + "[" + at + "]";
  return "__ldg(" + buffer(id) + " + (" + at + "))";
}

BufferId EmitContext::stats_buffer(NodeId norm, bool finalized) const {
  return stats_buffer(finalized ? "stats_" : "partials_", norm);
}

BufferId EmitContext::stats_buffer(const std::string& prefix, NodeId norm) const {
  const std::string name = prefix + std::to_string(norm);
  for (size_t i = 0; i < plan_.buffers.size(); ++i)
    if (plan_.buffers[i].role == PlanBuffer::Role::Statistics && plan_.buffers[i].name == name)
      return static_cast<BufferId>(i);
  return kNoId;
}

bool is_unit(const Dim& dim) { return dim.is_constant() && dim.value() == 1; }

std::string broadcast_offset(const EmitContext& ctx, const Shape& shape, const std::vector<std::string>& coords) {
  assert(shape.size() <= coords.size());
  size_t offset = coords.size() - shape.size();
  std::string result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (is_unit(shape[d]))
      continue; // broadcast dim
    std::string stride = ctx.product(shape, d + 1, shape.size());
    std::string term = stride == "1LL" ? coords[d + offset] : coords[d + offset] + " * " + stride;
    result += (result.empty() ? "" : " + ") + term;
  }
  return result.empty() ? "0" : result;
}

void decode_index(const EmitContext& ctx, const Shape& shape, const std::string& index, const std::string& prefix,
                  std::vector<std::string>& lines) {
  if (shape.empty())
    return;
  std::string rest = prefix + "rest";
  lines.push_back("long long " + rest + " = " + index + ";");
  for (size_t d = shape.size(); d-- > 0;) {
    std::string name = prefix + std::to_string(d);
    if (d == 0) {
      lines.push_back("const long long " + name + " = " + rest + ";");
      break;
    }
    std::string extent = ctx.dim(shape[d]);
    lines.push_back("const long long " + name + " = " + rest + " % " + extent + ";");
    lines.push_back(rest + " /= " + extent + ";");
  }
}

} // namespace fusegen::codegen
