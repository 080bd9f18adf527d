#include "codegen/HookBody.h"

#include <cctype>
#include <set>

namespace fusegen::codegen {
namespace {

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

} // namespace

bool uses(const std::string& text, const std::string& name) {
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    bool starts = at == 0 || !is_identifier_char(text[at - 1]);
    size_t end = at + name.size();
    if (starts && (end == text.size() || !is_identifier_char(text[end])))
      return true;
  }
  return false;
}

std::vector<std::string> Body::finish(const std::vector<std::string>& params) const {
  std::string used;
  for (const std::string& line : lines_)
    used += line + "\n";
  std::vector<bool> keep(decls_.size(), false);
  for (size_t d = decls_.size(); d-- > 0;) {
    if (uses(used, decls_[d].first)) {
      keep[d] = true;
      used += decls_[d].second + "\n";
    }
  }
  std::vector<std::string> body;
  for (const std::string& param : params)
    if (!uses(used, param))
      body.push_back("(void)" + param + ";");
  for (size_t d = 0; d < decls_.size(); ++d)
    if (keep[d])
      body.push_back(decls_[d].second);
  body.insert(body.end(), lines_.begin(), lines_.end());
  return body;
}

std::vector<std::string> coord_names(size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d)
    names.push_back("c" + std::to_string(d));
  return names;
}

void declare_coordinates(const EmitContext& ctx, const Shape& shape, const std::string& index, Body& body) {
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string stride = ctx.product(shape, d + 1, shape.size());
    std::string expr = stride == "1LL" ? index : "(" + index + " / " + stride + ")";
    if (d > 0)
      expr += " % " + ctx.dim(shape[d]);
    body.declare("c" + std::to_string(d), "const long long c" + std::to_string(d) + " = " + expr + ";");
  }
}

void declare_channels_last_coordinates(const EmitContext& ctx, const Shape& shape, const std::string& index,
                                       Body& body) {
  std::vector<size_t> walk = {0}; // the dims from slowest to fastest
  for (size_t d = 2; d < shape.size(); ++d)
    walk.push_back(d);
  walk.push_back(1);
  Shape walked;
  for (size_t d : walk)
    walked.push_back(shape[d]);
  for (size_t w = 0; w < walk.size(); ++w) {
    std::string stride = ctx.product(walked, w + 1, walked.size());
    std::string expr = stride == "1LL" ? index : "(" + index + " / " + stride + ")";
    if (w > 0)
      expr += " % " + ctx.dim(walked[w]);
    const std::string name = "c" + std::to_string(walk[w]);
    body.declare(name, "const long long " + name + " = " + expr + ";");
  }
}

void bind_domain_loads(const EmitContext& ctx, const Shape& domain, const std::string& index, Body& body,
                       PointwiseEmitter& pointwise) {
  std::set<ValueId> computed, bound;
  for (NodeId id : ctx.step().nodes())
    computed.insert(ctx.fusion().node(id).result);
  for (NodeId id : ctx.step().nodes()) {
    for (ValueId value : ctx.fusion().node(id).operands) {
      if (value == kNoId || computed.count(value) || !bound.insert(value).second || !ctx.is_materialized(value) ||
          ctx.fusion().value(value).type.shape != domain ||
          ctx.is_partials(value)) // combined by PointwiseEmitter::load
        continue;
      std::string name = "x" + std::to_string(value);
      body.declare(name, "const float " + name + " = " + ctx.value_buffer(value) + "[" + index + "];");
      pointwise.bind(value, name);
    }
  }
}

} // namespace fusegen::codegen
