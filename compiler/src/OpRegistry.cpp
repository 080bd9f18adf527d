#include "fusegen/OpRegistry.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <thread>

namespace fusegen {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
  case OpKind::Pointwise: return "pointwise";
  case OpKind::Contraction: return "contraction";
  case OpKind::Normalization: return "normalization";
  case OpKind::ColumnNorm: return "column-norm";
  case OpKind::Reduction: return "reduction";
  case OpKind::Window: return "window";
  case OpKind::Identity: return "identity";
  case OpKind::Constant: return "constant";
  }
  return "?";
}

const char* param_kind_name(ParamKind kind) {
  switch (kind) {
  case ParamKind::Tensor: return "a tensor";
  case ParamKind::OptionalTensor: return "a tensor or None";
  case ParamKind::TensorOrScalar: return "a tensor or a number";
  case ParamKind::Int: return "an int";
  case ParamKind::Float: return "a number";
  case ParamKind::Bool: return "a bool";
  case ParamKind::String: return "a string";
  case ParamKind::Ints: return "an int or a tuple of ints";
  case ParamKind::OptionalFloat: return "a number or None";
  case ParamKind::OptionalInts: return "an int, a tuple of ints or None";
  case ParamKind::IntsOrString:
    return "an int, a tuple of ints or a string";
  }
  return "?";
}

bool OpDef::is_tensor_kind(ParamKind kind) {
  return kind == ParamKind::Tensor || kind == ParamKind::OptionalTensor ||
         kind == ParamKind::TensorOrScalar;
}

int OpDef::tensor_slot(std::string_view param_name) const {
  int slot = 0;
  for (const ParamSpec& p : params) {
    if (!is_tensor_kind(p.kind))
      continue;
    if (p.name == param_name)
      return slot;
    ++slot;
  }
  return -1;
}

const ParamSpec* OpDef::param(std::string_view param_name) const {
  for (const ParamSpec& p : params)
    if (p.name == param_name)
      return &p;
  return nullptr;
}

const OpRegistry& OpRegistry::builtin() {
  // Built on first use; the list of families is explicit so registration order
  // (and therefore any iteration) is deterministic.
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_constant_ops(r);
    register_pointwise_ops(r);
    register_reduction_ops(r);
    register_contraction_ops(r);
    register_convolution_ops(r);
    register_normalization_ops(r);
    register_window_ops(r);
    register_misc_ops(r);
    return r;
  }();
  return registry;
}

void OpRegistry::add(OpDef def) {
  assert(!ops_.count(def.name) && "op registered twice");
  assert(def.infer && def.reference && "op needs shape inference and a reference");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& [name, def] : ops_)
    result.push_back(name);
  return result;
}

// ---- DimUnifier ----

Dim DimUnifier::resolve(const Dim& dim) const {
  if (dim.is_symbol()) {
    auto it = fixed_.find(dim.name());
    if (it != fixed_.end())
      return Dim::constant(it->second.first);
  }
  return dim;
}

Shape DimUnifier::resolve(const Shape& shape) const {
  Shape result;
  for (const Dim& d : shape)
    result.push_back(resolve(d));
  return result;
}

std::string DimUnifier::unify(const Dim& a_in, const Dim& b_in, SourceLoc loc) {
  Dim a = resolve(a_in), b = resolve(b_in);
  if (a == b)
    return {};
  if (a.is_constant() && b.is_constant()) {
    // A symbol fixed earlier meeting another constant: say which symbol.
    for (const Dim* original : {&a_in, &b_in}) {
      if (!original->is_symbol() || !fixed_.count(original->name()))
        continue;
      const auto& [value, where] = fixed_.at(original->name());
      const Dim& other = original == &a_in ? b : a;
      return "dim " + original->name() + " is bound to both " + std::to_string(value) +
             " (at line " + std::to_string(where.line) + ":" + std::to_string(where.col) +
             ") and " + std::to_string(other.value());
    }
    return std::to_string(a.value()) + " vs " + std::to_string(b.value());
  }
  if (a.is_symbol() && b.is_symbol())
    return "symbolic dims " + a.name() + " and " + b.name() +
           " must be equal; use one name for both";
  const Dim& symbol = a.is_symbol() ? a : b;
  const Dim& constant = a.is_symbol() ? b : a;
  fixed_[symbol.name()] = {constant.value(), loc};
  return {};
}

// ---- ShapeContext ----

ShapeContext::ShapeContext(const OpDef& op, std::vector<const TensorType*> operands, Attrs& attrs,
                           std::vector<SourceLoc> param_locs, SourceLoc call_loc,
                           DimUnifier& dims, Diagnostics& diags)
    : op_(op), operands_(std::move(operands)), attrs_(attrs), param_locs_(std::move(param_locs)),
      call_loc_(call_loc), dims_(dims), diags_(diags) {}

size_t ShapeContext::param_index(std::string_view param) const {
  for (size_t i = 0; i < op_.params.size(); ++i)
    if (op_.params[i].name == param)
      return i;
  assert(false && "op asked for a parameter it does not declare");
  return 0;
}

const TensorType* ShapeContext::tensor(std::string_view param) const {
  int slot = op_.tensor_slot(param);
  assert(slot >= 0 && "not a tensor parameter");
  return operands_.at(static_cast<size_t>(slot));
}

bool ShapeContext::has(std::string_view param) const {
  if (op_.tensor_slot(param) >= 0)
    return tensor(param) != nullptr;
  auto it = attrs_.find(std::string(param));
  return it != attrs_.end() && !std::holds_alternative<NoneAttr>(it->second);
}

namespace {
const AttrValue& attr_of(const Attrs& attrs, std::string_view param) {
  auto it = attrs.find(std::string(param));
  assert(it != attrs.end() && "attribute missing after defaults were applied");
  return it->second;
}
double as_double(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return static_cast<double>(*i);
  return std::get<double>(v);
}
std::vector<int64_t> as_ints(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return {*i};
  return std::get<std::vector<int64_t>>(v);
}
std::optional<double> as_optional_double(const AttrValue& v) {
  if (std::holds_alternative<NoneAttr>(v))
    return std::nullopt;
  return as_double(v);
}
} // namespace

int64_t ShapeContext::get_int(std::string_view p) const { return std::get<int64_t>(attr_of(attrs_, p)); }
double ShapeContext::get_float(std::string_view p) const { return as_double(attr_of(attrs_, p)); }
bool ShapeContext::get_bool(std::string_view p) const { return std::get<bool>(attr_of(attrs_, p)); }
const std::string& ShapeContext::get_string(std::string_view p) const {
  return std::get<std::string>(attr_of(attrs_, p));
}
std::vector<int64_t> ShapeContext::get_ints(std::string_view p) const { return as_ints(attr_of(attrs_, p)); }
std::optional<double> ShapeContext::get_optional_float(std::string_view p) const {
  return as_optional_double(attr_of(attrs_, p));
}

void ShapeContext::set_attr(const std::string& param, AttrValue value) { attrs_[param] = std::move(value); }

std::nullopt_t ShapeContext::error(std::string_view param, std::string message) {
  SourceLoc loc = param_locs_.at(param_index(param));
  diags_.error(loc.valid() ? loc : call_loc_, op_.name + ": " + message);
  return std::nullopt;
}

std::nullopt_t ShapeContext::error(std::string message) {
  diags_.error(call_loc_, op_.name + ": " + message);
  return std::nullopt;
}

bool ShapeContext::unify(const Dim& a, const Dim& b, std::string_view what) {
  std::string problem = dims_.unify(a, b, call_loc_);
  if (problem.empty())
    return true;
  error(std::string(what) + " (" + problem + ")");
  return false;
}

std::optional<Shape> ShapeContext::broadcast(const Shape& a_in, const Shape& b_in) {
  Shape a = dims_.resolve(a_in), b = dims_.resolve(b_in);
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, numpy style.
    size_t ia = i - (rank - a.size()), ib = i - (rank - b.size());
    const Dim* da = i < rank - a.size() ? nullptr : &a[ia];
    const Dim* db = i < rank - b.size() ? nullptr : &b[ib];
    if (!da || (da->is_constant() && da->value() == 1 && db)) {
      result[i] = *db;
    } else if (!db || (db->is_constant() && db->value() == 1)) {
      result[i] = *da;
    } else {
      // Unify the dims as written so a message names a symbol fixed earlier.
      std::string problem = dims_.unify(a_in[ia], b_in[ib], call_loc_);
      if (!problem.empty()) {
        error("shapes " + shape_str(a_in) + " and " + shape_str(b_in) + " cannot be broadcast (" +
              problem + ")");
        return std::nullopt;
      }
      result[i] = dims_.resolve(*da);
    }
  }
  return result;
}

std::optional<int64_t> ShapeContext::normalize_dim(std::string_view param, int64_t dim, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  int64_t lo = rank == 0 ? -1 : -r, hi = rank == 0 ? 0 : r - 1;
  if (dim < lo || dim > hi) {
    error(param, "dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                     std::to_string(rank) + " (expected " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ")");
    return std::nullopt;
  }
  return dim < 0 ? dim + std::max<int64_t>(r, 1) : dim;
}

// ---- ReferenceContext ----

const HostTensor* ReferenceContext::tensor(std::string_view param) const {
  int slot = op.tensor_slot(param);
  assert(slot >= 0 && "not a tensor parameter");
  return operands.at(static_cast<size_t>(slot));
}
HostTensor* ReferenceContext::mutable_tensor(std::string_view param) const {
  int slot = op.tensor_slot(param);
  assert(slot >= 0 && "not a tensor parameter");
  return mutable_operands.at(static_cast<size_t>(slot));
}
int64_t ReferenceContext::get_int(std::string_view p) const { return std::get<int64_t>(attr_of(attrs, p)); }
double ReferenceContext::get_float(std::string_view p) const { return as_double(attr_of(attrs, p)); }
bool ReferenceContext::get_bool(std::string_view p) const { return std::get<bool>(attr_of(attrs, p)); }
const std::string& ReferenceContext::get_string(std::string_view p) const {
  return std::get<std::string>(attr_of(attrs, p));
}
std::vector<int64_t> ReferenceContext::get_ints(std::string_view p) const { return as_ints(attr_of(attrs, p)); }
std::optional<double> ReferenceContext::get_optional_float(std::string_view p) const {
  return as_optional_double(attr_of(attrs, p));
}

const char* statistic_name(Statistic statistic) {
  switch (statistic) {
  case Statistic::None:
    return "None";
  case Statistic::Sum:
    return "Sum";
  case Statistic::Mean:
    return "Mean";
  case Statistic::Max:
    return "Max";
  case Statistic::Min:
    return "Min";
  case Statistic::LogSumExp:
    return "LogSumExp";
  case Statistic::Moments:
    return "Moments";
  case Statistic::Softmax:
    return "Softmax";
  case Statistic::LogSoftmax:
    return "LogSoftmax";
  }
  return "?";
}

// Ranges under this many indices run on the calling thread: a thread costs
// more than the work (the references of small test shapes).
constexpr int64_t kMinIndicesPerThread = 64;

void ReferenceContext::parallel_for(int64_t count, const std::function<void(int64_t, int64_t)>& body) const {
  const int64_t workers = std::clamp<int64_t>(count / kMinIndicesPerThread, 1, std::max(threads, 1));
  if (workers == 1) {
    body(0, count);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t per = (count + workers - 1) / workers;
  for (int64_t begin = per; begin < count; begin += per)
    pool.emplace_back(body, begin, std::min(count, begin + per));
  body(0, std::min(count, per));
  for (std::thread& thread : pool)
    thread.join();
}

} // namespace fusegen
