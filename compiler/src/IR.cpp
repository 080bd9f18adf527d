#include "fusegen/IR.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace fusegen {

const char* dtype_name(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  }
  return "?";
}

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
  case ValueKind::Input: return "input";
  case ValueKind::Param: return "param";
  case ValueKind::State: return "state";
  case ValueKind::Result: return "result";
  }
  return "?";
}

const char* precision_name(Precision precision) {
  return precision == Precision::Strict ? "strict" : "tf32";
}

const char* strict_product_name(StrictProduct product) {
  return product == StrictProduct::FP16x3 ? "fp16x3" : "3xtf32";
}

std::optional<StrictProduct> parse_strict_product(const std::string& name) {
  for (StrictProduct product : {StrictProduct::ThreeTF32, StrictProduct::FP16x3})
    if (name == strict_product_name(product))
      return product;
  return std::nullopt;
}

std::string Dim::str() const { return is_constant() ? std::to_string(value_) : symbol_; }

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + shape[i].str();
  return out + "]";
}

bool shape_is_constant(const Shape& shape) {
  for (const Dim& d : shape)
    if (!d.is_constant())
      return false;
  return true;
}

std::optional<int64_t> shape_numel(const Shape& shape) {
  int64_t n = 1, nonzero = 1;
  for (const Dim& d : shape) {
    if (!d.is_constant())
      return std::nullopt;
    if (__builtin_mul_overflow(n, d.value(), &n) ||
        __builtin_mul_overflow(nonzero, std::max<int64_t>(d.value(), 1), &nonzero))
      return std::nullopt;
  }
  return n;
}

std::string format_double(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, end);
  // Keep floats recognizable as floats when re-read ("1" -> "1.0").
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

namespace {
struct AttrPrinter {
  std::string operator()(const NoneAttr&) const { return "None"; }
  std::string operator()(int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return format_double(v); }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(const std::string& v) const {
    std::string out = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\')
        out += '\\';
      out += c;
    }
    return out + "\"";
  }
  std::string operator()(const std::vector<int64_t>& v) const {
    std::string out = "(";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + std::to_string(v[i]);
    return out + (v.size() == 1 ? ",)" : ")");
  }
};
} // namespace

std::string attr_str(const AttrValue& value) { return std::visit(AttrPrinter{}, value); }

std::vector<std::string> Fusion::symbols() const {
  std::set<std::string> names;
  for (ValueId id : arguments)
    for (const Dim& d : values[id].type.shape)
      if (d.is_symbol())
        names.insert(d.name());
  return {names.begin(), names.end()};
}

const Value* Fusion::find_argument(const std::string& arg_name) const {
  for (ValueId id : arguments)
    if (values[id].name == arg_name)
      return &values[id];
  return nullptr;
}

const Fusion* Module::find(const std::string& fusion_name) const {
  for (const Fusion& fusion : fusions)
    if (fusion.name == fusion_name)
      return &fusion;
  return nullptr;
}

ValueId add_value(Fusion& fusion, Value value) {
  value.id = static_cast<ValueId>(fusion.values.size());
  fusion.values.push_back(std::move(value));
  return fusion.values.back().id;
}

NodeId add_node(Fusion& fusion, Node node) {
  node.id = static_cast<NodeId>(fusion.nodes.size());
  fusion.nodes.push_back(std::move(node));
  return fusion.nodes.back().id;
}

} // namespace fusegen
