#include "fusegen/IRPrinter.h"

#include "fusegen/Sha256.h"

namespace fusegen {
namespace {

std::string type_str(const TensorType& type) {
  return std::string(dtype_name(type.dtype)) + shape_str(type.shape);
}

// Prints one fusion; `canonical` drops local names and locations.
class Printer {
public:
  Printer(const Fusion& fusion, bool canonical) : fusion_(fusion), canonical_(canonical) {}

  std::string print() {
    out_ += "fusion " + fusion_.name + " (precision=" + precision_name(fusion_.precision) + ") {\n";
    for (ValueId id : fusion_.arguments) {
      const Value& v = fusion_.value(id);
      out_ += "  " + std::string(value_kind_name(v.kind)) + " " + v.name + " : " + type_str(v.type) + "\n";
    }
    for (const auto& [symbol, fixed] : fusion_.fixed_dims)
      out_ += "  where " + symbol + " = " + std::to_string(fixed.first) + "\n";
    for (const Node& node : fusion_.nodes)
      print_node(node);
    for (const FusionOutput& output : fusion_.outputs)
      out_ += "  output " + output.name + " = " + ref(output.value) + "\n";
    out_ += "}\n";
    return out_;
  }

private:
  std::string ref(ValueId id) {
    if (id == kNoId)
      return "None";
    const Value& v = fusion_.value(id);
    if (v.kind != ValueKind::Result)
      return v.name;
    return "%" + std::to_string(id);
  }

  void print_node(const Node& node) {
    std::string line = "  " + ref(node.result) + " : " + type_str(fusion_.value(node.result).type) +
                       " = " + node.op + "(";
    bool first = true;
    for (ValueId id : node.operands) {
      line += (first ? "" : ", ") + ref(id);
      first = false;
    }
    for (const auto& [name, value] : node.attrs) {
      line += (first ? "" : ", ") + name + "=" + attr_str(value);
      first = false;
    }
    line += ")";
    if (!canonical_) {
      const std::string& name = fusion_.value(node.result).name;
      line += "  # ";
      if (!name.empty())
        line += name + ", ";
      line += "line " + std::to_string(node.loc.line) + ":" + std::to_string(node.loc.col);
    }
    out_ += line + "\n";
  }

  const Fusion& fusion_;
  bool canonical_;
  std::string out_;
};

} // namespace

std::string print_fusion(const Fusion& fusion) { return Printer(fusion, false).print(); }
std::string canonical_form(const Fusion& fusion) { return Printer(fusion, true).print(); }
std::string fingerprint(const Fusion& fusion) { return sha256_hex(canonical_form(fusion)); }

} // namespace fusegen
