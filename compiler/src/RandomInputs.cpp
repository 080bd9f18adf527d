#include "fusegen/RandomInputs.h"

#include "fusegen/OpRegistry.h"

#include <cmath>
#include <numbers>

namespace fusegen {
namespace {

// splitmix64: small, fast, and good enough for test data.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), rounded to a float32 value so f32 devices see the
  // same numbers as the float64 reference.
  double uniform() { return static_cast<double>(static_cast<float>((next() >> 40) * 0x1.0p-24)); }
  double normal() {
    double u1 = ((next() >> 11) + 1) * 0x1.0p-53, u2 = (next() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

private:
  uint64_t state_;
};

uint64_t hash_name(const std::string& name) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : name)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

enum class Rule { Uniform01, Normal, FanIn, Ones, Zeros };

struct Usage {
  const Node* node = nullptr;
  const OpDef* op = nullptr;
  const ParamSpec* param = nullptr;
};

// The first node that uses `argument`, and in which parameter slot.
Usage first_use(const Fusion& fusion, ValueId argument) {
  for (const Node& node : fusion.nodes) {
    const OpDef* op = OpRegistry::builtin().find(node.op);
    size_t slot = 0;
    for (const ParamSpec& param : op->params) {
      if (!OpDef::is_tensor_kind(param.kind))
        continue;
      if (node.operands[slot++] == argument)
        return {&node, op, &param};
    }
  }
  return {};
}

int64_t fan_in_of(const Shape& weight_shape) {
  int64_t fan_in = 1;
  for (size_t i = 1; i < weight_shape.size(); ++i)
    fan_in *= weight_shape[i].value();
  return fan_in;
}

Rule rule_for(const Fusion& fusion, ValueId argument, int64_t& fan_in) {
  const Value& value = fusion.value(argument);
  if (value.kind == ValueKind::Input)
    return Rule::Uniform01;
  Usage use = first_use(fusion, argument);
  if (!use.param)
    return Rule::Normal;
  switch (use.param->init) {
  case ParamInit::Normal: return Rule::Normal;
  case ParamInit::Ones: return Rule::Ones;
  case ParamInit::Zeros: return Rule::Zeros;
  case ParamInit::KaimingUniform: fan_in = fan_in_of(value.type.shape); return Rule::FanIn;
  case ParamInit::BiasUniform: {
    int slot = use.op->tensor_slot("weight");
    ValueId weight = slot >= 0 ? use.node->operands[static_cast<size_t>(slot)] : kNoId;
    if (weight == kNoId)
      return Rule::Normal;
    fan_in = fan_in_of(fusion.value(weight).type.shape);
    return Rule::FanIn;
  }
  }
  return Rule::Normal;
}

} // namespace

const char* init_rule_name(const Fusion& fusion, ValueId argument) {
  int64_t fan_in = 0;
  switch (rule_for(fusion, argument, fan_in)) {
  case Rule::Uniform01: return "uniform [0, 1)";
  case Rule::Normal: return "standard normal";
  case Rule::FanIn: return "uniform +-1/sqrt(fan_in)";
  case Rule::Ones: return "ones";
  case Rule::Zeros: return "zeros";
  }
  return "?";
}

std::map<std::string, HostTensor> make_random_arguments(const Fusion& fusion, uint64_t seed) {
  std::map<std::string, HostTensor> result;
  for (ValueId id : fusion.arguments) {
    const Value& value = fusion.value(id);
    std::vector<int64_t> shape;
    for (const Dim& d : value.type.shape)
      shape.push_back(d.value());
    HostTensor tensor(shape);
    Rng rng(seed * 0x9e3779b97f4a7c15ull ^ hash_name(value.name));
    int64_t fan_in = 1;
    Rule rule = rule_for(fusion, id, fan_in);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    for (double& x : tensor.data) {
      switch (rule) {
      case Rule::Uniform01: x = rng.uniform(); break;
      case Rule::Normal: x = static_cast<float>(rng.normal()); break;
      case Rule::FanIn: x = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound); break;
      case Rule::Ones: x = 1.0; break;
      case Rule::Zeros: x = 0.0; break;
      }
    }
    result[value.name] = std::move(tensor);
  }
  return result;
}

} // namespace fusegen
