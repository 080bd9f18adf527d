#include "CallLayout.h"

#include "CallCheck.h"

#include <algorithm>

namespace fusegen::runtime {
namespace {

// The index of the layout tensor called `name`: `guess` first (callers
// usually pass tensors in signature order), then a search; -1 if none.
template <class Tensors> int find_tensor(const Tensors& tensors, std::string_view name, size_t guess) {
  if (guess < tensors.size() && tensors[guess].name == name)
    return static_cast<int>(guess);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name)
      return static_cast<int>(i);
  return -1;
}

// 4 * the product of `shape`; false when a dim is not positive or the
// product overflows (check_call words those, and handles zero sizes).
bool positive_bytes(const int64_t* shape, size_t rank, int64_t& bytes) {
  bytes = 4;
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] <= 0 || __builtin_mul_overflow(bytes, shape[i], &bytes))
      return false;
  return true;
}

bool pointer_ok(CUdeviceptr address) { return address != 0 && address % kTensorAlignment == 0; }

} // namespace

CallLayout::CallLayout(const Fusion& fusion) : symbols_(fusion.symbols()) {
  for (const std::string& symbol : symbols_) {
    auto it = fusion.fixed_dims.find(symbol);
    fixed_.push_back(it == fusion.fixed_dims.end() ? std::nullopt : std::optional<int64_t>(it->second.first));
  }
  auto rules = [&](const Shape& shape) {
    std::vector<DimRule> out;
    for (const Dim& d : shape) {
      DimRule rule;
      if (d.is_constant()) {
        rule.constant = d.value();
      } else {
        auto it = std::lower_bound(symbols_.begin(), symbols_.end(), d.name());
        if (it != symbols_.end() && *it == d.name())
          rule.symbol = static_cast<int>(it - symbols_.begin());
        else
          rule.known = false;
      }
      out.push_back(rule);
    }
    return out;
  };
  for (ValueId id : fusion.arguments) {
    const Value& value = fusion.value(id);
    arguments_.push_back({value.name, rules(value.type.shape), value.kind == ValueKind::State});
  }
  for (const FusionOutput& output : fusion.outputs)
    outputs_.push_back({output.name, rules(fusion.value(output.value).type.shape), true});
}

bool CallLayout::quick_check(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs,
                             size_t output_count, Quick& out) const {
  if (!match_shapes(arguments, argument_count, outputs, output_count, out))
    return false;
  for (size_t i = 0; i < out.arguments.size(); ++i)
    out.arguments[i] = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(arguments[out.argument_given[i]].data));
  for (size_t i = 0; i < out.outputs.size(); ++i)
    out.outputs[i] = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(outputs[out.output_given[i]].data));
  return pointers_usable(out.arguments.data(), out.argument_bytes.data(), out.outputs.data(), out.output_bytes.data());
}

bool CallLayout::match_shapes(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs,
                              size_t output_count, Quick& out) const {
  const size_t n_args = arguments_.size(), n_outs = outputs_.size();
  if (argument_count != n_args || output_count != n_outs || n_args + n_outs > 64)
    return false;
  out.dims.assign(symbols_.size(), -1);
  out.arguments.assign(n_args, 0);
  out.argument_bytes.assign(n_args, 0);
  out.outputs.assign(n_outs, 0);
  out.output_bytes.assign(n_outs, 0);
  out.argument_given.assign(n_args, 0);
  out.output_given.assign(n_outs, 0);

  // Every argument named once (with the counts equal: exactly the fusion's).
  uint64_t seen = 0;
  for (size_t j = 0; j < argument_count; ++j) {
    const TensorRef& given = arguments[j];
    int i = find_tensor(arguments_, given.name, j);
    if (i < 0 || (seen >> i & 1))
      return false;
    seen |= uint64_t{1} << i;
    const Tensor& layout = arguments_[static_cast<size_t>(i)];
    if (given.rank != layout.dims.size() || (given.rank > 0 && !given.shape))
      return false;
    for (size_t d = 0; d < given.rank; ++d) {
      const DimRule& rule = layout.dims[d];
      const int64_t extent = given.shape[d];
      if (rule.symbol < 0) {
        if (extent != rule.constant)
          return false;
        continue;
      }
      int64_t& bound = out.dims[static_cast<size_t>(rule.symbol)];
      if (bound >= 0 && bound != extent)
        return false;
      const std::optional<int64_t>& fixed = fixed_[static_cast<size_t>(rule.symbol)];
      if (fixed && *fixed != extent)
        return false;
      bound = extent;
    }
    int64_t bytes = 0;
    if (!positive_bytes(given.shape, given.rank, bytes))
      return false;
    out.argument_bytes[static_cast<size_t>(i)] = bytes;
    out.argument_given[static_cast<size_t>(i)] = j;
  }

  seen = 0;
  for (size_t j = 0; j < output_count; ++j) {
    const TensorRef& given = outputs[j];
    int i = find_tensor(outputs_, given.name, j);
    if (i < 0 || (seen >> i & 1))
      return false;
    seen |= uint64_t{1} << i;
    const Tensor& layout = outputs_[static_cast<size_t>(i)];
    if (given.rank > 0 && !given.shape)
      return false;
    // Compared only when every dim is known now, as check_call does; the
    // rest is compared with the specialized fusion's shapes after loading.
    bool known = std::all_of(layout.dims.begin(), layout.dims.end(), [](const DimRule& r) { return r.known; });
    if (known) {
      if (given.rank != layout.dims.size())
        return false;
      for (size_t d = 0; d < given.rank; ++d) {
        const DimRule& rule = layout.dims[d];
        if (given.shape[d] != (rule.symbol < 0 ? rule.constant : out.dims[static_cast<size_t>(rule.symbol)]))
          return false;
      }
    }
    int64_t bytes = 0;
    if (!positive_bytes(given.shape, given.rank, bytes))
      return false;
    out.output_bytes[static_cast<size_t>(i)] = bytes;
    out.output_given[static_cast<size_t>(i)] = j;
  }
  return true;
}

bool CallLayout::pointers_usable(const CUdeviceptr* arguments, const int64_t* argument_bytes,
                                 const CUdeviceptr* outputs, const int64_t* output_bytes) const {
  const size_t n_args = arguments_.size(), n_outs = outputs_.size();
  for (size_t i = 0; i < n_args; ++i)
    if (!pointer_ok(arguments[i]))
      return false;
  for (size_t i = 0; i < n_outs; ++i)
    if (!pointer_ok(outputs[i]))
      return false;

  // No written tensor may overlap another.
  auto overlaps = [](CUdeviceptr a, int64_t a_bytes, CUdeviceptr b, int64_t b_bytes) {
    return a < b + static_cast<uint64_t>(b_bytes) && b < a + static_cast<uint64_t>(a_bytes);
  };
  for (size_t i = 0; i < n_args; ++i) {
    for (size_t k = i + 1; k < n_args; ++k)
      if ((arguments_[i].written || arguments_[k].written) &&
          overlaps(arguments[i], argument_bytes[i], arguments[k], argument_bytes[k]))
        return false;
    for (size_t k = 0; k < n_outs; ++k)
      if (overlaps(arguments[i], argument_bytes[i], outputs[k], output_bytes[k]))
        return false;
  }
  for (size_t i = 0; i < n_outs; ++i)
    for (size_t k = i + 1; k < n_outs; ++k)
      if (overlaps(outputs[i], output_bytes[i], outputs[k], output_bytes[k]))
        return false;
  return true;
}

DimBindings CallLayout::bindings(const std::vector<int64_t>& dims) const {
  DimBindings out;
  for (size_t i = 0; i < symbols_.size() && i < dims.size(); ++i)
    out.emplace_hint(out.end(), symbols_[i], dims[i]);
  return out;
}

} // namespace fusegen::runtime
