// Elementwise kernels (templates/elementwise.cu): every element of the
// domain decodes its coordinates, loads its operands with broadcasting,
// evaluates the kernel's pointwise chain and stores each output.
#include "codegen/BatchNormStats.h"
#include "codegen/Emitters.h"
#include "codegen/HookBody.h"
#include "codegen/KernelParts.h"
#include "codegen/PointwiseEmitter.h"
#include "codegen/VectorLanes.h"
#include "fusegen/OpRegistry.h"
#include "plan/PlanQueries.h"

namespace fusegen::codegen {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 65536; // grid-stride beyond this

// The domain: the shape of the kernel's first computed value; every other
// value of an elementwise kernel has the same shape.
Shape domain_of(const EmitContext& ctx) {
  return ctx.fusion().value(ctx.fusion().node(ctx.step().nodes().front()).result).type.shape;
}

// The per-lane terms of a split batch_norm over [N, C] that this kernel
// applies, for `lanes` consecutive elements (1, or 4 in the vector body), or
// none. Its channel is the last coordinate, so four consecutive elements
// take four consecutive channels: their finalized statistics (mean and 1/std
// interleaved) as two float4 and each affine param as one, instead of
// sixteen scalar loads (bench/NOTES.md v19). Without finalized statistics
// (few rows: the planner left out the finalize kernel) each channel's
// partials are merged here in row-tile order, and the elements of row 0
// update the running stats. Empty terms are loaded by the PointwiseEmitter.
Result<std::vector<PointwiseEmitter::NormTerms>> split_batch_norm_terms(const EmitContext& ctx, const Shape& domain,
                                                                        int lanes, Body& body) {
  NodeId id = ctx.step().stats_in;
  if (id == kNoId || domain.size() != 2)
    return std::vector<PointwiseEmitter::NormTerms>{};
  const Node& node = ctx.fusion().node(id);
  if (!plan::is_column_norm(node) || ctx.fusion().value(node.operands[0]).type.rank() != 2)
    return std::vector<PointwiseEmitter::NormTerms>{};
  const std::vector<std::string> coords = coord_names(2);
  const std::string& channel = coords[1];
  auto float4_at = [&](const std::string& name, const std::string& address) {
    body.declare(name, "const float4 " + name + " = *reinterpret_cast<const float4*>(" + address + ");");
  };
  const std::string n = std::to_string(id);
  std::vector<PointwiseEmitter::NormTerms> terms(static_cast<size_t>(lanes));
  if (const BufferId stats = ctx.stats_buffer(id, true); stats != kNoId) {
    if (lanes == 1)
      return terms; // loaded where used
    float4_at("stats" + n + "a", ctx.buffer(stats) + " + 2 * " + channel);
    float4_at("stats" + n + "b", ctx.buffer(stats) + " + 2 * " + channel + " + 4");
    for (int lane = 0; lane < 4; ++lane) {
      std::string pair = "stats" + n + (lane < 2 ? "a." : "b.");
      terms[lane].mean = pair + kLaneNames[(lane % 2) * 2];
      terms[lane].rstd = pair + kLaneNames[(lane % 2) * 2 + 1];
    }
  } else {
    const BufferId partials_id = ctx.stats_buffer(id, false);
    const PlanBuffer& partials = ctx.plan().buffer(partials_id);
    const Shape& input = ctx.fusion().value(node.operands[0]).type.shape;
    const int64_t parts = partials.shape[0].is_constant() && !partials.ceil_div.empty()
                              ? (partials.shape[0].value() + partials.ceil_div[0] - 1) / partials.ceil_div[0]
                              : 0;
    if (parts < 1)
      return Error{"internal error: " + partials.name + " has no known row tiles to merge"};
    const double eps = std::get<double>(node.attrs.at("eps"));
    for (int lane = 0; lane < lanes; ++lane) {
      const std::string c = lanes == 1 ? channel : "(" + channel + " + " + std::to_string(lane) + ")";
      const std::string suffix = n + "_" + std::to_string(lane), total = "total" + suffix;
      std::string merged;
      for (int64_t part = 0; part < parts; ++part) {
        std::string at = "fusegen_welford_at(" + ctx.buffer(partials_id) + " + (" + std::to_string(part) + "LL * " +
                         ctx.dim(input[1]) + " + " + c + ") * 3)";
        merged = part == 0 ? at : "fusegen_welford_merge(" + merged + ", " + at + ")";
      }
      body.declare(total, "const FusegenWelford " + total + " = " + merged + ";");
      body.declare("mean" + suffix, "const float mean" + suffix + " = " + total + ".mean;");
      body.declare("rstd" + suffix, "const float rstd" + suffix + " = " + batch_norm_rstd(total, eps) + ";");
      terms[lane].mean = "mean" + suffix;
      terms[lane].rstd = "rstd" + suffix;
      Result<std::vector<std::string>> updates = running_stat_updates(ctx, node, c, "mean" + suffix, total);
      if (!updates)
        return Error{updates.error()};
      for (const std::string& line : updates.value())
        body.lines().push_back("if (" + coords[0] + " == 0) " + line);
    }
  }
  if (lanes == 4) {
    const OpDef* op = OpRegistry::builtin().find(node.op);
    for (const char* param : {"weight", "bias"}) {
      ValueId value = node.operands[static_cast<size_t>(op->tensor_slot(param))];
      if (value == kNoId)
        continue;
      std::string name = param + n;
      float4_at(name, ctx.value_buffer(value) + " + " + channel);
      for (int lane = 0; lane < 4; ++lane)
        (param[0] == 'w' ? terms[lane].weight : terms[lane].bias) = name + "." + kLaneNames[lane];
    }
  }
  return terms;
}

// Whether the kernel stores a value channels-last (PlanBuffer::channels_last):
// then `index` walks the domain in that order, so that those stores are
// contiguous, and the other loads and stores are at the element's offset.
bool walks_channels_last(const EmitContext& ctx) {
  for (const auto& stored : stored_values(ctx))
    if (ctx.plan().buffer(stored.second).channels_last)
      return true;
  return false;
}

Result<std::vector<std::string>> scalar_body(const EmitContext& ctx, const Shape& domain) {
  Body body;
  const bool channels_last = walks_channels_last(ctx);
  std::string at = "index"; // the element's offset in a contiguous tensor of the domain's shape
  if (channels_last) {
    declare_channels_last_coordinates(ctx, domain, "index", body);
    at = "at";
    body.declare(at, "const long long at = " + broadcast_offset(ctx, domain, coord_names(domain.size())) + ";");
  } else {
    declare_coordinates(ctx, domain, "index", body);
  }
  Result<std::vector<PointwiseEmitter::NormTerms>> norm = split_batch_norm_terms(ctx, domain, 1, body);
  if (!norm)
    return Error{norm.error()};
  PointwiseEmitter pointwise(ctx, body.lines(), domain, coord_names(domain.size()));
  if (!norm.value().empty())
    pointwise.bind_stats(ctx.step().stats_in, norm.value()[0]);
  bind_domain_loads(ctx, domain, at, body, pointwise);
  for (const auto& [value, buffer] : stored_values(ctx))
    body.lines().push_back(ctx.buffer(buffer) + "[" + (ctx.plan().buffer(buffer).channels_last ? "index" : at) +
                           "] = " + pointwise.value(value) + ";");
  return body.finish({"args", "index"});
}

// Four consecutive elements, along the vector dim `along`: operands that
// vary along it are read as one float4 (their dims after it are 1, as the
// domain's, so its four elements are contiguous), operands broadcast along it
// once; outputs stored as float4.
Result<std::vector<std::string>> vector_body(const EmitContext& ctx, const Shape& domain, int along) {
  Body body;
  declare_coordinates(ctx, domain, "index", body);
  std::vector<std::string> coords = coord_names(domain.size());
  Result<std::vector<PointwiseEmitter::NormTerms>> norm = split_batch_norm_terms(ctx, domain, 4, body);
  if (!norm)
    return Error{norm.error()};
  const std::vector<PointwiseEmitter::NormTerms>& norm_lanes = norm.value();
  const std::vector<VectorLeaf> leaves = declare_vector_leaves(ctx, domain, along, loaded_values(ctx), coords, body);
  std::vector<std::pair<ValueId, BufferId>> outputs = stored_values(ctx);
  for (size_t o = 0; o < outputs.size(); ++o)
    body.declare("out" + std::to_string(o), "float4 out" + std::to_string(o) + ";");
  for (int lane = 0; lane < kVectorLanes; ++lane) {
    std::vector<std::string> lines;
    PointwiseEmitter pointwise(ctx, lines, domain, lane_coordinates(coords, along, lane));
    bind_vector_leaves(leaves, lane, pointwise);
    if (!norm_lanes.empty())
      pointwise.bind_stats(ctx.step().stats_in, norm_lanes[static_cast<size_t>(lane)]);
    std::vector<std::pair<std::string, std::string>> fields;
    for (size_t o = 0; o < outputs.size(); ++o)
      fields.push_back({"out" + std::to_string(o), pointwise.value(outputs[o].first)});
    append_lane_block(body, lane, lines, fields);
  }
  for (size_t o = 0; o < outputs.size(); ++o)
    body.lines().push_back("*reinterpret_cast<float4*>(" + ctx.buffer(outputs[o].second) + " + index) = out" +
                           std::to_string(o) + ";");
  return body.finish({"args", "index"});
}

std::vector<std::string> alignment_check(const EmitContext& ctx) {
  std::string bits;
  for (BufferId id : ctx.step().reads)
    bits += (bits.empty() ? "" : " | ") + std::string("reinterpret_cast<unsigned long long>(") + ctx.buffer(id) + ")";
  for (BufferId id : ctx.step().writes)
    bits += (bits.empty() ? "" : " | ") + std::string("reinterpret_cast<unsigned long long>(") + ctx.buffer(id) + ")";
  return {"return ((" + (bits.empty() ? std::string("0ULL") : bits) + ") & 15ULL) == 0;"};
}

} // namespace

Result<KernelSource> emit_elementwise(const EmitContext& ctx) {
  Shape domain = domain_of(ctx);
  if (stored_values(ctx).empty())
    return Error{"internal error: elementwise kernel stores nothing"};
  // (A row reduction kept as partials loads element by element.)
  bool partials = false;
  for (ValueId value : loaded_values(ctx))
    partials = partials || ctx.is_partials(value);
  // A split batch_norm's per-lane terms step its channel, the last dim.
  const int along = vector_dim(domain);
  bool vectorize = !partials && !walks_channels_last(ctx) && along >= 0 &&
                   domain[static_cast<size_t>(along)].is_constant() &&
                   domain[static_cast<size_t>(along)].value() % 4 == 0 &&
                   (ctx.step().stats_in == kNoId || along + 1 == static_cast<int>(domain.size()));
  int width = vectorize ? 4 : 1;
  std::string params = "const FusegenArgs& args, long long index";
  KernelSource source;
  source.template_file = "elementwise.cu";
  source.hooks["block_size"] = constant_hook("kBlockSize", kBlock);
  source.hooks["vector_width"] = constant_hook("kVectorWidth", width);
  source.hooks["numel"] = args_function_hook("long long", "numel", ctx.product(domain, 0, domain.size()));
  source.hooks["vector_ok"] = function_hook("bool", "vector_ok", "const FusegenArgs& args",
                                            vectorize ? alignment_check(ctx)
                                                      : std::vector<std::string>{"(void)args;", "return false;"});
  Result<std::vector<std::string>> scalar = scalar_body(ctx, domain);
  if (!scalar)
    return Error{scalar.error()};
  Result<std::vector<std::string>> vector =
      vectorize ? vector_body(ctx, domain, along) : std::vector<std::string>{"(void)args;", "(void)index;"};
  if (!vector)
    return Error{vector.error()};
  source.hooks["compute"] = function_hook("void", "compute", params, scalar.value());
  source.hooks["compute4"] = function_hook("void", "compute4", params, vector.value());
  source.hooks["entry"] = entry_hook(ctx, "kBlockSize", "elementwise_main(args);");
  SizeExpr numel = ctx.size(domain, 0, domain.size());
  source.launch.grid = {grid_stride_blocks(ctx, numel, kBlock * width, kMaxBlocks), ctx.constant(1), ctx.constant(1)};
  source.launch.block = kBlock;
  return source;
}

} // namespace fusegen::codegen
