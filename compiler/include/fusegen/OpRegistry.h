// The op registry: for every op its parameters (PyTorch names, order and
// defaults), its shape inference, and its float64 reference implementation.
// Adding an op is one `registry.add({...})` entry in the file of its family
// under compiler/src/ops/ plus its reference code.
#pragma once

#include "fusegen/Diagnostics.h"
#include "fusegen/HostTensor.h"
#include "fusegen/IR.h"
#include "fusegen/OpTraits.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusegen {

// What the fusion planner needs to know about an op.
enum class OpKind {
  Pointwise,     // elementwise with broadcasting (activations, arithmetic, clamp)
  Contraction,   // linear, matmul, conv1d/2d/3d, conv_transpose1d/2d/3d
  Normalization, // group_norm, layer_norm, instance_norm, softmax, log_softmax
  ColumnNorm,    // batch_norm: statistics over all but the channel dim
  Reduction,     // sum, mean, amax, ..., logsumexp
  Window,        // max/avg pools and adaptive max/avg pools, 1-3 spatial dims
  Identity,      // dropout in eval mode
  Constant,      // scalar literal materialized as a 0-d tensor
};
const char* op_kind_name(OpKind kind);

enum class ParamKind {
  Tensor,         // required tensor operand
  OptionalTensor, // tensor or absent/None
  TensorOrScalar, // tensor, or a numeric literal (becomes a `constant` node)
  Int,
  Float, // accepts int literals too
  Bool,
  String,
  Ints,          // an int or a tuple of ints; stored as std::vector<int64_t>
  OptionalFloat, // a number or None
  OptionalInts,  // an int, a tuple of ints, or None
  IntsOrString,  // an int, a tuple of ints, or a string (conv padding "same"/"valid")
};
const char* param_kind_name(ParamKind kind);

// How `fusegen run` initializes a tensor bound to this parameter when it is a
// `param`/`state` of the fusion (mirrors torch's default module init).
enum class ParamInit {
  Normal,         // torch.randn: free parameters such as a scale
  KaimingUniform, // nn.Linear/Conv weight: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = prod(shape[1:])
  BiasUniform,    // nn.Linear/Conv bias: same bound, fan_in of the op's `weight`
  Ones,           // norm weight, running_var
  Zeros,          // norm bias, running_mean
};

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::Tensor;
  // Absent: the argument is required. Tensors: optional ones have no default.
  std::optional<AttrValue> default_value;
  ParamInit init = ParamInit::Normal;
};

class ShapeContext;
struct ReferenceContext;

using InferFn = std::function<std::optional<TensorType>(ShapeContext&)>;
using ReferenceFn = std::function<void(ReferenceContext&)>;
// Names of tensor parameters the op updates in place, given its attributes
// (e.g. batch_norm's running stats when training).
using MutatesFn = std::function<std::vector<std::string>(const Attrs&)>;
// Pointwise ops only: the CUDA float expression of the op applied to operand
// expressions (slot order; each a side-effect-free expression that may be
// repeated). May call the device helpers of templates/helpers.cu.
using CudaFn = std::function<std::string(const std::vector<std::string>& operands, const Attrs& attrs)>;

struct OpDef {
  std::string name;
  OpKind kind = OpKind::Pointwise;
  std::vector<ParamSpec> params;
  InferFn infer;
  ReferenceFn reference;
  MutatesFn mutates = {}; // may be empty: the op is pure
  CudaFn cuda = {};  // pointwise, identity and constant ops
  OpTraits traits = {}; // what planner and emitters ask (OpTraits.h)

  // Index of the Node::operands slot for tensor parameter `name`, or -1.
  int tensor_slot(std::string_view param) const;
  const ParamSpec* param(std::string_view name) const;
  static bool is_tensor_kind(ParamKind kind);
};

class OpRegistry {
public:
  // The registry of all built-in ops (built once, immutable afterwards).
  static const OpRegistry& builtin();

  void add(OpDef def);
  const OpDef* find(std::string_view name) const;
  std::vector<std::string> names() const; // sorted

private:
  std::map<std::string, OpDef, std::less<>> ops_;
};

// Symbol bindings discovered during shape inference: a symbol meeting a
// constant in a position that requires equality is fixed to that constant.
class DimUnifier {
public:
  // Resolves a symbol to its fixed constant, if any.
  Dim resolve(const Dim& dim) const;
  Shape resolve(const Shape& shape) const;
  // Makes a and b equal. Returns an error message (empty on success), e.g.
  // "dim N is bound to both 8 and 16".
  std::string unify(const Dim& a, const Dim& b, SourceLoc loc);
  const std::map<std::string, std::pair<int64_t, SourceLoc>>& fixed() const { return fixed_; }
  void fix(const std::string& symbol, int64_t value, SourceLoc loc) { fixed_[symbol] = {value, loc}; }

private:
  std::map<std::string, std::pair<int64_t, SourceLoc>> fixed_;
};

// What an op's shape inference sees: its operand types (slot order), its
// attributes (defaults filled in) and where to report errors.
class ShapeContext {
public:
  ShapeContext(const OpDef& op, std::vector<const TensorType*> operands, Attrs& attrs,
               std::vector<SourceLoc> param_locs, SourceLoc call_loc, DimUnifier& dims,
               Diagnostics& diags);

  const OpDef& op() const { return op_; }
  // Tensor operand by parameter name; null if optional and absent.
  const TensorType* tensor(std::string_view param) const;
  bool has(std::string_view param) const; // tensor present or attribute not None

  int64_t get_int(std::string_view param) const;
  double get_float(std::string_view param) const; // ints are converted
  bool get_bool(std::string_view param) const;
  const std::string& get_string(std::string_view param) const;
  std::vector<int64_t> get_ints(std::string_view param) const;
  std::optional<double> get_optional_float(std::string_view param) const;
  // Canonicalizes an attribute (e.g. a negative dim made positive) so equal
  // programs print and fingerprint the same.
  void set_attr(const std::string& param, AttrValue value);
  const Attrs& attrs() const { return attrs_; }

  // Reports `message` at the argument's location (the call's if absent).
  // Always returns nullopt so inference can `return ctx.error(...)`.
  std::nullopt_t error(std::string_view param, std::string message);
  std::nullopt_t error(std::string message); // at the call
  // a and b must be equal; reports `what` plus both dims on mismatch.
  bool unify(const Dim& a, const Dim& b, std::string_view what);
  // numpy broadcasting of two shapes; reports both shapes on mismatch.
  std::optional<Shape> broadcast(const Shape& a, const Shape& b);
  // Normalizes a possibly negative dim index for a rank; reports out of range.
  std::optional<int64_t> normalize_dim(std::string_view param, int64_t dim, size_t rank);
  Dim resolve(const Dim& dim) const { return dims_.resolve(dim); }

private:
  size_t param_index(std::string_view param) const;

  const OpDef& op_;
  std::vector<const TensorType*> operands_;
  Attrs& attrs_;
  std::vector<SourceLoc> param_locs_;
  SourceLoc call_loc_;
  DimUnifier& dims_;
  Diagnostics& diags_;
};

// What an op's reference implementation sees. Operands are in slot order
// (null if absent); mutable_operand gives in-place access to state tensors
// listed by OpDef::mutates.
struct ReferenceContext {
  const OpDef& op;
  std::vector<const HostTensor*> operands;
  std::vector<HostTensor*> mutable_operands; // same slots; non-null only for mutated state
  const Attrs& attrs;
  HostTensor& out; // shape already set to the inferred concrete shape
  int threads = 1; // what parallel_for may use (InterpreterOptions::threads)

  const HostTensor* tensor(std::string_view param) const;
  HostTensor* mutable_tensor(std::string_view param) const;
  int64_t get_int(std::string_view param) const;
  double get_float(std::string_view param) const;
  bool get_bool(std::string_view param) const;
  const std::string& get_string(std::string_view param) const;
  std::vector<int64_t> get_ints(std::string_view param) const;
  std::optional<double> get_optional_float(std::string_view param) const;
  // Runs body(begin, end) over [0, count) split into contiguous ranges, on up
  // to `threads` threads. Each index must write only its own outputs, and in
  // the same order whatever the split, so results do not depend on threads.
  void parallel_for(int64_t count, const std::function<void(int64_t begin, int64_t end)>& body) const;
};

// Families of ops, each defined in compiler/src/ops/<Family>.cpp.
void register_constant_ops(OpRegistry& registry);
void register_pointwise_ops(OpRegistry& registry);
void register_reduction_ops(OpRegistry& registry);
void register_contraction_ops(OpRegistry& registry);
void register_convolution_ops(OpRegistry& registry);
void register_normalization_ops(OpRegistry& registry);
void register_window_ops(OpRegistry& registry);
void register_misc_ops(OpRegistry& registry);

} // namespace fusegen
