// The per-call work of Function::call made cheap: what a call's tensors must
// look like is worked out once per function (CallLayout), and a call in the
// common form (every tensor named once, shapes that fit, no zero sizes, no
// overlaps) is checked without building strings, maps or shape copies
// (quick_check). Anything unusual goes to check_call (CallCheck.h), which
// words the error or handles the rare case, so messages never differ.
#pragma once

#include "DriverApi.h"

#include "fusegen/IR.h"
#include "fusegen/Runtime.h"
#include "fusegen/Specialize.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusegen::runtime {

class CallLayout {
public:
  explicit CallLayout(const Fusion& fusion);

  // The fusion's symbols, sorted (the order of DimBindings and of the
  // values quick_check returns).
  const std::vector<std::string>& symbols() const { return symbols_; }
  size_t argument_count() const { return arguments_.size(); }
  size_t output_count() const { return outputs_.size(); }

  struct Quick {
    std::vector<int64_t> dims; // per symbol
    std::vector<CUdeviceptr> arguments;
    std::vector<CUdeviceptr> outputs;
    std::vector<int64_t> argument_bytes;
    std::vector<int64_t> output_bytes;
    std::vector<size_t> argument_given; // argument i is arguments[argument_given[i]] of the call
    std::vector<size_t> output_given;   // output i is outputs[output_given[i]] of the call
  };
  // True, with `out` filled (its vectors reused), when the call is of the
  // common form and check_call would accept it with the same result; false
  // when check_call must look at it (an error, or a zero-size call).
  bool quick_check(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs, size_t output_count,
                   Quick& out) const;
  // quick_check's two halves. match_shapes: the names and shapes only (data
  // pointers are not read; out's pointers are left zero). pointers_usable:
  // the data pointers of a call that matched, in fusion order, with their
  // byte sizes: none null or misaligned, no written tensor overlapping
  // another.
  bool match_shapes(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs, size_t output_count,
                    Quick& out) const;
  bool pointers_usable(const CUdeviceptr* arguments, const int64_t* argument_bytes, const CUdeviceptr* outputs,
                       const int64_t* output_bytes) const;

  DimBindings bindings(const std::vector<int64_t>& dims) const;

private:
  struct DimRule {
    int64_t constant = 0;
    int symbol = -1;   // index into symbols_, or -1 for a constant
    bool known = true; // outputs: false when the symbol is not bound by an argument
  };
  struct Tensor {
    std::string name;
    std::vector<DimRule> dims;
    bool written = false;
  };
  std::vector<std::string> symbols_;
  std::vector<std::optional<int64_t>> fixed_; // per symbol: the value the spec fixes
  std::vector<Tensor> arguments_;
  std::vector<Tensor> outputs_;
};

} // namespace fusegen::runtime
