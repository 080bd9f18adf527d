#include "plan/GroupKernels.h"

#include "plan/GemmFamily.h"
#include "plan/PlanQueries.h"

#include <algorithm>
#include <cassert>
#include <unordered_set>

namespace fusegen::plan {
namespace {

constexpr int kInline = -2;   // constants: inlined as literals wherever used
constexpr int kArgument = -1; // fusion arguments: always in memory

class Grouper {
public:
  Grouper(const Fusion& fusion, const PlanOptions& options)
      : fusion_(fusion), options_(options), users_(value_users(fusion)),
        producer_(fusion.values.size(), kArgument) {}

  std::vector<KernelStep> run() {
    for (const Node& node : fusion_.nodes) {
      if (is_constant(node))
        producer_[node.result] = kInline;
      else if (is_pointwise(node))
        place_pointwise(node);
      else
        place_anchor(node);
    }
    finalize_unmerged_applies();
    merge_small_batch_norm_finalizes();
    finalize_in_convolutions();
    partial_row_reductions();
    for (size_t i = 0; i < kernels_.size(); ++i)
      kernels_[i].step.name = fusion_.name + "_k" + std::to_string(i);
    std::vector<KernelStep> steps;
    for (Open& open : kernels_)
      steps.push_back(std::move(open.step));
    return steps;
  }

private:
  // A kernel being built: `tail` is the value its epilogue can extend (kNoId
  // once closed); `live` every value of its current stage that the epilogue
  // still holds (the stage's anchor result and pointwise results).
  struct Open {
    KernelStep step;
    ValueId tail = kNoId;
    std::unordered_set<ValueId> live; // a set: a stage may hold 100,000 values (issue 23)

    void set_tail(ValueId value, bool new_stage) {
      if (new_stage || value == kNoId)
        live.clear();
      tail = value;
      if (value != kNoId)
        live.insert(value);
    }
    bool holds(ValueId value) const { return live.count(value) != 0; }
  };

  int kernel_count() const { return static_cast<int>(kernels_.size()); }

  int add_kernel(KernelKind kind, const Node* anchor) {
    Open open;
    open.step.kind = kind;
    if (anchor) {
      open.step.stages.push_back({anchor->id, {}});
      open.set_tail(anchor->result, true);
      producer_[anchor->result] = kernel_count();
    }
    kernels_.push_back(std::move(open));
    return kernel_count() - 1;
  }

  void note(int kernel, std::string text) { kernels_[static_cast<size_t>(kernel)].step.notes.push_back(std::move(text)); }

  // The kernel whose open tail is `value`, or -1.
  int kernel_with_tail(ValueId value) const {
    int k = value == kNoId ? kArgument : producer_[value];
    if (k < 0 || kernels_[static_cast<size_t>(k)].tail != value)
      return -1;
    return k;
  }

  // The kernel whose current stage still holds `value`, or -1.
  int kernel_holding(ValueId value) const {
    int k = value == kNoId ? kArgument : producer_[value];
    if (k < 0 || !kernels_[static_cast<size_t>(k)].holds(value))
      return -1;
    return k;
  }

  bool used_only_by(ValueId value, NodeId node) const {
    return users_[value].size() == 1 && users_[value][0] == node && !is_output(fusion_, value);
  }

  // ---- pointwise ----

  // Joins the epilogue of the kernel whose tail it extends when its result
  // keeps that kernel's domain and every other operand is already in memory.
  void place_pointwise(const Node& node) {
    int target = -1;
    for (ValueId operand : node.operands) {
      int k = kernel_holding(operand);
      if (k > target)
        target = k;
    }
    if (target >= 0 && can_extend(target, node)) {
      Open& open = kernels_[static_cast<size_t>(target)];
      open.step.stages.back().pointwise.push_back(node.id);
      open.set_tail(node.result, false);
      producer_[node.result] = target;
      return;
    }
    int k = add_kernel(KernelKind::Elementwise, nullptr);
    kernels_[static_cast<size_t>(k)].step.stages.push_back({kNoId, {node.id}});
    kernels_[static_cast<size_t>(k)].set_tail(node.result, true);
    producer_[node.result] = k;
    if (target >= 0)
      note(k, "starts a new kernel: " + node.op + " changes the domain of kernel " + std::to_string(target) +
                  "'s result or needs a value it does not hold");
  }

  bool can_extend(int target, const Node& node) const {
    const Open& open = kernels_[static_cast<size_t>(target)];
    if (open.step.kind == KernelKind::StatsFinalize || open.step.kind == KernelKind::ColumnStats)
      return false;
    if (open.tail == kNoId || fusion_.value(node.result).type.shape != fusion_.value(open.tail).type.shape)
      return false;
    for (ValueId operand : node.operands) {
      if (operand == kNoId || open.holds(operand))
        continue;
      int k = producer_[operand];
      if (k != kInline && k != kArgument && k >= target)
        return false; // produced in this kernel (no longer held) or later
    }
    return true;
  }

  // ---- anchors ----

  void place_anchor(const Node& node) {
    const OpDef& op = op_of(node);
    switch (op.kind) {
    case OpKind::Contraction: {
      int k = add_kernel(KernelKind::Gemm, &node);
      if (op.traits.contraction == ContractionForm::Convolution)
        note(k, node.op + " runs as an implicit GEMM (im2col addressing in the operand loads)");
      return;
    }
    case OpKind::Normalization:
      if (try_fuse_norm_into_gemm(node) || try_split_group_norm(node))
        return;
      place_reduction_like(node);
      return;
    case OpKind::ColumnNorm:
      place_batch_norm(node);
      return;
    case OpKind::Reduction:
      if (try_fuse_reduction(node))
        return;
      place_reduction_like(node);
      return;
    case OpKind::Window: {
      int k = add_kernel(KernelKind::Window, &node);
      take_prologue(k, node);
      return;
    }
    case OpKind::Pointwise:
    case OpKind::Identity:
    case OpKind::Constant: break;
    }
    assert(false && "pointwise nodes are placed by place_pointwise");
  }

  const Node& stage_op(const Open& open, size_t stage) const {
    return fusion_.node(open.step.stages.at(stage).op);
  }

  // GEMM + group_norm/layer_norm over rows of [M, C] whose groups fit a tile:
  // the tile computes the statistics itself, so the chain stays one kernel.
  bool try_fuse_norm_into_gemm(const Node& node) {
    ValueId input = node.operands[0];
    int k = kernel_with_tail(input);
    if (k < 0)
      return false;
    Open& open = kernels_[static_cast<size_t>(k)];
    JoinAnswer answer = gemm_takes_row_norm(fusion_, open.step, node, used_only_by(input, node.id), options_);
    if (!answer.note.empty())
      note(k, answer.note);
    if (!answer.joins)
      return false;
    open.step.stages.push_back({node.id, {}});
    open.set_tail(node.result, true);
    producer_[node.result] = k;
    return true;
  }

  // conv2d + group_norm: the conv epilogue emits per-tile partial statistics
  // per (sample, group); the normalization is applied by the next kernel,
  // typically merged into a following pool.
  bool try_split_group_norm(const Node& node) {
    ValueId input = node.operands[0];
    int k = kernel_with_tail(input);
    if (k < 0)
      return false;
    Open& open = kernels_[static_cast<size_t>(k)];
    JoinAnswer answer = gemm_emits_group_statistics(fusion_, open.step, node, used_only_by(input, node.id), options_);
    if (!answer.joins)
      return false;
    open.step.stats_out = node.id;
    open.set_tail(kNoId, true);
    note(k, answer.note);
    start_stats_apply(node, "applies " + node.op + " with the statistics from the conv's epilogue");
    return true;
  }

  // A kernel that applies a split normalization; pointwise ops and a pool can follow.
  void start_stats_apply(const Node& node, std::string why) {
    int a = add_kernel(KernelKind::Elementwise, nullptr);
    Open& apply = kernels_[static_cast<size_t>(a)];
    apply.step.stats_in = node.id;
    apply.step.stages.push_back({kNoId, {node.id}});
    apply.set_tail(node.result, true);
    producer_[node.result] = a;
    note(a, std::move(why));
  }

  static constexpr const char* kApplyFinalizedNote = "applies batch_norm with the finalized statistics";

  void place_batch_norm(const Node& node) {
    if (!is_training_batch_norm(node)) {
      place_pointwise(node); // unreachable: eval batch_norm counts as pointwise
      return;
    }
    const int k = gemm_of_batch_norm_input(node);
    if (k >= 0 && try_fuse_batch_norm_into_gemm(node, k))
      return;
    if (k >= 0) {
      Open& open = kernels_[static_cast<size_t>(k)];
      open.step.stats_out = node.id;
      open.set_tail(kNoId, true);
      note(k, "epilogue emits per-column partial statistics (count, mean, M2) per row tile for batch_norm");
    } else {
      int s = add_kernel(KernelKind::ColumnStats, nullptr);
      kernels_[static_cast<size_t>(s)].step.stats_out = node.id;
      note(s, "computes per-channel partial statistics (count, mean, M2) of batch_norm's input");
    }
    int f = add_kernel(KernelKind::StatsFinalize, nullptr);
    kernels_[static_cast<size_t>(f)].step.stats_in = node.id;
    note(f, "combines the partials (Chan), writes mean and 1/std, updates running_mean and running_var");
    // Kept only for its running stats (issue 23): nothing to apply, and an
    // apply kernel would store nothing.
    if (users_[node.result].empty() && !is_output(fusion_, node.result)) {
      note(f, "nothing uses batch_norm's result: only the running stats are updated");
      return;
    }
    start_stats_apply(node, kApplyFinalizedNote);
  }

  // The GEMM kernel whose open result is the batch_norm's input, a 2-D [N, C]
  // whose rows are the GEMM's and which nothing else uses; or -1.
  int gemm_of_batch_norm_input(const Node& node) const {
    ValueId input = node.operands[0];
    int k = kernel_with_tail(input);
    if (k < 0)
      return -1;
    return gemm_feeds_batch_norm(fusion_, kernels_[static_cast<size_t>(k)].step, node, used_only_by(input, node.id))
               ? k
               : -1;
  }

  bool try_fuse_batch_norm_into_gemm(const Node& node, int k) {
    Open& open = kernels_[static_cast<size_t>(k)];
    JoinAnswer answer = gemm_takes_batch_norm(fusion_, open.step, node, options_);
    if (!answer.joins)
      return false;
    open.step.stages.push_back({node.id, {}});
    open.set_tail(node.result, true);
    producer_[node.result] = k;
    note(k, answer.note);
    return true;
  }

  // A reduction right after a normalization over the same rows stays in its kernel.
  bool try_fuse_reduction(const Node& node) {
    ValueId input = node.operands[0];
    int k = kernel_with_tail(input);
    if (k < 0 || !used_only_by(input, node.id))
      return false;
    Open& open = kernels_[static_cast<size_t>(k)];
    if (open.step.kind != KernelKind::Gemm && open.step.kind != KernelKind::RowReduce)
      return false; // an elementwise producer becomes a prologue instead
    if (JoinAnswer answer = gemm_takes_row_min_max(fusion_, open.step, node); answer.joins) {
      open.step.stages.push_back({node.id, {}});
      open.set_tail(kNoId, true); // complete only after every column tile: no epilogue here
      producer_[node.result] = k;
      note(k, answer.note);
      return true;
    }
    const Node& last = stage_op(open, open.step.stages.size() - 1);
    std::vector<int64_t> dims = reduced_dims(fusion_, node);
    if (open.step.kind == KernelKind::RowReduce && open.step.stages.size() == 1 && is_row_moments(last) &&
        dims == reduced_dims(fusion_, last)) {
      open.step.stages.push_back({node.id, {}});
      open.set_tail(node.result, true);
      producer_[node.result] = k;
      note(k, node.op + " over the normalized rows stays in the same kernel");
      return true;
    }
    return false;
  }

  void place_reduction_like(const Node& node) {
    const TensorType& input = fusion_.value(node.operands[0]).type;
    std::vector<int64_t> dims = reduced_dims(fusion_, node);
    bool trailing = are_trailing(dims, input.rank()) || input.rank() == 0;
    int k = add_kernel(trailing ? KernelKind::RowReduce : KernelKind::GenericReduce, &node);
    if (!trailing)
      note(k, node.op + " reduces non-trailing dims: generic strided reduction (one thread per output row)");
    take_prologue(k, node);
  }

  // Merges the elementwise kernel computing `node`'s main input into `k` as
  // a prologue when nothing else needs that kernel's values.
  void take_prologue(int k, const Node& node) {
    ValueId input = node.operands[0];
    int e = kernel_with_tail(input);
    if (e < 0 || e != k - 1)
      return;
    Open& producer = kernels_[static_cast<size_t>(e)];
    if (producer.step.kind != KernelKind::Elementwise || producer.step.stages.size() != 1 ||
        !used_only_by(input, node.id))
      return;
    // A prologue feeds only the anchor's main input: a value of it in another
    // slot (layer_norm(h, weight=h)) must come from memory.
    for (size_t slot = 1; slot < node.operands.size(); ++slot)
      if (node.operands[slot] != kNoId && producer_[node.operands[slot]] == e)
        return;
    for (NodeId id : producer.step.stages[0].pointwise) {
      ValueId value = fusion_.node(id).result;
      if (value == input)
        continue;
      for (NodeId user : users_[value])
        if (producer_[fusion_.node(user).result] != e)
          return; // a value of the prologue is needed elsewhere
      if (is_output(fusion_, value))
        return;
    }
    Open& target = kernels_[static_cast<size_t>(k)];
    target.step.prologue = producer.step.stages[0].pointwise;
    target.step.stats_in = producer.step.stats_in;
    for (std::string& text : producer.step.notes)
      target.step.notes.push_back(std::move(text));
    target.step.notes.push_back("the pointwise ops before " + node.op + " run as its prologue");
    for (NodeId id : target.step.prologue)
      producer_[fusion_.node(id).result] = k - 1; // renumbered below
    erase_kernel(static_cast<size_t>(e));
    for (NodeId id : kernels_[static_cast<size_t>(e)].step.prologue)
      producer_[fusion_.node(id).result] = e;
  }

  // A split group_norm applied by a pool combines the partials per block;
  // applied anywhere else it needs them finalized first (mean, 1/std per
  // sample and group), by a small kernel just before the apply.
  void finalize_unmerged_applies() {
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const KernelStep& step = kernels_[k].step;
      if (step.stats_in == kNoId || step.kind == KernelKind::Window || step.kind == KernelKind::StatsFinalize)
        continue;
      if (channel_groups(fusion_.node(step.stats_in)) <= 0)
        continue; // a batch_norm's apply reads its statistics finalized already
      Open finalize;
      finalize.step.kind = KernelKind::StatsFinalize;
      finalize.step.stats_in = step.stats_in;
      finalize.step.notes.push_back("combines the conv's partial " + fusion_.node(step.stats_in).op +
                                    " statistics (Chan): the apply is not merged into a pool, so no block owns a "
                                    "whole group");
      kernels_.insert(kernels_.begin() + static_cast<long>(k), std::move(finalize));
      ++k;
    }
  }

  // A batch_norm over [N, C] with few rows (N known, at most
  // kApplyMergedParts row tiles of partials) needs no finalize kernel: its
  // one elementwise apply merges each channel's partials itself and updates
  // the running stats from the threads of row 0 (one launch fewer; chain 39
  // small: 128 rows, 2 tiles).
  static constexpr int64_t kApplyMergedParts = 4;

  void merge_small_batch_norm_finalizes() {
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const KernelStep& finalize = kernels_[k].step;
      if (finalize.kind != KernelKind::StatsFinalize || !is_column_norm(fusion_.node(finalize.stats_in)))
        continue;
      const Node& norm = fusion_.node(finalize.stats_in);
      const Shape& input = fusion_.value(norm.operands[0]).type.shape;
      if (input.size() != 2 || !input[0].is_constant() || input[0].value() < 1 ||
          input[0].value() > kApplyMergedParts * options_.gemm_tile_m)
        continue; // (no rows: no partials to merge; the finalize kernel handles it as before)
      std::vector<size_t> appliers;
      for (size_t a = 0; a < kernels_.size(); ++a)
        if (a != k && kernels_[a].step.stats_in == norm.id)
          appliers.push_back(a);
      if (appliers.size() != 1 || kernels_[appliers[0]].step.kind != KernelKind::Elementwise)
        continue;
      // Row 0 of the merged apply updates the running stats: no other thread
      // of that kernel may read them (issue 23: `y = h + running_mean` raced).
      if (reads_updated_state(kernels_[appliers[0]].step, norm))
        continue;
      std::vector<std::string>& notes = kernels_[appliers[0]].step.notes;
      std::erase(notes, kApplyFinalizedNote);
      notes.push_back("applies batch_norm with statistics it merges from the partials itself (" +
                      std::to_string((input[0].value() + options_.gemm_tile_m - 1) / options_.gemm_tile_m) +
                      " row tiles: no finalize kernel); row 0 updates running_mean and running_var");
      erase_kernel(k--);
    }
  }

  // A batch_norm whose partials a forward convolution's epilogue writes
  // ([N, position tiles, C, 3]) is finalized by that GEMM kernel too: the
  // last block of each sample merges the sample's tiles, the last of those
  // the samples (templates/helpers.cu fusegen_finalize_sample_stats), so no
  // finalize kernel is launched (the ResNet basic block: 2 launches fewer).
  // Only when the finalize kernel comes right after the GEMM, so that no
  // kernel in between sees the running stats change earlier than before,
  // and no other op of the GEMM reads them.
  void finalize_in_convolutions() {
    for (size_t k = 1; k < kernels_.size(); ++k) {
      const KernelStep& finalize = kernels_[k].step;
      if (finalize.kind != KernelKind::StatsFinalize || !is_column_norm(fusion_.node(finalize.stats_in)))
        continue;
      const Node& norm = fusion_.node(finalize.stats_in);
      KernelStep& gemm = kernels_[k - 1].step;
      if (gemm.kind != KernelKind::Gemm || gemm.stats_out != norm.id)
        continue;
      const Node& conv = fusion_.node(gemm.anchor());
      auto groups = conv.attrs.find("groups");
      // A grouped convolution's GEMM batch is (sample, group): not one sample.
      if (!convolution_rows_are_positions(fusion_, conv) || groups == conv.attrs.end() ||
          std::get<int64_t>(groups->second) != 1 || reads_updated_state(gemm, norm))
        continue;
      gemm.finalizes_stats = true;
      gemm.notes.push_back("the last block of each sample merges its partial statistics, the last sample's block "
                           "finalizes them and updates running_mean and running_var: no finalize kernel");
      erase_kernel(k--);
    }
  }

  // Removes kernel k; the values of the kernels after it move down by one.
  void erase_kernel(size_t k) {
    kernels_.erase(kernels_.begin() + static_cast<long>(k));
    for (int& p : producer_)
      if (p > static_cast<int>(k))
        --p;
  }

  // Whether a node of `step` other than `norm` reads a tensor `norm` updates
  // in place (its mutated operands, from the op's traits).
  bool reads_updated_state(const KernelStep& step, const Node& norm) const {
    const OpDef* op = OpRegistry::builtin().find(norm.op);
    if (!op || !op->mutates)
      return false;
    std::vector<ValueId> updated;
    for (const std::string& param : op->mutates(norm.attrs))
      if (ValueId id = norm.operands[static_cast<size_t>(op->tensor_slot(param))]; id != kNoId)
        updated.push_back(id);
    for (NodeId id : step.nodes()) {
      if (id == norm.id)
        continue;
      for (ValueId operand : fusion_.node(id).operands)
        if (std::find(updated.begin(), updated.end(), operand) != updated.end())
          return true;
    }
    return false;
  }

  // The most partials a reader combines per element.
  static constexpr int64_t kMaxRowReduceParts = 8;

  // A GEMM's row minimum/maximum across tiles (rule 6) over few known
  // column tiles, read only by elementwise kernels: each tile writes its own
  // partial and the readers combine them, so the GEMM needs no fill kernel
  // before it (+-inf for the atomics) and no atomics (chain 75 small: 4
  // tiles; bench/NOTES.md v35).
  void partial_row_reductions() {
    for (size_t k = 0; k < kernels_.size(); ++k) {
      KernelStep& gemm = kernels_[k].step;
      if (gemm.kind != KernelKind::Gemm || gemm.stages.size() != 3 || !is_min_max(stage_op(kernels_[k], 2)))
        continue;
      const Node& reduce = stage_op(kernels_[k], 2);
      const Shape& input = fusion_.value(reduce.operands[0]).type.shape;
      if (input.size() != 2 || !input[1].is_constant() || is_output(fusion_, reduce.result))
        continue;
      const int64_t parts = (input[1].value() + options_.gemm_tile_n - 1) / options_.gemm_tile_n;
      if (parts < 1 || parts > kMaxRowReduceParts)
        continue;
      bool elementwise_readers = true;
      for (NodeId user : users_[reduce.result]) {
        const int reader = producer_[fusion_.node(user).result];
        const KernelStep& step = kernels_[static_cast<size_t>(reader)].step;
        elementwise_readers = elementwise_readers && reader > static_cast<int>(k) &&
                              step.kind == KernelKind::Elementwise && step.stats_in == kNoId &&
                              std::find(step.prologue.begin(), step.prologue.end(), user) == step.prologue.end();
      }
      if (!elementwise_readers)
        continue;
      gemm.row_reduce_parts = parts;
      std::replace(gemm.notes.begin(), gemm.notes.end(), row_reduce_atomics_note(reduce.op),
                   reduce.op + " over the row runs in the epilogue: each of the " + std::to_string(parts) +
                       " column tiles writes its partial result and the readers combine them (no atomics, no fill)");
    }
  }

  const Fusion& fusion_;
  const PlanOptions& options_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<int> producer_; // value -> kernel index, kArgument or kInline
  std::vector<Open> kernels_;
};

} // namespace

std::vector<KernelStep> group_kernels(const Fusion& fusion, const PlanOptions& options) {
  return Grouper(fusion, options).run();
}

} // namespace fusegen::plan
