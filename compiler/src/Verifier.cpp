#include "fusegen/Verifier.h"

#include "fusegen/OpRegistry.h"

namespace fusegen {
namespace {

class Verifier {
public:
  Verifier(const Fusion& fusion, Diagnostics& diags) : fusion_(fusion), diags_(diags) {}

  bool run() {
    for (size_t i = 0; i < fusion_.values.size(); ++i)
      check(fusion_.values[i].id == i, fusion_.loc, "value " + std::to_string(i) + " has a wrong id");
    std::vector<bool> defined(fusion_.values.size(), false);
    for (ValueId id : fusion_.arguments) {
      if (!check(id < fusion_.values.size(), fusion_.loc, "argument id out of range"))
        continue;
      check(fusion_.value(id).kind != ValueKind::Result, fusion_.value(id).loc,
            "argument '" + fusion_.value(id).name + "' is a node result");
      defined[id] = true;
    }
    for (size_t i = 0; i < fusion_.nodes.size(); ++i)
      verify_node(fusion_.nodes[i], static_cast<NodeId>(i), defined);
    for (const FusionOutput& output : fusion_.outputs)
      check(output.value < defined.size() && defined[output.value], output.loc,
            "output '" + output.name + "' refers to an undefined value");
    check(!fusion_.outputs.empty(), fusion_.loc, "fusion has no output");
    return ok_;
  }

private:
  bool check(bool condition, SourceLoc loc, const std::string& message) {
    if (!condition) {
      diags_.error(loc, "internal error: fusion '" + fusion_.name + "': " + message);
      ok_ = false;
    }
    return condition;
  }

  void verify_node(const Node& node, NodeId id, std::vector<bool>& defined) {
    const std::string where = "node " + std::to_string(id) + " (" + node.op + ")";
    check(node.id == id, node.loc, where + " has a wrong id");
    const OpDef* op = OpRegistry::builtin().find(node.op);
    if (!check(op != nullptr, node.loc, where + " uses an unknown op"))
      return;
    size_t slots = 0;
    for (const ParamSpec& p : op->params) {
      if (OpDef::is_tensor_kind(p.kind)) {
        ++slots;
      } else if (!check(node.attrs.count(p.name) == 1, node.loc, where + " lacks attribute '" + p.name + "'")) {
        return;
      }
    }
    if (!check(node.operands.size() == slots, node.loc, where + " has the wrong number of operands"))
      return;
    size_t slot = 0;
    for (const ParamSpec& p : op->params) {
      if (!OpDef::is_tensor_kind(p.kind))
        continue;
      ValueId operand = node.operands[slot++];
      if (operand == kNoId) {
        check(p.kind == ParamKind::OptionalTensor, node.loc, where + " lacks operand '" + p.name + "'");
        continue;
      }
      check(operand < defined.size() && defined[operand], node.loc,
            where + " uses a value before its definition");
    }
    if (!check(node.result < fusion_.values.size(), node.loc, where + " has no result"))
      return;
    const Value& result = fusion_.value(node.result);
    check(result.kind == ValueKind::Result && result.producer == id, node.loc,
          where + " result does not point back at it");
    check(!defined[node.result], node.loc, where + " redefines a value");
    defined[node.result] = true;
  }

  const Fusion& fusion_;
  Diagnostics& diags_;
  bool ok_ = true;
};

} // namespace

bool verify_fusion(const Fusion& fusion, Diagnostics& diags) { return Verifier(fusion, diags).run(); }

} // namespace fusegen
