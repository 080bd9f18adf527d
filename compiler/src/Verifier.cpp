#include "fusegen/Verifier.h"

#include "fusegen/OpRegistry.h"

namespace fusegen {
namespace {

// Messages are built only when a check fails: the verifier runs on every
// node of every fusion, and large specs have millions of nodes.
class Verifier {
public:
  Verifier(const Fusion& fusion, Diagnostics& diags) : fusion_(fusion), diags_(diags) {}

  bool run() {
    for (size_t i = 0; i < fusion_.values.size(); ++i)
      if (fusion_.values[i].id != i)
        fail(fusion_.loc, "value " + std::to_string(i) + " has a wrong id");
    std::vector<bool> defined(fusion_.values.size(), false);
    for (ValueId id : fusion_.arguments) {
      if (id >= fusion_.values.size()) {
        fail(fusion_.loc, "argument id out of range");
        continue;
      }
      if (fusion_.value(id).kind == ValueKind::Result)
        fail(fusion_.value(id).loc, "argument '" + fusion_.value(id).name + "' is a node result");
      defined[id] = true;
    }
    for (size_t i = 0; i < fusion_.nodes.size(); ++i)
      verify_node(fusion_.nodes[i], static_cast<NodeId>(i), defined);
    for (const FusionOutput& output : fusion_.outputs)
      if (output.value >= defined.size() || !defined[output.value])
        fail(output.loc, "output '" + output.name + "' refers to an undefined value");
    if (fusion_.outputs.empty())
      fail(fusion_.loc, "fusion has no output");
    return ok_;
  }

private:
  void fail(SourceLoc loc, const std::string& message) {
    diags_.error(loc, "internal error: fusion '" + fusion_.name + "': " + message);
    ok_ = false;
  }

  void fail_node(const Node& node, NodeId id, const std::string& problem) {
    fail(node.loc, "node " + std::to_string(id) + " (" + node.op + ") " + problem);
  }

  void verify_node(const Node& node, NodeId id, std::vector<bool>& defined) {
    if (node.id != id)
      fail_node(node, id, "has a wrong id");
    const OpDef* op = OpRegistry::builtin().find(node.op);
    if (!op)
      return fail_node(node, id, "uses an unknown op");
    size_t slots = 0;
    for (const ParamSpec& p : op->params) {
      if (OpDef::is_tensor_kind(p.kind))
        ++slots;
      else if (node.attrs.count(p.name) != 1)
        return fail_node(node, id, "lacks attribute '" + p.name + "'");
    }
    if (node.operands.size() != slots)
      return fail_node(node, id, "has the wrong number of operands");
    size_t slot = 0;
    for (const ParamSpec& p : op->params) {
      if (!OpDef::is_tensor_kind(p.kind))
        continue;
      ValueId operand = node.operands[slot++];
      if (operand == kNoId) {
        if (p.kind != ParamKind::OptionalTensor)
          fail_node(node, id, "lacks operand '" + p.name + "'");
      } else if (operand >= defined.size() || !defined[operand]) {
        fail_node(node, id, "uses a value before its definition");
      }
    }
    if (node.result >= fusion_.values.size())
      return fail_node(node, id, "has no result");
    const Value& result = fusion_.value(node.result);
    if (result.kind != ValueKind::Result || result.producer != id)
      fail_node(node, id, "result does not point back at it");
    if (defined[node.result])
      fail_node(node, id, "redefines a value");
    defined[node.result] = true;
  }

  const Fusion& fusion_;
  Diagnostics& diags_;
  bool ok_ = true;
};

} // namespace

bool verify_fusion(const Fusion& fusion, Diagnostics& diags) { return Verifier(fusion, diags).run(); }

} // namespace fusegen
