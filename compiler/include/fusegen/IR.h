// The typed IR: one Fusion is a graph of Values (inputs, params, state and
// node results) and Nodes (op applications). Values carry a dtype and a shape
// whose dims are constants or symbols bound at call time. Nodes are stored in
// topological (program) order; a Value is produced by at most one Node.
#pragma once

#include "fusegen/Diagnostics.h"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fusegen {

enum class DType { F32 };
const char* dtype_name(DType dtype);

// A dimension: a non-negative constant, or a symbol such as `N`.
class Dim {
public:
  Dim() = default;
  static Dim constant(int64_t value) { return Dim(value, {}); }
  static Dim symbol(std::string name) { return Dim(-1, std::move(name)); }

  bool is_constant() const { return symbol_.empty(); }
  bool is_symbol() const { return !symbol_.empty(); }
  int64_t value() const { return value_; }           // constants only
  const std::string& name() const { return symbol_; } // symbols only
  std::string str() const;

  friend bool operator==(const Dim&, const Dim&) = default;

private:
  Dim(int64_t value, std::string symbol) : value_(value), symbol_(std::move(symbol)) {}
  int64_t value_ = 0;
  std::string symbol_;
};

using Shape = std::vector<Dim>;
std::string shape_str(const Shape& shape); // "[N, 8192]"
bool shape_is_constant(const Shape& shape);
// Product of constant dims; nullopt if symbolic or the product overflows int64.
// A zero dim does not hide an overflow of the other dims' product.
std::optional<int64_t> shape_numel(const Shape& shape);
// No tensor may hold more elements than this, so byte counts and 64-bit
// indexing never overflow.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 48;

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  size_t rank() const { return shape.size(); }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// Attribute values of a node: ints, floats, bools, strings, int tuples, or none.
struct NoneAttr {
  friend bool operator==(const NoneAttr&, const NoneAttr&) = default;
};
using AttrValue = std::variant<NoneAttr, int64_t, double, bool, std::string, std::vector<int64_t>>;
// Sorted by name so printing and fingerprints are deterministic.
using Attrs = std::map<std::string, AttrValue>;

std::string attr_str(const AttrValue& value); // round-trippable text
// Shortest text that parses back to exactly `value` (always has '.', 'e', "inf" or "nan").
std::string format_double(double value);

using ValueId = uint32_t;
using NodeId = uint32_t;
inline constexpr uint32_t kNoId = std::numeric_limits<uint32_t>::max();

enum class ValueKind { Input, Param, State, Result };
const char* value_kind_name(ValueKind kind);

struct Value {
  ValueId id = kNoId;
  ValueKind kind = ValueKind::Result;
  std::string name; // declared name for inputs/params/state; the last source name bound for results
  TensorType type;
  NodeId producer = kNoId; // for results
  SourceLoc loc;
};

struct Node {
  NodeId id = kNoId;
  std::string op; // registry name, e.g. "linear"
  // One slot per tensor parameter of the op, in the op's parameter order;
  // kNoId for an absent optional tensor.
  std::vector<ValueId> operands;
  Attrs attrs; // every non-tensor parameter, defaults filled in
  ValueId result = kNoId;
  SourceLoc loc;
};

struct FusionOutput {
  std::string name;
  ValueId value = kNoId;
  SourceLoc loc;
};

enum class Precision { Strict, TF32 };
const char* precision_name(Precision precision);

// How strict precision's GEMMs multiply on tensor cores: 3xTF32 (the
// default), or FP16x3 where the target has it (Target::fp16x3_products;
// docs/kernels-gemm.md "FP16x3").
enum class StrictProduct { ThreeTF32, FP16x3 };
const char* strict_product_name(StrictProduct product); // "3xtf32", "fp16x3"
std::optional<StrictProduct> parse_strict_product(const std::string& name);

struct Fusion {
  std::string name;
  SourceLoc loc;
  Precision precision = Precision::Strict;
  std::vector<Value> values;       // indexed by ValueId
  std::vector<Node> nodes;         // indexed by NodeId, topological order
  std::vector<ValueId> arguments;  // inputs, params and state in declaration order
  std::vector<FusionOutput> outputs;
  // Symbols fixed to a constant by the spec itself (e.g. `K` of x:[N,K] meeting
  // w:[64,8192] in linear), with where that happened.
  std::map<std::string, std::pair<int64_t, SourceLoc>> fixed_dims;

  const Value& value(ValueId id) const { return values.at(id); }
  Value& value(ValueId id) { return values.at(id); }
  const Node& node(NodeId id) const { return nodes.at(id); }
  // The symbols used by argument shapes, sorted.
  std::vector<std::string> symbols() const;
  // Finds an argument (input/param/state) by name.
  const Value* find_argument(const std::string& name) const;
};

struct Module {
  std::vector<Fusion> fusions;
  const Fusion* find(const std::string& name) const;
};

// Adds a value/node to a fusion and returns its id (helpers for builders).
ValueId add_value(Fusion& fusion, Value value);
NodeId add_node(Fusion& fusion, Node node);

} // namespace fusegen
