#include "fusegen/HostTensor.h"

namespace fusegen {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

HostTensor::HostTensor(std::vector<int64_t> shape_, double fill)
    : shape(std::move(shape_)), data(static_cast<size_t>(numel_of(shape)), fill) {}

std::vector<int64_t> HostTensor::strides() const {
  std::vector<int64_t> result(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    result[i - 1] = result[i] * shape[i];
  return result;
}

} // namespace fusegen
