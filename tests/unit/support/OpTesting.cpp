#include "support/OpTesting.h"

#include <gtest/gtest.h>

#include <cctype>
#include <stdexcept>
#include <utility>

namespace fusegen::testing {

namespace {

// Shape inference on F32 operands of `shapes` (nullopt: an absent operand).
Inferred infer_shapes(const std::string& op_name, const std::vector<std::optional<Shape>>& shapes,
                      const Attrs& overrides) {
  const OpDef& op = op_named(op_name);
  std::vector<TensorType> types;
  for (const std::optional<Shape>& s : shapes)
    types.push_back(TensorType{DType::F32, s.value_or(Shape{})});
  std::vector<const TensorType*> operands;
  for (size_t i = 0; i < types.size(); ++i)
    operands.push_back(shapes[i] ? &types[i] : nullptr);
  Inferred result;
  result.attrs = attrs_with_defaults(op, overrides);
  Diagnostics diags;
  ShapeContext ctx(op, operands, result.attrs, std::vector<SourceLoc>(op.params.size()),
                   SourceLoc{0, 1, 1}, result.dims, diags);
  result.type = op.infer(ctx);
  for (const Diagnostic& d : diags.all())
    if (d.severity == Severity::Error)
      result.errors.push_back(d.message);
  EXPECT_EQ(result.type.has_value(), !diags.has_errors()) << op_name;
  return result;
}

// The shape of a concrete tensor: every dim a constant.
Shape constant_shape(const std::vector<int64_t>& dims) {
  Shape result;
  for (int64_t d : dims)
    result.push_back(Dim::constant(d));
  return result;
}

} // namespace

Shape shape(std::string_view text) {
  Shape result;
  std::string token;
  auto flush = [&] {
    if (token.empty())
      return;
    bool numeric = std::isdigit(static_cast<unsigned char>(token[0])) != 0;
    result.push_back(numeric ? Dim::constant(std::stoll(token)) : Dim::symbol(token));
    token.clear();
  };
  for (char c : text) {
    if (c == '[' || c == ']' || c == ' ' || c == ',')
      flush();
    else
      token += c;
  }
  flush();
  return result;
}

const OpDef& op_named(const char* name) {
  const OpDef* op = OpRegistry::builtin().find(name);
  if (!op)
    throw std::runtime_error("op not registered: " + std::string(name));
  return *op;
}

std::string signature(const std::string& op_name) {
  std::string out;
  for (const ParamSpec& p : op_named(op_name).params) {
    out += (out.empty() ? "" : ", ") + p.name;
    if (p.default_value)
      out += "=" + attr_str(*p.default_value);
  }
  return out;
}

Attrs attrs_with_defaults(const OpDef& op, const Attrs& overrides) {
  Attrs attrs;
  for (const ParamSpec& p : op.params)
    if (!OpDef::is_tensor_kind(p.kind) && p.default_value)
      attrs[p.name] = *p.default_value;
  for (const auto& [name, value] : overrides)
    attrs[name] = value;
  return attrs;
}

AttrValue ints(std::vector<int64_t> values) { return values; }

std::string Inferred::shape() const {
  return type ? shape_str(type->shape) : "<error: " + error() + ">";
}

std::string Inferred::error() const { return errors.empty() ? "<no error>" : errors.front(); }

std::string Inferred::attr_text(const std::string& name) const { return attr_str(attrs.at(name)); }

Inferred infer(const std::string& op_name, const std::vector<const char*>& operand_shapes,
               const Attrs& overrides) {
  std::vector<std::optional<Shape>> shapes;
  for (const char* text : operand_shapes)
    shapes.push_back(text ? std::optional<Shape>(shape(text)) : std::nullopt);
  return infer_shapes(op_name, shapes, overrides);
}

HostTensor host(std::vector<int64_t> shape, std::vector<double> data) {
  HostTensor t(std::move(shape));
  EXPECT_EQ(t.data.size(), data.size());
  t.data = std::move(data);
  return t;
}

HostTensor iota(std::vector<int64_t> shape, double scale, double offset) {
  HostTensor t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = static_cast<double>(i) * scale + offset;
  return t;
}

HostTensor run_reference(const OpDef& op, const std::vector<Operand>& operands, const Attrs& attrs,
                         std::vector<int64_t> out_shape,
                         std::vector<HostTensor*> mutable_operands) {
  std::vector<const HostTensor*> tensors;
  for (const Operand& operand : operands)
    tensors.push_back(operand.get());
  mutable_operands.resize(tensors.size(), nullptr);
  HostTensor out(std::move(out_shape));
  ReferenceContext ctx{op, tensors, mutable_operands, attrs, out};
  op.reference(ctx);
  return out;
}

HostTensor run(const std::string& op_name, const std::vector<Operand>& operands,
               const Attrs& overrides, std::vector<HostTensor*> mutable_operands) {
  std::vector<std::optional<Shape>> shapes;
  for (const Operand& operand : operands)
    shapes.push_back(operand.get() ? std::optional<Shape>(constant_shape(operand.get()->shape))
                                   : std::nullopt);
  Inferred inferred = infer_shapes(op_name, shapes, overrides);
  if (!inferred.type)
    throw std::runtime_error("inference failed: " + inferred.error());
  std::vector<int64_t> out_shape;
  for (const Dim& d : inferred.type->shape)
    out_shape.push_back(d.value());
  return run_reference(op_named(op_name), operands, inferred.attrs, std::move(out_shape),
                       std::move(mutable_operands));
}

void expect_values(const HostTensor& actual, const std::vector<double>& expected,
                   double tolerance) {
  ASSERT_EQ(actual.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual.data[i], expected[i], tolerance) << "at flat index " << i;
}

} // namespace fusegen::testing
