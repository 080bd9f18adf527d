#include "CallCheck.h"

#include "fusegen/HostTensor.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <set>

namespace fusegen::runtime {
namespace {

[[noreturn]] void fail(const Fusion& fusion, const std::string& message) {
  throw RuntimeError(ErrorKind::Argument, "fusion '" + fusion.name + "': " + message);
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Bytes of a float32 tensor; fails on overflow.
int64_t tensor_bytes(const Fusion& fusion, const std::string& name, const std::vector<int64_t>& shape) {
  int64_t bytes = 4;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes))
      fail(fusion, "tensor '" + name + "' has shape " + shape_str(shape) + ", which is negative or too large");
  return bytes;
}

CUdeviceptr checked_pointer(const Fusion& fusion, const std::string& name, const void* data, int64_t bytes) {
  auto address = reinterpret_cast<uintptr_t>(data);
  if (bytes > 0 && address == 0)
    fail(fusion, "tensor '" + name + "' is a null pointer");
  if (address % kTensorAlignment != 0)
    fail(fusion,
         "tensor '" + name + "' at " + hex(address) + " is not " + std::to_string(kTensorAlignment) + "-byte aligned");
  return static_cast<CUdeviceptr>(address);
}

// The expected shape of an output from its declared shape and the dims;
// empty if a dim is not known before specialization.
std::vector<int64_t> expected_shape(const Shape& declared, const DimBindings& dims, bool& known) {
  std::vector<int64_t> shape;
  known = true;
  for (const Dim& d : declared) {
    if (d.is_constant()) {
      shape.push_back(d.value());
    } else if (auto it = dims.find(d.name()); it != dims.end()) {
      shape.push_back(it->second);
    } else {
      known = false;
      return {};
    }
  }
  return shape;
}

struct Range {
  std::string what;
  uint64_t begin = 0, end = 0;
  bool written = false;
};

void check_overlaps(const Fusion& fusion, const std::vector<Range>& ranges) {
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      const Range& a = ranges[i];
      const Range& b = ranges[j];
      if ((a.written || b.written) && a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end)
        fail(fusion, (a.written ? a.what : b.what) + " overlaps " + (a.written ? b.what : a.what) +
                         " in memory (written tensors must not alias other tensors)");
    }
}

} // namespace

CheckedCall check_call(const Fusion& fusion, const std::vector<TensorArg>& arguments,
                       const std::vector<TensorOut>& outputs) {
  CheckedCall call;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, const TensorArg*> by_name;
  std::set<std::string> output_names;
  for (const FusionOutput& output : fusion.outputs)
    output_names.insert(output.name);
  for (const TensorArg& arg : arguments) {
    if (!by_name.emplace(arg.name, &arg).second)
      fail(fusion, "tensor '" + arg.name + "' is given twice");
    if (!fusion.find_argument(arg.name) && output_names.count(arg.name))
      fail(fusion, "'" + arg.name + "' is an output; pass it among the outputs");
    shapes[arg.name] = arg.shape;
  }
  Result<DimBindings> dims = bind_dims(fusion, shapes);
  if (!dims)
    fail(fusion, dims.error());
  call.dims = std::move(dims.value());

  std::vector<Range> ranges;
  for (ValueId id : fusion.arguments) {
    const Value& value = fusion.value(id);
    const TensorArg& arg = *by_name.at(value.name);
    int64_t bytes = tensor_bytes(fusion, arg.name, arg.shape);
    call.arguments.push_back(checked_pointer(fusion, arg.name, arg.data, bytes));
    call.argument_bytes.push_back(bytes);
    ranges.push_back({std::string(value_kind_name(value.kind)) + " '" + arg.name + "'", call.arguments.back(),
                      call.arguments.back() + static_cast<uint64_t>(bytes), value.kind == ValueKind::State});
  }

  std::map<std::string, const TensorOut*> outs;
  for (const TensorOut& out : outputs) {
    if (!output_names.count(out.name))
      fail(fusion, fusion.find_argument(out.name) ? "'" + out.name + "' is an argument, not an output"
                                                  : "unknown output '" + out.name + "'");
    if (!outs.emplace(out.name, &out).second)
      fail(fusion, "output '" + out.name + "' is given twice");
  }
  for (const FusionOutput& output : fusion.outputs) {
    auto it = outs.find(output.name);
    if (it == outs.end())
      fail(fusion,
           "missing output '" + output.name + "' (f32" + shape_str(fusion.value(output.value).type.shape) + ")");
    const TensorOut& out = *it->second;
    bool known = false;
    std::vector<int64_t> expected = expected_shape(fusion.value(output.value).type.shape, call.dims, known);
    if (known && out.shape != expected)
      fail(fusion,
           "output '" + out.name + "' has shape " + shape_str(out.shape) + " but must be " + shape_str(expected));
    int64_t bytes = tensor_bytes(fusion, out.name, out.shape);
    call.outputs.push_back(checked_pointer(fusion, out.name, out.data, bytes));
    call.output_bytes.push_back(bytes);
    call.output_shapes.push_back(out.shape);
    ranges.push_back(
        {"output '" + out.name + "'", call.outputs.back(), call.outputs.back() + static_cast<uint64_t>(bytes), true});
  }
  check_overlaps(fusion, ranges);

  // A zero-size call does nothing, which is only right if it writes nothing.
  bool any_empty = false, writes_something = false;
  for (size_t i = 0; i < call.arguments.size(); ++i) {
    any_empty = any_empty || call.argument_bytes[i] == 0;
    writes_something =
        writes_something || (fusion.value(fusion.arguments[i]).kind == ValueKind::State && call.argument_bytes[i] > 0);
  }
  for (int64_t bytes : call.output_bytes) {
    any_empty = any_empty || bytes == 0;
    writes_something = writes_something || bytes > 0;
  }
  if (any_empty) {
    if (writes_something)
      fail(fusion, "a tensor has zero elements but an output or state tensor does not; such calls are not supported");
    call.empty = true;
  }
  return call;
}

void check_device_pointers(const DriverApi& api, int ordinal, const Fusion& fusion, const CheckedCall& call) {
  check_device_pointers(api, ordinal, fusion, call.arguments, call.argument_bytes, call.outputs, call.output_bytes);
}

void check_device_pointers(const DriverApi& api, int ordinal, const Fusion& fusion,
                           std::span<const CUdeviceptr> arguments, std::span<const int64_t> argument_bytes,
                           std::span<const CUdeviceptr> outputs, std::span<const int64_t> output_bytes) {
  auto check = [&](const std::string& name, CUdeviceptr address, int64_t bytes) {
    if (bytes == 0)
      return;
    // 8 bytes per attribute, read back at its own width: the driver writes
    // enums, booleans and ints of different sizes.
    uint64_t values[5] = {};
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void* data[] = {&values[0], &values[1], &values[2], &values[3], &values[4]};
    CUresult result = api.cuPointerGetAttributes(5, attributes, data, address);
    if (result != CUDA_SUCCESS)
      fail(fusion, "tensor '" + name + "' at " + hex(address) + ": " + api.describe(result, "cuPointerGetAttributes"));
    uint32_t memory_type = 0, managed = 0;
    int32_t device = 0;
    std::memcpy(&memory_type, &values[0], sizeof memory_type);
    std::memcpy(&managed, &values[1], sizeof managed);
    std::memcpy(&device, &values[2], sizeof device);
    const uint64_t start = values[3], size = values[4];
    if (memory_type == 0)
      fail(fusion, "tensor '" + name + "' at " + hex(address) + " is not CUDA memory");
    if (!managed && memory_type != CU_MEMORYTYPE_DEVICE)
      fail(fusion, "tensor '" + name + "' at " + hex(address) + " is host memory, not device memory");
    if (!managed && device != ordinal)
      fail(fusion, "tensor '" + name + "' at " + hex(address) + " is on device " + std::to_string(device) +
                       ", but this runtime runs on device " + std::to_string(ordinal));
    if (size > 0 && (address < start || address - start + static_cast<uint64_t>(bytes) > size))
      fail(fusion, "tensor '" + name + "' (" + std::to_string(bytes) + " bytes at " + hex(address) +
                       ") extends past the end of its allocation (" + std::to_string(size) + " bytes at " + hex(start) +
                       ")");
  };
  for (size_t i = 0; i < arguments.size(); ++i)
    check(fusion.value(fusion.arguments[i]).name, arguments[i], argument_bytes[i]);
  for (size_t i = 0; i < outputs.size(); ++i)
    check(fusion.outputs[i].name, outputs[i], output_bytes[i]);
}

void check_output_shapes(const Fusion& fusion, const CheckedCall& call,
                         const std::vector<std::vector<int64_t>>& expected) {
  for (size_t i = 0; i < fusion.outputs.size() && i < expected.size(); ++i)
    if (call.output_shapes[i] != expected[i])
      fail(fusion, "output '" + fusion.outputs[i].name + "' has shape " + shape_str(call.output_shapes[i]) +
                       " but must be " + shape_str(expected[i]));
}

} // namespace fusegen::runtime
