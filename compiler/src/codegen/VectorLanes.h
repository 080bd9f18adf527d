// Four adjacent elements of a domain at once, for the templates' 16-byte
// paths (elementwise.cu's compute4, row_reduce.cu's load4 and
// store_element4): the elements step along the domain's innermost dim that
// is not 1, so operands that vary along it are read as one float4 and the
// others once; each lane then evaluates the pointwise chain on its own.
#pragma once

#include "codegen/EmitContext.h"
#include "codegen/HookBody.h"
#include "codegen/PointwiseEmitter.h"

#include <string>
#include <vector>

namespace fusegen::codegen {

inline constexpr int kVectorLanes = 4;
inline constexpr const char* kLaneNames[kVectorLanes] = {"x", "y", "z", "w"};

// The dim that four consecutive elements step along: the innermost one not
// of extent 1 (in [1, C, N, 1] the N, whose elements are contiguous), or -1
// when every dim is 1 or there are none.
int vector_dim(const Shape& domain);

// An operand of the four elements, declared by declare_vector_leaves.
struct VectorLeaf {
  ValueId value = kNoId;
  std::string name;    // in<value>
  bool varies = false; // a float4 (one element a lane), else one float for all four
};

// Declares `values` at lane 0's coordinates `coords` (c0.. of `domain`,
// declared in `body`): in<id> as a float4 where the operand varies along
// `along` (its dims after it are 1, as the domain's, so its four elements
// are contiguous), else as a float. An operand of the domain's own shape
// reads at `flat_index` where one is given (no coordinate arithmetic).
std::vector<VectorLeaf> declare_vector_leaves(const EmitContext& ctx, const Shape& domain, int along,
                                              const std::vector<ValueId>& values,
                                              const std::vector<std::string>& coords, Body& body,
                                              const std::string& flat_index = "");

// Lane `lane`'s coordinates: `coords` with the `along` one advanced by the lane.
std::vector<std::string> lane_coordinates(const std::vector<std::string>& coords, int along, int lane);

// Binds each leaf's value for lane `lane` in `pointwise`.
void bind_vector_leaves(const std::vector<VectorLeaf>& leaves, int lane, PointwiseEmitter& pointwise);

// Appends lane `lane`'s block to `body`, in braces of its own (each lane
// declares the same temporaries): its pointwise `lines`, then each
// (float4 variable, value) of `fields` assigned to that variable's lane.
void append_lane_block(Body& body, int lane, const std::vector<std::string>& lines,
                       const std::vector<std::pair<std::string, std::string>>& fields);

} // namespace fusegen::codegen
