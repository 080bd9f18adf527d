// NumPy .npy files (format 1.0): how tensors enter and leave the CLI and the
// golden tests, readable by numpy.load and torch.from_numpy.
#pragma once

#include "fusegen/HostTensor.h"
#include "fusegen/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusegen {

enum class NpyType { F32, F64 };

// Writes little-endian '<f4' or '<f8', C order.
Status write_npy(const std::string& path, const HostTensor& tensor, NpyType type = NpyType::F64);
// Reads '<f4' / '<f8' (and '<i8'/'<i4', converted), C order only; any other
// layout or a malformed header is an error naming the file. Only regular
// files of at most `max_bytes` are read (callers that know the shape pass
// npy_max_bytes of it).
Result<HostTensor> read_npy(const std::string& path, uint64_t max_bytes = UINT64_MAX);

// The largest .npy file a tensor of `shape` can be: the largest header numpy
// writes plus 8 bytes an element (saturating).
uint64_t npy_max_bytes(const std::vector<int64_t>& shape);

} // namespace fusegen
