#include "plan/GemmFamily.h"

#include "plan/PlanQueries.h"

#include <algorithm>

namespace fusegen::plan {
namespace {

const Node& contraction_of(const Fusion& fusion, const KernelStep& gemm) { return fusion.node(gemm.stages.at(0).op); }

// The most rows a GEMM block holds (templates/gemm.cu: 128-row blocks take
// operands that load as 16-byte vectors, 64-row blocks any).
constexpr int64_t kBlockRowsMax = 128;

} // namespace

std::string row_reduce_atomics_note(const std::string& op) {
  return op + " over the row runs in the epilogue: per-tile partial results combined with atomics "
              "(order-independent, so deterministic)";
}

bool result_rows_are_gemm_rows(const Fusion& fusion, const Node& contraction) {
  switch (traits_of(contraction).contraction) {
  case ContractionForm::RowsTimesWeight:
    return true;
  case ContractionForm::BatchedMatmul:
    return fusion.value(contraction.operands[0]).type.rank() == 2 &&
           fusion.value(contraction.operands[1]).type.rank() == 2;
  case ContractionForm::Convolution:
  case ContractionForm::None:
    return false;
  }
  return false;
}

JoinAnswer gemm_takes_row_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use,
                               const PlanOptions& options) {
  if (!is_row_moments(norm) || gemm.kind != KernelKind::Gemm || gemm.stages.size() != 1 || gemm.stats_out != kNoId ||
      !result_rows_are_gemm_rows(fusion, contraction_of(fusion, gemm)))
    return {};
  const int64_t width = row_group_width(fusion, norm);
  if (width > 0 && options.gemm_tile_n % width != 0)
    return {false, norm.op + " not fused: a group of " + std::to_string(width) + " channels does not fit a " +
                       std::to_string(options.gemm_tile_n) + "-wide GEMM tile"};
  if (width <= 0 || !sole_use)
    return {};
  return {true, norm.op + " runs in the GEMM epilogue: a " + std::to_string(options.gemm_tile_n) +
                    "-wide tile holds whole groups of " + std::to_string(width) + " channels"};
}

bool gemm_feeds_batch_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use) {
  return is_training_batch_norm(norm) && gemm.kind == KernelKind::Gemm && gemm.stages.size() == 1 &&
         gemm.stats_out == kNoId && fusion.value(norm.operands[0]).type.rank() == 2 &&
         result_rows_are_gemm_rows(fusion, contraction_of(fusion, gemm)) && sole_use;
}

JoinAnswer gemm_takes_batch_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm,
                                 const PlanOptions& options) {
  const Shape& shape = fusion.value(norm.operands[0]).type.shape;
  if (!shape[0].is_constant() || shape[0].value() < 1)
    return {};
  const int64_t rows = shape[0].value();
  const VectorOperands vectors = vector_operands(fusion, contraction_of(fusion, gemm));
  if (rows > kBlockRowsMax || (rows > options.gemm_tile_m && !(vectors.a && vectors.b)))
    return {};
  return {true, norm.op + " runs in the GEMM epilogue: one block holds all " + std::to_string(rows) +
                    " rows of its columns and normalizes them itself; it updates running_mean and running_var"};
}

JoinAnswer gemm_takes_row_min_max(const Fusion& fusion, const KernelStep& gemm, const Node& reduce) {
  if (gemm.kind != KernelKind::Gemm || gemm.stages.size() != 2)
    return {};
  const Node& norm = fusion.node(gemm.stages[1].op);
  if (!is_row_moments(norm) || !is_min_max(reduce) || reduced_dims(fusion, reduce) != std::vector<int64_t>{1} ||
      fusion.value(reduce.operands[0]).type.rank() != 2)
    return {};
  return {true, row_reduce_atomics_note(reduce.op)};
}

JoinAnswer gemm_emits_group_statistics(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use,
                                       const PlanOptions& options) {
  if (!is_row_moments(norm) || channel_groups(norm) <= 0)
    return {};
  if (gemm.kind != KernelKind::Gemm || gemm.stages.size() != 1 || gemm.stats_out != kNoId ||
      traits_of(contraction_of(fusion, gemm)).contraction != ContractionForm::Convolution || !sole_use)
    return {};
  const Shape& shape = fusion.value(norm.operands[0]).type.shape;
  const int64_t groups = channel_groups(norm);
  const OpTraits& conv = traits_of(contraction_of(fusion, gemm));
  // Batched results only, and every GEMM row an output position: a
  // transposed convolution's phases leave rows that store nothing.
  if (conv.transposed || shape.size() != static_cast<size_t>(conv.spatial_dims) + 2 || !shape[1].is_constant() ||
      groups <= 0)
    return {};
  const int64_t per_group = shape[1].value() / groups;
  // Each norm group must lie inside one column tile and one conv group.
  const int64_t conv_groups = std::get<int64_t>(contraction_of(fusion, gemm).attrs.at("groups"));
  const int64_t per_conv_group = shape[1].value() / std::max<int64_t>(conv_groups, 1);
  if (options.gemm_tile_n % per_group != 0 || per_conv_group % per_group != 0)
    return {};
  return {true, "epilogue emits partial " + norm.op + " statistics per (sample, group) and row tile"};
}

} // namespace fusegen::plan
