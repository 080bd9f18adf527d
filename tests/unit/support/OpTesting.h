// Test driver for the op registry: runs an op's shape inference and float64
// reference the way the IR builder and the interpreter do, on shapes written
// as text and on small host tensors.
#pragma once

#include "fusegen/OpRegistry.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusegen::testing {

// ---- ops and attributes ----

// "[N, 3, 32]" -> {N, 3, 32}: numbers are constants, names are symbols. The
// brackets are optional; "[]" is the shape of a 0-d tensor.
Shape shape(std::string_view text);

// The built-in op `name`; throws std::runtime_error if it is not registered.
// (A C string, so that `const OpDef& op = op_named("relu")` makes no
// temporary: GCC 13's -Wdangling-reference flags a returned reference when
// an argument is a temporary object.)
const OpDef& op_named(const char* name);
inline const OpDef& op_named(const std::string& name) { return op_named(name.c_str()); }

// The op's parameters with their defaults: "input, dim=None, keepdim=false".
std::string signature(const std::string& op_name);

// Every non-tensor parameter's default, then `overrides`, as the IR builder
// fills them in.
Attrs attrs_with_defaults(const OpDef& op, const Attrs& overrides);

// A tuple attribute: ints({2, 2}).
AttrValue ints(std::vector<int64_t> values);

// ---- shape inference ----

struct Inferred {
  std::optional<TensorType> type; // empty if inference failed
  Attrs attrs;                    // after canonicalization by inference
  std::vector<std::string> errors;
  DimUnifier dims; // symbols fixed by inference

  // The inferred shape ("[N, 4]"), or "<error: ...>" with the first error.
  std::string shape() const;
  // The first error, or "<no error>".
  std::string error() const;
  // attr_str of attribute `name`: "(0, 2)".
  std::string attr_text(const std::string& name) const;
};

// Runs `op_name`'s shape inference on F32 operands of the given shapes in slot
// order (nullptr: an absent optional operand), with attrs_with_defaults.
// Also checks that inference returns a type exactly when it reports no error.
Inferred infer(const std::string& op_name, const std::vector<const char*>& operand_shapes,
               const Attrs& overrides = {});

// ---- references ----

// A tensor of `shape` holding `data` (checked to have one value per element).
HostTensor host(std::vector<int64_t> shape, std::vector<double> data);

// 0, 1, 2, ... in row-major order (times `scale`, plus `offset`).
HostTensor iota(std::vector<int64_t> shape, double scale = 1.0, double offset = 0.0);

// One operand slot of run/run_reference: a tensor (referred to, not copied),
// or nullptr for an absent optional operand.
class Operand {
public:
  Operand(const HostTensor& tensor) : tensor_(&tensor) {}
  Operand(std::nullptr_t) {}
  const HostTensor* get() const { return tensor_; }

private:
  const HostTensor* tensor_ = nullptr;
};

// Runs `op`'s reference on `operands` with `attrs` exactly as given (no
// inference, no canonicalization) into an output of `out_shape`.
// `mutable_operands` are the slots the reference may update in place
// (batch_norm's running stats); missing slots are null.
HostTensor run_reference(const OpDef& op, const std::vector<Operand>& operands, const Attrs& attrs,
                         std::vector<int64_t> out_shape,
                         std::vector<HostTensor*> mutable_operands = {});

// Infers the output shape from the operands' concrete shapes as the
// interpreter does, then runs the reference with the canonicalized attributes.
// Throws std::runtime_error if inference fails.
HostTensor run(const std::string& op_name, const std::vector<Operand>& operands,
               const Attrs& overrides = {}, std::vector<HostTensor*> mutable_operands = {});

// Expects `actual` to hold `expected` (flat, row-major) within `tolerance`.
void expect_values(const HostTensor& actual, const std::vector<double>& expected,
                   double tolerance = 1e-12);

} // namespace fusegen::testing
