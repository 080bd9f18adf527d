#include "plan/GemmFamily.h"

#include "plan/PlanQueries.h"

#include <algorithm>
#include <numeric>

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

bool convolution_rows_are_positions(const Fusion& fusion, const Node& contraction) {
  const OpTraits& traits = traits_of(contraction);
  return traits.contraction == ContractionForm::Convolution && !traits.transposed &&
         fusion.value(contraction.result).type.rank() == static_cast<size_t>(traits.spatial_dims) + 2;
}

bool gemm_feeds_batch_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm, bool sole_use) {
  if (!is_training_batch_norm(norm) || gemm.kind != KernelKind::Gemm || gemm.stages.size() != 1 ||
      gemm.stats_out != kNoId || !sole_use)
    return false;
  const Node& contraction = contraction_of(fusion, gemm);
  if (convolution_rows_are_positions(fusion, contraction))
    return true;
  return fusion.value(norm.operands[0]).type.rank() == 2 && result_rows_are_gemm_rows(fusion, contraction);
}

JoinAnswer gemm_takes_batch_norm(const Fusion& fusion, const KernelStep& gemm, const Node& norm,
                                 const PlanOptions& options) {
  const Shape& shape = fusion.value(norm.operands[0]).type.shape;
  // One block per column tile holds every row only where the result's rows
  // are the GEMM's (not a convolution's samples times positions).
  if (!result_rows_are_gemm_rows(fusion, contraction_of(fusion, gemm)) || !shape[0].is_constant() ||
      shape[0].value() < 1)
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
  // Batched results only, and every GEMM row an output position: a
  // transposed convolution's phases leave rows that store nothing.
  if (gemm.kind != KernelKind::Gemm || gemm.stages.size() != 1 || gemm.stats_out != kNoId || !sole_use ||
      !convolution_rows_are_positions(fusion, contraction_of(fusion, gemm)))
    return {};
  const Shape& shape = fusion.value(norm.operands[0]).type.shape;
  const int64_t groups = channel_groups(norm);
  if (!shape[1].is_constant() || groups <= 0)
    return {};
  const int64_t per_group = shape[1].value() / groups;
  // Each norm group must lie inside one column tile and one conv group.
  const int64_t conv_groups = std::get<int64_t>(contraction_of(fusion, gemm).attrs.at("groups"));
  const int64_t per_conv_group = shape[1].value() / std::max<int64_t>(conv_groups, 1);
  if (options.gemm_tile_n % per_group != 0 || per_conv_group % per_group != 0)
    return {};
  return {true, "epilogue emits partial " + norm.op + " statistics per (sample, group) and row tile"};
}

int64_t transposed_phase_taps(const Fusion& fusion, const Node& conv) {
  const OpTraits& traits = traits_of(conv);
  const Shape& w = fusion.value(conv.operands[1]).type.shape;
  const auto spatial = static_cast<size_t>(traits.spatial_dims);
  const std::vector<int64_t>& stride = std::get<std::vector<int64_t>>(conv.attrs.at("stride"));
  const std::vector<int64_t>& dilation = std::get<std::vector<int64_t>>(conv.attrs.at("dilation"));
  int64_t taps = 1;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t s = stride.size() == 1 ? stride[0] : stride[d],
                  dil = dilation.size() == 1 ? dilation[0] : dilation[d];
    const int64_t step = s / std::gcd(s, dil), kernel = w[w.size() - spatial + d].value();
    taps *= (kernel + step - 1) / step;
  }
  return taps;
}

bool conv_reads_channels_last(const Fusion& fusion, const Node& conv) {
  const OpTraits& traits = traits_of(conv);
  if (traits.contraction != ContractionForm::Convolution)
    return false;
  const Shape& x = fusion.value(conv.operands[0]).type.shape;
  const Shape& w = fusion.value(conv.operands[1]).type.shape;
  const auto spatial = static_cast<size_t>(traits.spatial_dims);
  for (size_t d = x.size() - spatial - 1; d < x.size(); ++d)
    if (!x[d].is_constant())
      return false;
  for (const Dim& d : w)
    if (!d.is_constant())
      return false;
  const int64_t groups = std::max<int64_t>(std::get<int64_t>(conv.attrs.at("groups")), 1);
  int64_t group_inputs = 0, group_outputs = 0, taps = 1;
  if (traits.transposed) { // weight [C_in, C_out / groups, k...]
    group_inputs = w[0].value() / groups;
    group_outputs = w[1].value();
    taps = transposed_phase_taps(fusion, conv);
  } else { // weight [C_out, C_in / groups, k...]
    group_inputs = w[1].value();
    group_outputs = w[0].value() / groups;
    for (size_t d = 2; d < w.size(); ++d)
      taps *= w[d].value();
  }
  // Fewer channels gain little from vectors along them (chain 85's 8 run at
  // 2x eager gathered); the narrow kernel takes up to 64 columns of depth up
  // to 128, reading A element by element.
  return group_inputs >= 16 && group_inputs % 4 == 0 && (group_outputs > 64 || group_inputs * taps > 128);
}

} // namespace fusegen::plan
