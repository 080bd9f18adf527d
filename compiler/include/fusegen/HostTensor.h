// A dense, contiguous, row-major tensor of doubles on the host: the value type
// of the reference interpreter and of tensor files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fusegen {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  HostTensor() = default;
  explicit HostTensor(std::vector<int64_t> shape_, double fill = 0.0);

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  size_t rank() const { return shape.size(); }
  int64_t dim(int64_t i) const { return shape.at(static_cast<size_t>(i < 0 ? i + static_cast<int64_t>(shape.size()) : i)); }
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
};

// Number of elements of a shape (no overflow checking; shapes are validated before).
int64_t numel_of(const std::vector<int64_t>& shape);
std::string shape_str(const std::vector<int64_t>& shape);

} // namespace fusegen
