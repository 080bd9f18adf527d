// Deterministic random arguments for a specialized fusion, like the tensors a
// PyTorch user would have: inputs uniform in [0, 1) (torch.rand), weights and
// biases as torch's default module init, norm affine params ones/zeros,
// running stats zeros/ones, other params standard normal (torch.randn).
// The values depend only on (seed, argument name, shape), not on order.
#pragma once

#include "fusegen/HostTensor.h"
#include "fusegen/IR.h"

#include <cstdint>
#include <map>
#include <string>

namespace fusegen {

// `fusion` must be specialized (all dims constant).
std::map<std::string, HostTensor> make_random_arguments(const Fusion& fusion, uint64_t seed);

// The init rule chosen for an argument (for `fusegen run` to print).
const char* init_rule_name(const Fusion& fusion, ValueId argument);

} // namespace fusegen
