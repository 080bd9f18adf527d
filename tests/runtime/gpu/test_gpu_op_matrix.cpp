// Every op, on every kernel family that can hold it, at edge shapes, on the
// GPU against the float64 reference interpreter (ggml's test-backend-ops in
// spirit): pointwise ops on their own (elementwise kernel) and in a GEMM
// epilogue; reductions and normalizations over trailing dims (row-reduce
// kernel) and leading dims (generic reduction); norms fused into GEMM
// epilogues; long rows, cached in shared memory or not, with special
// values; pools of every rank; contractions, convolutions of every rank and
// transposed ones. Sizes are 1, 3, 127 and others that are no
// multiple of any tile, so partial tiles and bounds checks run. Strict
// precision (1e-4). Skips without a GPU.
#include "support/GpuSupport.h"
#include "support/TestSupport.h"

#include "fusegen/Codegen.h"
#include "fusegen/Interpreter.h"
#include "fusegen/OpRegistry.h"
#include "fusegen/Planner.h"
#include "fusegen/RandomInputs.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fusegen {
namespace {

struct MatrixCase {
  std::string name; // test name suffix
  std::string spec; // one fusion `f` over a symbolic batch N
  std::vector<int64_t> batches;
};

void PrintTo(const MatrixCase& c, std::ostream* os) { *os << c.name; }

// Unary pointwise ops of the registry whose other parameters all have
// defaults, plus a few with arguments, as expressions of `x`.
std::vector<std::string> unary_expressions(const std::string& x) {
  std::vector<std::string> out;
  const OpRegistry& registry = OpRegistry::builtin();
  for (const std::string& name : registry.names()) {
    const OpDef& op = *registry.find(name);
    if (op.kind != OpKind::Pointwise || op.params.empty() || !OpDef::is_tensor_kind(op.params[0].kind))
      continue;
    // (clamp's min and max default to None, but one is required.)
    bool unary = std::all_of(op.params.begin() + 1, op.params.end(), [](const ParamSpec& p) {
      return !OpDef::is_tensor_kind(p.kind) && p.default_value && !std::holds_alternative<NoneAttr>(*p.default_value);
    });
    if (unary)
      out.push_back(name + "(" + x + ")");
  }
  out.push_back("clamp(" + x + ", min=-0.5, max=0.25)");
  out.push_back("leaky_relu(" + x + ", negative_slope=0.2)");
  out.push_back("gelu(" + x + ", approximate=\"tanh\")");
  out.push_back("softplus(" + x + ", beta=2.0, threshold=1.0)");
  out.push_back("hardtanh(" + x + ", min_val=-0.3, max_val=0.6)");
  out.push_back(x + " * 0.5 + 1.5");
  out.push_back("maximum(" + x + ", 0.1) - minimum(" + x + ", -0.1) / 3.0");
  return out;
}

// Groups of at most `per_fusion` outputs (the kernels' buffer limit).
std::vector<std::vector<std::string>> chunks(const std::vector<std::string>& all, size_t per_fusion) {
  std::vector<std::vector<std::string>> out;
  for (size_t i = 0; i < all.size(); i += per_fusion)
    out.emplace_back(all.begin() + static_cast<long>(i),
                     all.begin() + static_cast<long>(std::min(all.size(), i + per_fusion)));
  return out;
}

std::string outputs(const std::vector<std::string>& expressions) {
  std::string text;
  for (size_t i = 0; i < expressions.size(); ++i)
    text += "  output y" + std::to_string(i) + " = " + expressions[i] + "\n";
  return text;
}

void pointwise_cases(std::vector<MatrixCase>& out) {
  int part = 0;
  for (const auto& group : chunks(unary_expressions("x"), 8)) {
    out.push_back({"elementwise_part" + std::to_string(part),
                   "fusion f {\n  input x : f32[N, 127]\n" + outputs(group) + "}\n",
                   {1, 3, 127, 1025}});
    out.push_back({"gemm_epilogue_part" + std::to_string(part++),
                   "fusion f {\n  input x : f32[N, 33]\n  param w : f32[130, 33]\n  param b : f32[130]\n"
                   "  h = linear(x, w, b)\n" +
                       outputs(group) + "}\n",
                   {1, 3, 300}});
  }
  // Broadcasting binary ops: a row, a column and a scalar operand.
  out.push_back({"elementwise_broadcast",
                 "fusion f {\n  input x : f32[N, 3, 7]\n  input r : f32[7]\n  input c : f32[N, 3, 1]\n"
                 "  output y0 = x + r\n  output y1 = x - c\n  output y2 = x * c / (r * r + 1.0)\n"
                 "  output y3 = maximum(x, c)\n  output y4 = minimum(r, c)\n}\n",
                 {1, 3, 130}});
}

void contraction_cases(std::vector<MatrixCase>& out) {
  for (auto [k, n] : std::vector<std::pair<int, int>>{{3, 1}, {1, 3}, {127, 3}, {33, 127}, {300, 130}}) {
    std::string ks = std::to_string(k), ns = std::to_string(n);
    out.push_back({"linear_k" + ks + "_n" + ns,
                   "fusion f {\n  input x : f32[N, " + ks + "]\n  param w : f32[" + ns + ", " + ks +
                       "]\n  param b : f32[" + ns + "]\n  output y = relu(linear(x, w, b))\n}\n",
                   {1, 3, 127, 300}});
    out.push_back({"matmul_k" + ks + "_n" + ns,
                   "fusion f {\n  input x : f32[N, " + ks + "]\n  param w : f32[" + ks + ", " + ns +
                       "]\n  output y = matmul(x, w)\n}\n",
                   {1, 3, 127}});
  }
  // Few rows: templates/skinny_gemm.cu (B along k and along n, 16-byte and
  // scalar loads, one and two row tiles; tiled from 13 to 48 rows along k,
  // with cluster splits of k, partial last blocks of columns and a k that
  // is no multiple of a stage), then gemm.cu.
  out.push_back({"linear_skinny_vector",
                 "fusion f {\n  input x : f32[N, 4100]\n  param w : f32[1030, 4100]\n  param b : f32[1030]\n"
                 "  output y = silu(linear(x, w, b))\n}\n",
                 {1, 5, 12, 16, 17, 40, 48, 64}});
  out.push_back({"linear_tiled_short_k",
                 "fusion f {\n  input x : f32[N, 36]\n  param w : f32[20, 36]\n  output y = linear(x, w) * 0.5\n}\n",
                 {24, 57}});
  out.push_back({"linear_skinny_scalar",
                 "fusion f {\n  input x : f32[N, 3, 1027]\n  param w : f32[257, 1027]\n  output y = linear(x, w)\n}\n",
                 {1, 2, 5}});
  out.push_back({"swiglu_skinny",
                 "fusion f {\n  input x : f32[N, 512]\n  param wg : f32[1376, 512]\n  param wu : f32[1376, 512]\n"
                 "  param wd : f32[512, 1376]\n  g = linear(x, wg)\n  u = linear(x, wu)\n"
                 "  output y = linear(silu(g) * u, wd) + x\n}\n",
                 {1, 16, 48}});
  out.push_back({"matmul_skinny_along_n",
                 "fusion f {\n  input x : f32[N, 300]\n  param w : f32[300, 5000]\n  output y = matmul(x, w)\n}\n",
                 {1, 7, 16}});
  out.push_back({"matmul_skinny_along_n_vector",
                 "fusion f {\n  input x : f32[N, 2, 65]\n  input w : f32[N, 65, 20000]\n"
                 "  output y = relu(matmul(x, w))\n}\n",
                 {1, 3}});
  out.push_back({"matmul_batched",
                 "fusion f {\n  input a : f32[N, 3, 5, 33]\n  input b : f32[3, 33, 7]\n  output y = matmul(a, b)\n}\n",
                 {1, 3}});
  out.push_back({"conv2d_stride_pad_dilation",
                 "fusion f {\n  input x : f32[N, 3, 9, 11]\n  param w : f32[5, 3, 3, 3]\n  param b : f32[5]\n"
                 "  output y = conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2))\n}\n",
                 {1, 3}});
  out.push_back({"conv2d_groups",
                 "fusion f {\n  input x : f32[N, 6, 7, 7]\n  param w : f32[4, 3, 2, 2]\n"
                 "  output y = tanh(conv2d(x, w, groups=2))\n}\n",
                 {1, 3}});
}

void reduction_cases(std::vector<MatrixCase>& out) {
  const char* reductions[] = {"sum", "mean", "amax", "amin", "max", "min", "logsumexp"};
  for (int c : {1, 3, 127, 1025}) {
    std::string cs = std::to_string(c);
    std::vector<std::string> rows, columns;
    for (const char* op : reductions) {
      rows.push_back(std::string(op) + "(x, dim=1)");
      columns.push_back(std::string(op) + "(x, dim=0, keepdim=true)");
    }
    out.push_back({std::string("row_reduce_c") + cs,
                   "fusion f {\n  input x : f32[N, " + cs + "]\n" + outputs(rows) + "}\n",
                   {1, 3, 127}});
    out.push_back({std::string("generic_reduce_c") + cs,
                   "fusion f {\n  input x : f32[N, " + cs + "]\n" + outputs(columns) + "}\n",
                   {1, 3, 127}});
  }
  out.push_back({"reduce_inner_dims",
                 "fusion f {\n  input x : f32[N, 3, 5, 7]\n  output y0 = sum(x, dim=(1, 3))\n"
                 "  output y1 = mean(x, dim=(2, 3), keepdim=true)\n  output y2 = amax(x)\n}\n",
                 {1, 3}});
}

void normalization_cases(std::vector<MatrixCase>& out) {
  out.push_back({"softmax",
                 "fusion f {\n  input x : f32[N, 127]\n  output y0 = softmax(x, dim=1)\n  output y1 = log_softmax(x, "
                 "dim=1)\n  output y2 = softmax(x, dim=0)\n  output y3 = log_softmax(x, dim=0)\n}\n",
                 {1, 3, 130}});
  out.push_back({"layer_norm",
                 "fusion f {\n  input x : f32[N, 3, 127]\n  param w : f32[127]\n  param b : f32[127]\n"
                 "  output y0 = layer_norm(x, 127, weight=w, bias=b)\n  output y1 = layer_norm(x, (3, 127))\n}\n",
                 {1, 3, 130}});
  out.push_back({"group_norm",
                 "fusion f {\n  input x : f32[N, 6, 5, 7]\n  param w : f32[6]\n  param b : f32[6]\n"
                 "  output y0 = group_norm(x, 3, weight=w, bias=b)\n  output y1 = group_norm(x, 1)\n"
                 "  output y2 = group_norm(x, 6)\n}\n",
                 {1, 3, 33}});
  out.push_back({"instance_norm",
                 "fusion f {\n  input x : f32[N, 3, 127]\n  param w : f32[3]\n  param b : f32[3]\n"
                 "  output y = instance_norm(x, weight=w, bias=b)\n}\n",
                 {1, 3, 33}});
  out.push_back({"batch_norm_training",
                 "fusion f {\n  input x : f32[N, 3, 5, 7]\n  state rm : f32[3]\n  state rv : f32[3]\n"
                 "  param w : f32[3]\n  param b : f32[3]\n"
                 "  output y = batch_norm(x, rm, rv, weight=w, bias=b, training=true)\n}\n",
                 {2, 3, 33}});
  out.push_back({"batch_norm_eval_2d",
                 "fusion f {\n  input x : f32[N, 127]\n  state rm : f32[127]\n  state rv : f32[127]\n"
                 "  output y = batch_norm(x, rm, rv, training=false)\n}\n",
                 {1, 3, 130}});
  // Norms in the GEMM epilogue: groups inside a tile, then a row minimum.
  for (const char* norm : {"group_norm(h, 4)", "layer_norm(h, 96)"}) {
    out.push_back({std::string("gemm_") + (norm[0] == 'g' ? "group_norm" : "layer_norm") + "_min",
                   "fusion f {\n  input x : f32[N, 33]\n  param w : f32[96, 33]\n  h = linear(x, w)\n  h = " +
                       std::string(norm) + "\n  output y = min(h, dim=1, keepdim=true) + h\n}\n",
                   {1, 3, 127, 300}});
  }
  out.push_back({"gemm_batch_norm",
                 "fusion f {\n  input x : f32[N, 33]\n  param w : f32[70, 33]\n  state rm : f32[70]\n"
                 "  state rv : f32[70]\n  h = linear(x, w)\n"
                 "  output y = batch_norm(h, rm, rv, training=true)\n}\n",
                 {2, 3, 127, 300}});
  out.push_back({"conv2d_group_norm_pool",
                 "fusion f {\n  input x : f32[N, 3, 9, 9]\n  param w : f32[8, 3, 3, 3]\n  h = conv2d(x, w)\n"
                 "  h = group_norm(h, 4)\n  output y = max_pool2d(h, 2)\n}\n",
                 {1, 3}});
}

// Rows up to the longest: warp slices (1000), block-wide and cached with 256
// threads (16000), longer than a block's cache (40000 and 70000: the first
// 28800 floats cached on sm_90, the rest reloaded); softmax's statistics in
// one pass.
// Special values as torch: -inf entries, rows all -inf, NaN or +inf.
void long_row_cases(std::vector<MatrixCase>& out) {
  for (int length : {40000, 70000}) {
    std::string l = std::to_string(length), half = std::to_string(length / 2);
    out.push_back({"long_rows_" + l,
                   "fusion f {\n  input x : f32[N, " + l + "]\n  input z : f32[N, 4, " + half + "]\n  param w : f32[" +
                       l + "]\n  param b : f32[" + l + "]\n  output y0 = softmax(x, dim=1)\n" +
                       "  output y1 = log_softmax(x, dim=1)\n  output y2 = layer_norm(x, " + l +
                       ", weight=w, bias=b)\n  output y3 = logsumexp(x, dim=1)\n  output y4 = sum(x, dim=1)\n" +
                       "  output y5 = amin(group_norm(z, 2), dim=(1, 2))\n}\n",
                   {1, 3, 8}});
  }
  // Few rows split over clusters (sm_90), parts of unequal length: a row
  // of 5003 in 4 parts, group_norm's (sample, group) segments of 3003 and
  // instance_norm's of 2145 in 2, softmax's 2049 in 2 (parts of 1025 and 1024).
  out.push_back({"cluster_rows",
                 "fusion f {\n  input x : f32[N, 5003]\n  input g : f32[N, 6, 1001]\n  input c : f32[N, 3, 33, 65]\n"
                 "  input s : f32[N, 2049]\n  param w : f32[5003]\n  param b : f32[5003]\n"
                 "  param gw : f32[6]\n  output y0 = layer_norm(x, 5003, weight=w, bias=b) * 2.0\n"
                 "  output y1 = group_norm(g, 2, weight=gw)\n  output y2 = instance_norm(c)\n"
                 "  output y3 = log_softmax(s, dim=1)\n  output y4 = softmax(x - 1.0, dim=1)\n}\n",
                 {1, 2, 5}});
  // Enough rows of 30000 to fill the SMs: layer_norm in two parts of 15000
  // per row, 512 threads each; log_softmax in four of 7500, 256 threads.
  out.push_back({"cluster_rows_wide",
                 "fusion f {\n  input x : f32[N, 30000]\n  param w : f32[30000]\n  param b : f32[30000]\n"
                 "  output y0 = layer_norm(x, 30000, weight=w, bias=b)\n  output y1 = log_softmax(x, dim=1)\n}\n",
                 {160}});
  // Runs of 4 adjacent elements (row lengths that are multiples of 4): a
  // chunk's tail past the last whole chunk (2052 = 2048 + 4), epilogue
  // operands along the row and per row, group_norm's per-channel params over
  // a spatial size of 48, rows in warp slices (20) and few rows of 10004 over
  // clusters whose parts round up to whole runs (1252, the last 1240).
  out.push_back({"vector_rows",
                 "fusion f {\n  input x : f32[N, 2052]\n  input v : f32[2052]\n  input c : f32[N, 1]\n"
                 "  input g : f32[N, 8, 4, 12]\n  input s : f32[N, 20]\n  input t : f32[N, 10004]\n"
                 "  param w : f32[2052]\n  param b : f32[2052]\n  param gw : f32[8]\n  param gb : f32[8]\n"
                 "  output y0 = layer_norm(x * 0.5, 2052, weight=w, bias=b) * v + c\n"
                 "  output y1 = softmax(x, dim=1) - v\n  output y2 = group_norm(g, 4, weight=gw, bias=gb)\n"
                 "  output y3 = log_softmax(s, dim=1)\n  output y4 = layer_norm(t, 10004) + 1.0\n"
                 "  output y5 = softmax(t, dim=1)\n}\n",
                 {1, 2, 5}});
  // Constants exact in float and double, so both sides see the same zeros.
  for (int length : {1000, 16000, 40000, 70000}) {
    std::string l = std::to_string(length);
    out.push_back({"long_rows_special_values_" + l,
                   "fusion f {\n  input x : f32[N, " + l + "]\n  input c : f32[N, 1]\n" +
                       "  a = log(relu(x - 0.25)) + log(relu(c - 0.25))\n  n = x + log(c - 0.5)\n" +
                       "  p = x - log(relu(c - 0.75))\n  output y0 = softmax(a, dim=1)\n" +
                       "  output y1 = log_softmax(a, dim=1)\n  output y2 = log_softmax(n, dim=1)\n" +
                       "  output y3 = softmax(p, dim=1)\n  output y4 = logsumexp(a, dim=1)\n" +
                       "  output y5 = logsumexp(p, dim=1)\n}\n",
                   {16}});
  }
}

// Convolutions of every rank, forward and transposed, at edge shapes: odd
// sizes, stride above the kernel (transposed phases without taps), dilation,
// groups, output_padding, "same" padding with an even kernel; fused
// group_norm statistics after a 3-D convolution, unfused after a transposed one.
void convolution_cases(std::vector<MatrixCase>& out) {
  auto conv = [&](const std::string& name, const std::string& body) {
    out.push_back({name, "fusion f {\n" + body + "}\n", {1, 3}});
  };
  conv("conv1d_stride_pad_dilation", "  input x : f32[N, 3, 17]\n  param w : f32[5, 3, 4]\n  param b : f32[5]\n"
                                     "  output y = conv1d(x, w, b, stride=2, padding=3, dilation=2)\n");
  conv("conv1d_same_even_kernel", "  input x : f32[N, 3, 16]\n  param w : f32[4, 3, 4]\n"
                                  "  output y = conv1d(x, w, padding=\"same\", dilation=1)\n");
  conv("conv3d_groups_stride_pad_dilation",
       "  input x : f32[N, 4, 5, 6, 7]\n  param w : f32[6, 2, 3, 2, 3]\n  param b : f32[6]\n"
       "  output y = conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 1, 2), groups=2)\n");
  conv("conv3d_wide_group_norm_pool",
       "  input x : f32[N, 5, 5, 6, 7]\n  param w : f32[70, 5, 3, 3, 3]\n  param b : f32[70]\n"
       "  h = conv3d(x, w, b)\n  h = group_norm(h, 5)\n  output y = max_pool3d(relu(h), 2)\n");
  // The narrow kernel over a deep gathered A (fewer than 16 input channels,
  // K > 128): two rows a thread with tabled tap offsets and group statistics
  // per half (924 rows a sample: a last block half full); with padding,
  // addresses checked per element; 40 columns, one row a thread.
  conv("conv3d_narrow_deep_group_norm",
       "  input x : f32[N, 8, 5, 13, 30]\n  param w : f32[24, 8, 3, 3, 3]\n  param b : f32[24]\n"
       "  output y = relu(group_norm(conv3d(x, w, b), 4))\n");
  conv("conv3d_narrow_deep_padded", "  input x : f32[N, 6, 4, 7, 9]\n  param w : f32[16, 6, 3, 3, 4]\n"
                                    "  output y = conv3d(x, w, padding=1) * 0.5\n");
  // Columns in parts over grid x where B would not fit at once: 64 of depth
  // 216 in two parts, with batch_norm's statistics finalized in the kernel
  // (arrivals from both parts); 48 in two parts of whole groups of 8.
  conv("conv3d_narrow_column_parts_batch_norm",
       "  input x : f32[N, 8, 4, 6, 7]\n  param w : f32[64, 8, 3, 3, 3]\n  state rm : f32[64]\n"
       "  state rv : f32[64]\n  output y = batch_norm(conv3d(x, w), rm, rv, training=true) + 1.0\n");
  conv("conv3d_narrow_column_parts_group_norm",
       "  input x : f32[N, 8, 5, 6, 7]\n  param w : f32[48, 8, 3, 3, 3]\n  param b : f32[48]\n"
       "  output y = group_norm(conv3d(x, w, b), 6) * 2.0\n");
  conv("conv3d_narrow_deep_40_columns", "  input x : f32[N, 6, 5, 6, 7]\n  param w : f32[40, 6, 3, 3, 3]\n"
                                        "  param b : f32[40]\n  output y = sigmoid(conv3d(x, w, b))\n");
  conv("conv3d_size_one_dims", "  input x : f32[N, 2, 1, 1, 5]\n  param w : f32[3, 2, 1, 1, 2]\n"
                               "  output y = conv3d(x, w)\n");
  // Channels-last copies and vector loads (16+ input channels per group,
  // more than 64 output channels per group).
  conv("conv2d_channels_last_stride_pad_dilation",
       "  input x : f32[N, 16, 13, 11]\n  param w : f32[72, 16, 3, 2]\n  param b : f32[72]\n"
       "  output y = relu(conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2)))\n");
  conv("conv3d_channels_last_groups", "  input x : f32[N, 40, 3, 5, 6]\n  param w : f32[130, 20, 2, 3, 3]\n"
                                      "  output y = conv3d(x, w, groups=2, padding=(0, 1, 1))\n");
  conv("conv1d_channels_last_same_group_norm", "  input x : f32[N, 32, 37]\n  param w : f32[128, 32, 4]\n"
                                               "  h = conv1d(x, w, padding=\"same\")\n  output y = group_norm(h, 2)\n");
  conv("conv_transpose3d_channels_last_groups_dilation",
       "  input x : f32[N, 32, 4, 5, 6]\n  param w : f32[32, 80, 3, 2, 3]\n"
       "  output y = conv_transpose3d(x, w, stride=(2, 1, 3), padding=(1, 0, 1), groups=2, dilation=(1, 2, 1))\n");
  conv("conv_transpose1d_output_padding_dilation",
       "  input x : f32[N, 4, 9]\n  param w : f32[4, 3, 5]\n"
       "  output y = conv_transpose1d(x, w, stride=3, padding=2, output_padding=1, dilation=2)\n");
  conv("conv_transpose1d_stride_shares_dilation",
       "  input x : f32[N, 2, 6]\n  param w : f32[2, 3, 3]\n  param b : f32[3]\n"
       "  output y = conv_transpose1d(x, w, b, stride=2, dilation=2)\n");
  conv("conv_transpose2d_groups_output_padding",
       "  input x : f32[N, 6, 5, 7]\n  param w : f32[6, 2, 3, 4]\n  param b : f32[6]\n"
       "  output y = conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=3)\n");
  conv("conv_transpose2d_stride_above_kernel", "  input x : f32[N, 3, 4, 5]\n  param w : f32[3, 5, 2, 2]\n"
                                               "  output y = sigmoid(conv_transpose2d(x, w, stride=3))\n");
  conv("conv_transpose2d_wide", "  input x : f32[N, 40, 6, 5]\n  param w : f32[40, 72, 3, 3]\n"
                                "  param b : f32[72]\n  output y = conv_transpose2d(x, w, b, stride=2, padding=1)\n");
  conv("conv_transpose3d_group_norm",
       "  input x : f32[N, 4, 3, 4, 5]\n  param w : f32[4, 6, 3, 3, 3]\n  param b : f32[6]\n"
       "  h = conv_transpose3d(x, w, b, stride=2, padding=1, output_padding=1)\n"
       "  h = group_norm(h, 3)\n  output y = tanh(h)\n");
  conv("conv_transpose3d_dilation", "  input x : f32[N, 2, 3, 3, 4]\n  param w : f32[2, 3, 2, 3, 2]\n"
                                    "  output y = conv_transpose3d(x, w, padding=(0, 1, 0), dilation=2)\n");
  // Training batch_norm statistics from the conv epilogue: per (sample, row
  // tile of positions, channel), over 99 and 2 positions, conv groups, the
  // channels-last kernel, 1-d and 3-d.
  conv("conv2d_batch_norm_relu",
       "  input x : f32[N, 3, 13, 11]\n  param w : f32[5, 3, 3, 3]\n  param b : f32[5]\n"
       "  state rm : f32[5]\n  state rv : f32[5]\n  param g : f32[5]\n  param beta : f32[5]\n"
       "  h = conv2d(x, w, b)\n  h = batch_norm(h, rm, rv, weight=g, bias=beta, training=true, momentum=0.3)\n"
       "  output y = relu(h)\n");
  conv("conv2d_channels_last_groups_batch_norm",
       "  input x : f32[N, 32, 10, 9]\n  param w : f32[144, 16, 3, 3]\n  state rm : f32[144]\n"
       "  state rv : f32[144]\n  h = conv2d(x, w, padding=1, groups=2)\n"
       "  output y = batch_norm(h, rm, rv, training=true) + 1.0\n");
  conv("conv1d_two_positions_batch_norm", "  input x : f32[N, 4, 4]\n  param w : f32[6, 4, 3]\n"
                                          "  state rm : f32[6]\n  state rv : f32[6]\n  h = conv1d(x, w)\n"
                                          "  output y = batch_norm(h, rm, rv, training=true)\n");
  // A channels-last conv's input written so by its elementwise producer (no
  // copy pass), beside an output it stores as usual; and a basic block.
  conv("conv2d_input_stored_channels_last",
       "  input x : f32[N, 16, 9, 7]\n  param w : f32[72, 16, 3, 3]\n  h = relu(x * 2.0)\n"
       "  output y = h + 1.0\n  output z = conv2d(h, w, padding=1)\n");
  conv("conv2d_basic_block",
       "  input x : f32[N, 16, 10, 9]\n  param w1 : f32[16, 16, 3, 3]\n  param w2 : f32[16, 16, 3, 3]\n"
       "  state rm1 : f32[16]\n  state rv1 : f32[16]\n  state rm2 : f32[16]\n  state rv2 : f32[16]\n"
       "  h = relu(batch_norm(conv2d(x, w1, padding=1), rm1, rv1, training=true))\n"
       "  h = batch_norm(conv2d(h, w2, padding=1), rm2, rv2, training=true)\n  output y = relu(h + x)\n");
  conv("conv3d_batch_norm", "  input x : f32[N, 2, 4, 5, 6]\n  param w : f32[3, 2, 2, 2, 2]\n"
                            "  state rm : f32[3]\n  state rv : f32[3]\n  h = conv3d(x, w, stride=(1, 2, 1))\n"
                            "  output y = sigmoid(batch_norm(h, rm, rv, training=true, eps=1e-3))\n");
}

void window_cases(std::vector<MatrixCase>& out) {
  out.push_back({"pools_1d_3d",
                 "fusion f {\n  input x : f32[N, 3, 7, 8, 9]\n  input z : f32[N, 4, 13]\n"
                 "  output y0 = max_pool3d(x, 2)\n"
                 "  output y1 = avg_pool3d(x, (3, 2, 3), stride=(2, 1, 2), padding=1, ceil_mode=true, "
                 "count_include_pad=false)\n"
                 "  output y2 = adaptive_max_pool3d(x, (2, 3, 4))\n  output y3 = adaptive_avg_pool3d(x, 1)\n"
                 "  output y4 = max_pool1d(z, 3, stride=2, padding=1, dilation=2, ceil_mode=true)\n"
                 "  output y5 = avg_pool1d(z, 4, divisor_override=3)\n  output y6 = adaptive_avg_pool1d(z, 5)\n"
                 "  output y7 = adaptive_max_pool1d(z, 1)\n}\n",
                 {1, 3}});
  out.push_back({"pools_2d_options",
                 "fusion f {\n  input x : f32[N, 3, 7, 9]\n  output y0 = max_pool2d(x, 3, stride=2, dilation=2, "
                 "padding=1)\n  output y1 = adaptive_max_pool2d(x, (3, 4))\n"
                 "  output y2 = avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true)\n"
                 "  output y3 = avg_pool2d(x, 2, count_include_pad=false, padding=1)\n}\n",
                 {1, 3}});
  out.push_back({"pools",
                 "fusion f {\n  input x : f32[N, 3, 7, 9]\n  output y0 = max_pool2d(x, 2)\n"
                 "  output y1 = max_pool2d(x, 3, stride=2, padding=1)\n  output y2 = avg_pool2d(x, (2, 3))\n"
                 "  output y3 = avg_pool2d(x, 3, stride=1, padding=1)\n  output y4 = adaptive_avg_pool2d(x, (2, 4))\n"
                 "  output y5 = adaptive_avg_pool2d(x, 1)\n}\n",
                 {1, 3, 33}});
}

std::vector<MatrixCase> cases() {
  std::vector<MatrixCase> out;
  pointwise_cases(out);
  contraction_cases(out);
  convolution_cases(out);
  reduction_cases(out);
  normalization_cases(out);
  long_row_cases(out);
  window_cases(out);
  return out;
}

class GpuOpMatrix : public ::testing::TestWithParam<MatrixCase> {};

// Without a GPU: the spec checks, and plans and generates for sm_80 and
// sm_90 at every batch of the case.
TEST_P(GpuOpMatrix, Generates) {
  const MatrixCase& c = GetParam();
  auto loaded = testing::load_module(c.spec, c.name + ".fg");
  ASSERT_TRUE(loaded) << c.spec;
  for (int64_t n : c.batches) {
    Diagnostics diags;
    std::optional<Fusion> concrete = specialize(loaded->module.fusions.at(0), {{"N", n}}, diags);
    ASSERT_TRUE(concrete) << diags.render(loaded->sources);
    for (int arch : {80, 90}) {
      CodegenOptions options;
      options.arch = arch;
      Result<GeneratedCode> code = generate_cuda({plan_fusion(*concrete)}, options);
      EXPECT_TRUE(code) << "N=" << n << " sm_" << arch << ": " << code.error() << "\n" << c.spec;
    }
  }
}

TEST_P(GpuOpMatrix, MatchesTheReferenceInterpreter) {
  FUSEGEN_SKIP_WITHOUT_GPU();
  const MatrixCase& c = GetParam();
  auto loaded = testing::load_module(c.spec, c.name + ".fg");
  ASSERT_TRUE(loaded) << c.spec;
  testing::TempDir cache;
  RuntimeOptions options;
  options.cache_dir = cache.path();
  Runtime rt(0, options);
  Program program = rt.load_string(c.spec, c.name + ".fg");
  const Fusion& fusion = loaded->module.fusions.at(0);
  for (int64_t n : c.batches) {
    Diagnostics diags;
    std::optional<Fusion> concrete = specialize(fusion, {{"N", n}}, diags);
    ASSERT_TRUE(concrete) << diags.render(loaded->sources);
    std::map<std::string, HostTensor> inputs = make_random_arguments(*concrete, 7);
    testing::DeviceResult got = testing::run_on_device(rt, program.function(fusion.name), *concrete, inputs);
    Result<InterpreterResult> want = interpret(fusion, inputs);
    ASSERT_TRUE(want) << want.error();
    testing::expect_matches_reference(got, want.value(), 1e-4, c.spec + "N=" + std::to_string(n));
  }
}

std::string case_name(const ::testing::TestParamInfo<MatrixCase>& param) { return param.param.name; }

INSTANTIATE_TEST_SUITE_P(Ops, GpuOpMatrix, ::testing::ValuesIn(cases()), case_name);

} // namespace
} // namespace fusegen
