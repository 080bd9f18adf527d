// Checking a call's tensors before anything is launched. The first stage
// needs no driver (names, shapes, dims, null and misaligned pointers,
// overlapping outputs); the second asks the driver where each pointer lives.
#pragma once

#include "DriverApi.h"

#include "fusegen/IR.h"
#include "fusegen/Runtime.h"
#include "fusegen/Specialize.h"

#include <span>
#include <vector>

namespace fusegen::runtime {

// Tensors must be aligned this much (kernels use 16-byte vector access).
inline constexpr uintptr_t kTensorAlignment = 16;

struct CheckedCall {
  DimBindings dims;                   // the fusion's symbols
  std::vector<CUdeviceptr> arguments; // in the fusion's argument order
  std::vector<CUdeviceptr> outputs;   // in the fusion's output order
  std::vector<int64_t> argument_bytes;
  std::vector<int64_t> output_bytes;
  std::vector<std::vector<int64_t>> output_shapes; // as given
  bool empty = false;                              // a zero-size call: nothing to launch
};

// Throws RuntimeError (ErrorKind::Argument) naming the fusion and tensor.
CheckedCall check_call(const Fusion& fusion, const std::vector<TensorArg>& arguments,
                       const std::vector<TensorOut>& outputs);

// Checks that every pointer is device (or managed) memory of device
// `ordinal` and that each tensor lies inside its allocation. Throws
// RuntimeError (ErrorKind::Argument).
void check_device_pointers(const DriverApi& api, int ordinal, const Fusion& fusion, const CheckedCall& call);
// The same for pointers and sizes in the fusion's argument and output order.
void check_device_pointers(const DriverApi& api, int ordinal, const Fusion& fusion,
                           std::span<const CUdeviceptr> arguments, std::span<const int64_t> argument_bytes,
                           std::span<const CUdeviceptr> outputs, std::span<const int64_t> output_bytes);

// Compares the given output shapes with the specialized fusion's.
void check_output_shapes(const Fusion& fusion, const CheckedCall& call,
                         const std::vector<std::vector<int64_t>>& expected);

} // namespace fusegen::runtime
