#include "fusegen/BuildIR.h"

#include "fusegen/OpRegistry.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <set>

namespace fusegen {
namespace {


// Edit distance counting a swap of two neighbouring letters as one edit
// (optimal string alignment), so "rleu" suggests "relu".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// " (did you mean 'relu'?)" when a known name is close to `name`.
std::string suggestion(std::string_view name, const std::vector<std::string>& candidates) {
  if (name.size() > 64)
    return ""; // the distance is quadratic; long names are not typos of op names
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

bool is_number(const ast::Expr& e) { return e.kind == ast::ExprKind::Int || e.kind == ast::ExprKind::Float; }

double number_value(const ast::Expr& e) {
  return e.kind == ast::ExprKind::Int ? static_cast<double>(e.int_value) : e.float_value;
}

const char* expr_kind_description(const ast::Expr& e) {
  switch (e.kind) {
  case ast::ExprKind::Int: return "an int";
  case ast::ExprKind::Float: return "a float";
  case ast::ExprKind::Bool: return "a bool";
  case ast::ExprKind::String: return "a string";
  case ast::ExprKind::None: return "None";
  case ast::ExprKind::Tuple: return "a tuple";
  case ast::ExprKind::Name:
  case ast::ExprKind::Call:
  case ast::ExprKind::Binary:
  case ast::ExprKind::Unary: return "a tensor";
  }
  return "?";
}

bool is_tensor_expr(const ast::Expr& e) {
  return e.kind == ast::ExprKind::Name || e.kind == ast::ExprKind::Call ||
         e.kind == ast::ExprKind::Binary || e.kind == ast::ExprKind::Unary;
}

// Builds one fusion. A failed sub-expression yields kNoId and reports once;
// its users then stay silent so one mistake gives one error.
class FusionBuilder {
public:
  FusionBuilder(const ast::Fusion& ast, Diagnostics& diags)
      : ast_(ast), diags_(diags), registry_(OpRegistry::builtin()) {}

  Fusion build() {
    fusion_.name = ast_.name;
    fusion_.loc = ast_.loc;
    build_options();
    for (const ast::Decl& decl : ast_.decls)
      build_decl(decl);
    for (const ast::Stmt& stmt : ast_.stmts) {
      if (diags_.at_error_limit())
        break;
      build_stmt(stmt);
    }
    if (fusion_.outputs.empty() && !had_error_)
      diags_.error(ast_.loc, "fusion '" + ast_.name + "' has no output; mark a result with `output`");
    finish_types();
    return std::move(fusion_);
  }

private:
  void error(SourceLoc loc, std::string message) {
    had_error_ = true;
    diags_.error(loc, std::move(message));
  }

  // fusion name (precision=strict|tf32)
  void build_options() {
    std::set<std::string> seen;
    for (const ast::FusionOption& option : ast_.options) {
      if (!seen.insert(option.key).second) {
        error(option.key_loc, "fusion option '" + option.key + "' given twice");
        continue;
      }
      if (option.key != "precision") {
        error(option.key_loc, "unknown fusion option '" + option.key + "' (known options: precision)");
        continue;
      }
      const ast::Expr& value = *option.value;
      std::string text = (value.kind == ast::ExprKind::Name || value.kind == ast::ExprKind::String)
                             ? value.text
                             : "";
      if (text == "strict")
        fusion_.precision = Precision::Strict;
      else if (text == "tf32")
        fusion_.precision = Precision::TF32;
      else
        error(value.loc, "precision must be strict or tf32");
    }
  }

  void build_decl(const ast::Decl& decl) {
    // Locations are kept apart from values: a declaration whose type was
    // rejected has no value but can still be duplicated.
    if (auto it = declared_at_.find(decl.name); it != declared_at_.end()) {
      error(decl.loc, "duplicate declaration of '" + decl.name + "'");
      diags_.note(it->second, "'" + decl.name + "' was declared here");
      return;
    }
    declared_at_[decl.name] = decl.loc;
    Value value;
    value.kind = decl.kind == ast::DeclKind::Input   ? ValueKind::Input
                 : decl.kind == ast::DeclKind::Param ? ValueKind::Param
                                                     : ValueKind::State;
    value.name = decl.name;
    value.loc = decl.loc;
    bool ok = build_type(decl.type, value.type);
    ValueId id = add_value(fusion_, std::move(value));
    fusion_.arguments.push_back(id);
    // A declaration with a bad type is still a known name (no cascades).
    names_[decl.name] = ok ? id : kNoId;
  }

  bool build_type(const ast::TypeExpr& type, TensorType& out) {
    if (type.dtype == "f16" || type.dtype == "bf16") {
      error(type.dtype_loc, "dtype " + type.dtype + " is not supported yet (only f32)");
      return false;
    }
    if (type.dtype != "f32") {
      error(type.dtype_loc, "unknown dtype '" + type.dtype + "' (supported: f32)");
      return false;
    }
    out.dtype = DType::F32;
    // Zero dims count as 1 here so they cannot hide huge other dims.
    int64_t elements = 1;
    for (const ast::DimExpr& dim : type.dims) {
      if (dim.is_symbol) {
        out.shape.push_back(Dim::symbol(dim.symbol));
        continue;
      }
      if (dim.value < 0) {
        error(dim.loc, "dims must be non-negative");
        return false;
      }
      if (__builtin_mul_overflow(elements, std::max<int64_t>(dim.value, 1), &elements) ||
          elements > kMaxTensorElements) {
        error(dim.loc, "tensor has too many elements (limit 2^48)");
        return false;
      }
      out.shape.push_back(Dim::constant(dim.value));
    }
    return true;
  }

  void build_stmt(const ast::Stmt& stmt) {
    ValueId id = kNoId;
    if (stmt.value) {
      if (!is_tensor_expr(*stmt.value)) {
        error(stmt.value->loc, "'" + stmt.name + "' must be bound to a tensor expression, not " +
                                   expr_kind_description(*stmt.value));
        poison(stmt.name);
        return;
      }
      id = build_tensor(*stmt.value);
      if (id == kNoId) {
        poison(stmt.name);
        return;
      }
      Value& value = fusion_.value(id);
      if (value.kind == ValueKind::Result)
        value.name = stmt.name;
      names_[stmt.name] = id;
    } else {
      id = lookup(stmt.name, stmt.loc);
      if (id == kNoId)
        return;
    }
    if (!stmt.is_output)
      return;
    for (const FusionOutput& output : fusion_.outputs) {
      if (output.name == stmt.name) {
        error(stmt.loc, "output '" + stmt.name + "' is declared twice");
        return;
      }
    }
    if (const Value* argument = fusion_.find_argument(stmt.name);
        argument && argument->id != id) {
      error(stmt.loc, "output '" + stmt.name + "' has the name of a declared tensor");
      return;
    }
    fusion_.outputs.push_back({stmt.name, id, stmt.loc});
  }

  void poison(const std::string& name) {
    names_[name] = kNoId;
  }

  ValueId lookup(const std::string& name, SourceLoc loc) {
    auto it = names_.find(name);
    if (it == names_.end()) {
      std::vector<std::string> known;
      for (const auto& [known_name, _] : names_)
        known.push_back(known_name);
      error(loc, "use of undefined name '" + name + "'" + suggestion(name, known));
      return kNoId;
    }
    return it->second; // kNoId for poisoned names: already reported
  }

  ValueId build_tensor(const ast::Expr& e) {
    switch (e.kind) {
    case ast::ExprKind::Name: return lookup(e.text, e.loc);
    case ast::ExprKind::Call: return build_call(e);
    case ast::ExprKind::Binary: return build_binary(e);
    case ast::ExprKind::Unary: return build_unary(e);
    default:
      error(e.loc, std::string("expected a tensor, found ") + expr_kind_description(e));
      return kNoId;
    }
  }

  // A number in a tensor position becomes a 0-d `constant` node.
  ValueId build_constant(double number, SourceLoc loc) {
    const OpDef* op = registry_.find("constant");
    assert(op);
    return add_op(*op, {}, {{"value", number}}, {SourceLoc{}}, loc);
  }

  ValueId build_operand(const ast::Expr& e) {
    if (is_number(e))
      return build_constant(number_value(e), e.loc);
    return build_tensor(e);
  }

  // a + b, a - b, a * b, a / b: sugar for add/sub/mul/div.
  ValueId build_binary(const ast::Expr& e) {
    static const std::map<std::string, std::string> kOps = {
        {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}};
    auto it = kOps.find(e.text);
    assert(it != kOps.end() && e.elements.size() == 2);
    const ast::Expr& lhs = *e.elements[0];
    const ast::Expr& rhs = *e.elements[1];
    for (const ast::Expr* side : {&lhs, &rhs}) {
      if (!is_number(*side) && !is_tensor_expr(*side)) {
        error(side->loc, "operand of '" + e.text + "' must be a tensor or a number, not " +
                             expr_kind_description(*side));
        return kNoId;
      }
    }
    if (is_number(lhs) && is_number(rhs)) {
      error(e.loc, "arithmetic on two numbers is not a tensor expression; write the result");
      return kNoId;
    }
    ValueId a = build_operand(lhs);
    ValueId b = build_operand(rhs);
    if (a == kNoId || b == kNoId)
      return kNoId;
    const OpDef* op = registry_.find(it->second);
    assert(op);
    return add_op(*op, {a, b}, default_attrs(*op), std::vector<SourceLoc>(op->params.size()), e.loc);
  }

  // -a: sugar for neg (unary minus on a literal was folded by the parser).
  ValueId build_unary(const ast::Expr& e) {
    assert(e.elements.size() == 1);
    ValueId operand = build_tensor(*e.elements[0]);
    if (operand == kNoId)
      return kNoId;
    if (e.text == "+")
      return operand;
    const OpDef* op = registry_.find("neg");
    assert(op);
    return add_op(*op, {operand}, default_attrs(*op), std::vector<SourceLoc>(op->params.size()), e.loc);
  }

  static Attrs default_attrs(const OpDef& op) {
    Attrs attrs;
    for (const ParamSpec& p : op.params)
      if (!OpDef::is_tensor_kind(p.kind) && p.default_value)
        attrs[p.name] = *p.default_value;
    return attrs;
  }

  // Matches positional and keyword arguments to the op's parameters.
  ValueId build_call(const ast::Expr& call) {
    const OpDef* op = registry_.find(call.text);
    if (!op || op->kind == OpKind::Constant) {
      std::vector<std::string> callable;
      for (const std::string& name : registry_.names())
        if (registry_.find(name)->kind != OpKind::Constant)
          callable.push_back(name);
      error(call.loc, "unknown op '" + call.text + "'" + suggestion(call.text, callable));
      return kNoId;
    }
    std::vector<const ast::Arg*> bound(op->params.size(), nullptr);
    bool ok = true;
    size_t positional = 0;
    for (const ast::Arg& arg : call.args) {
      size_t index;
      if (arg.keyword.empty()) {
        index = positional++;
        if (index >= op->params.size()) {
          size_t most = op->params.size();
          error(arg.value->loc, op->name + " takes at most " + std::to_string(most) +
                                    (most == 1 ? " argument (" : " arguments (") +
                                    std::to_string(call.args.size()) + " given)");
          return kNoId;
        }
      } else {
        auto it = std::find_if(op->params.begin(), op->params.end(),
                               [&](const ParamSpec& p) { return p.name == arg.keyword; });
        if (it == op->params.end()) {
          std::vector<std::string> names;
          for (const ParamSpec& p : op->params)
            names.push_back(p.name);
          error(arg.keyword_loc, "unknown argument '" + arg.keyword + "' for " + op->name +
                                     suggestion(arg.keyword, names));
          ok = false;
          continue;
        }
        index = static_cast<size_t>(it - op->params.begin());
      }
      if (bound[index]) {
        error(arg.keyword.empty() ? arg.value->loc : arg.keyword_loc,
              "argument '" + op->params[index].name + "' of " + op->name + " given twice");
        ok = false;
        continue;
      }
      bound[index] = &arg;
    }
    if (!ok)
      return kNoId;

    std::vector<ValueId> operands;
    Attrs attrs;
    std::vector<SourceLoc> locs(op->params.size());
    for (size_t i = 0; i < op->params.size(); ++i) {
      const ParamSpec& param = op->params[i];
      const ast::Arg* arg = bound[i];
      if (arg)
        locs[i] = arg->value->loc;
      if (!arg && (param.kind == ParamKind::OptionalTensor || param.default_value)) {
        if (OpDef::is_tensor_kind(param.kind))
          operands.push_back(kNoId);
        else
          attrs[param.name] = *param.default_value;
        continue;
      }
      if (!arg) {
        error(call.loc, "missing argument '" + param.name + "' of " + op->name);
        ok = false;
        continue;
      }
      if (OpDef::is_tensor_kind(param.kind)) {
        std::optional<ValueId> operand = build_tensor_arg(*op, param, *arg->value);
        ok = ok && operand.has_value();
        operands.push_back(operand.value_or(kNoId));
      } else {
        std::optional<AttrValue> value = build_attr(*op, param, *arg->value);
        ok = ok && value.has_value();
        if (value)
          attrs[param.name] = std::move(*value);
      }
    }
    if (!ok)
      return kNoId;
    return add_op(*op, std::move(operands), std::move(attrs), std::move(locs), call.loc);
  }

  std::optional<ValueId> build_tensor_arg(const OpDef& op, const ParamSpec& param, const ast::Expr& e) {
    if (e.kind == ast::ExprKind::None && param.kind == ParamKind::OptionalTensor)
      return kNoId;
    if (is_number(e) && param.kind == ParamKind::TensorOrScalar)
      return build_constant(number_value(e), e.loc);
    if (!is_tensor_expr(e)) {
      error(e.loc, "argument '" + param.name + "' of " + op.name + " must be a tensor, not " +
                       expr_kind_description(e));
      return std::nullopt;
    }
    ValueId id = build_tensor(e);
    if (id == kNoId)
      return std::nullopt;
    return id;
  }

  std::optional<AttrValue> build_attr(const OpDef& op, const ParamSpec& param, const ast::Expr& e) {
    auto mismatch = [&]() -> std::optional<AttrValue> {
      error(e.loc, "argument '" + param.name + "' of " + op.name + " must be " + param_kind_name(param.kind) +
                       ", not " + expr_kind_description(e));
      return std::nullopt;
    };
    switch (param.kind) {
    case ParamKind::Int:
      if (e.kind == ast::ExprKind::Int)
        return AttrValue(e.int_value);
      return mismatch();
    case ParamKind::Float:
      if (is_number(e))
        return AttrValue(number_value(e));
      return mismatch();
    case ParamKind::OptionalFloat:
      if (is_number(e))
        return AttrValue(number_value(e));
      if (e.kind == ast::ExprKind::None)
        return AttrValue(NoneAttr{});
      return mismatch();
    case ParamKind::Bool:
      if (e.kind == ast::ExprKind::Bool)
        return AttrValue(e.bool_value);
      return mismatch();
    case ParamKind::String:
      if (e.kind == ast::ExprKind::String)
        return AttrValue(e.text);
      return mismatch();
    case ParamKind::Ints:
    case ParamKind::OptionalInts:
    case ParamKind::IntsOrString: {
      if (e.kind == ast::ExprKind::None && param.kind == ParamKind::OptionalInts)
        return AttrValue(NoneAttr{});
      if (e.kind == ast::ExprKind::String && param.kind == ParamKind::IntsOrString)
        return AttrValue(e.text);
      if (e.kind == ast::ExprKind::Int)
        return AttrValue(std::vector<int64_t>{e.int_value});
      if (e.kind != ast::ExprKind::Tuple)
        return mismatch();
      std::vector<int64_t> values;
      for (const ast::ExprPtr& element : e.elements) {
        if (element->kind != ast::ExprKind::Int) {
          error(element->loc, "argument '" + param.name + "' of " + op.name +
                                  " must be a tuple of ints, found " + expr_kind_description(*element));
          return std::nullopt;
        }
        values.push_back(element->int_value);
      }
      return AttrValue(std::move(values));
    }
    case ParamKind::Tensor:
    case ParamKind::OptionalTensor:
    case ParamKind::TensorOrScalar: break;
    }
    assert(false && "tensor parameter handled by build_tensor_arg");
    return std::nullopt;
  }

  // Runs shape inference and appends the node. Returns its result or kNoId.
  ValueId add_op(const OpDef& op, std::vector<ValueId> operands, Attrs attrs,
                 std::vector<SourceLoc> param_locs, SourceLoc loc) {
    std::vector<const TensorType*> types;
    for (ValueId id : operands)
      types.push_back(id == kNoId ? nullptr : &fusion_.value(id).type);
    size_t errors_before = diags_.error_count();
    ShapeContext ctx(op, types, attrs, param_locs, loc, dims_, diags_);
    std::optional<TensorType> type = op.infer(ctx);
    if (!type) {
      if (diags_.error_count() == errors_before)
        error(loc, op.name + ": invalid arguments"); // inference must explain itself
      had_error_ = true;
      return kNoId;
    }
    if (!check_mutation(op, operands, attrs, param_locs, loc))
      return kNoId;
    if (auto elements = shape_numel(type->shape); shape_is_constant(type->shape) &&
                                                 (!elements || *elements > kMaxTensorElements)) {
      error(loc, op.name + ": result " + shape_str(type->shape) + " has too many elements (limit 2^48)");
      return kNoId;
    }
    Value result;
    result.kind = ValueKind::Result;
    result.type = std::move(*type);
    result.loc = loc;
    ValueId result_id = add_value(fusion_, std::move(result));
    Node node;
    node.op = op.name;
    node.operands = std::move(operands);
    node.attrs = std::move(attrs);
    node.result = result_id;
    node.loc = loc;
    NodeId node_id = add_node(fusion_, std::move(node));
    fusion_.value(result_id).producer = node_id;
    return result_id;
  }

  // Ops that update a tensor in place may only do so to `state` tensors.
  bool check_mutation(const OpDef& op, const std::vector<ValueId>& operands, const Attrs& attrs,
                      const std::vector<SourceLoc>& param_locs, SourceLoc loc) {
    if (!op.mutates)
      return true;
    for (const std::string& param : op.mutates(attrs)) {
      ValueId id = operands.at(static_cast<size_t>(op.tensor_slot(param)));
      if (id == kNoId || fusion_.value(id).kind == ValueKind::State)
        continue;
      size_t index = static_cast<size_t>(op.param(param) - op.params.data());
      SourceLoc where = param_locs.at(index).valid() ? param_locs[index] : loc;
      error(where, op.name + " updates '" + param + "' in place: pass a tensor declared with `state`");
      return false;
    }
    return true;
  }

  // Applies the dims fixed during inference to every result type.
  void finish_types() {
    fusion_.fixed_dims = dims_.fixed();
    for (Value& value : fusion_.values)
      if (value.kind == ValueKind::Result)
        value.type.shape = dims_.resolve(value.type.shape);
  }

  const ast::Fusion& ast_;
  Diagnostics& diags_;
  const OpRegistry& registry_;
  Fusion fusion_;
  DimUnifier dims_;
  std::map<std::string, ValueId> names_;
  std::map<std::string, SourceLoc> declared_at_;
  bool had_error_ = false;
};

} // namespace

Module build_ir(const ast::SpecFile& spec, Diagnostics& diags) {
  Module module;
  std::map<std::string, SourceLoc> seen;
  for (const ast::Fusion& fusion : spec.fusions) {
    if (auto it = seen.find(fusion.name); it != seen.end()) {
      diags.error(fusion.loc, "duplicate fusion '" + fusion.name + "'");
      diags.note(it->second, "'" + fusion.name + "' was defined here");
      continue;
    }
    seen[fusion.name] = fusion.loc;
    module.fusions.push_back(FusionBuilder(fusion, diags).build());
  }
  return module;
}

} // namespace fusegen
