// Convolutions of any rank (1-3 spatial dims) as implicit GEMMs onto
// templates/gemm.cu's C[b][m][n] = sum_k A(b, m, k) * B(b, k, n) (GemmParts.h).
//
// Forward: batch = (sample, conv group), m = output position, n = output
// channel within the group, k = (input channel, kernel tap); A is gathered
// from the input (zero padding by bounds checks), B is the weight
// [O, C/groups, k...] read as [N, K].
//
// Transposed, without the zero-stuffed input's wasted multiplies: output
// position o takes kernel taps t with (o + pad - t * dilation) divisible by
// the stride, so the outputs split per dim into `stride` phases o = r + j *
// stride, each an ordinary convolution over the input with its own subset of
// taps (the data-gradient decomposition). The phase joins the batch: batch =
// ((sample, conv group), phase), m = position j within the phase's sub-grid,
// k = (input channel, tap within the phase). Phases hold up to one position
// and one tap fewer per dim than the largest; those rows and taps are masked.
#include "codegen/GemmParts.h"
#include "ops/OpHelpers.h"
#include "plan/PlanQueries.h"

#include <limits>
#include <numeric>

namespace fusegen::codegen {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

std::string num(int64_t v) { return std::to_string(v); }

// One spatial dim of a convolution (constants: the kernel needs them).
struct ConvDim {
  int64_t in = 0, out = 0, kernel = 0, stride = 1, pad = 0, dilation = 1;
  bool padded = false;    // some tap reads outside the input (a bounds check)
  int64_t in_stride = 1;  // elements between neighbours along this dim of the input
  int64_t tap_stride = 1; // the same in the weight's kernel taps
};

struct ConvShape {
  bool batched = false, transposed = false;
  int64_t channels = 0, out_channels = 0, groups = 1;
  int64_t group_inputs = 0, group_outputs = 0; // channels per conv group
  int64_t plane = 1, taps = 1;                 // input elements per channel; kernel taps
  std::vector<ConvDim> dims;
};

// Names of the per-dim variables (2-D keeps the names its kernels always had).
const char* const kOutNames[] = {"od", "oh", "ow"};
const char* const kInNames[] = {"id", "ih", "iw"};
const char* const kTapNames[] = {"u", "i", "j"};
const char* const kPhaseNames[] = {"rd", "rh", "rw"};
const char* const kSubNames[] = {"jd", "jh", "jw"};

template <size_t N> std::string name_of(const char* const (&names)[N], const ConvShape& c, size_t d) {
  return names[N - c.dims.size() + d];
}

Result<ConvShape> conv_shape(const EmitContext& ctx, const Node& node) {
  const OpTraits& traits = plan::traits_of(node);
  const Shape& x = shape_of(ctx, operand(node, "input"));
  const Shape& w = shape_of(ctx, operand(node, "weight"));
  const Shape& out = shape_of(ctx, node.result);
  const auto n = static_cast<size_t>(traits.spatial_dims);
  for (size_t d = x.size() - n - 1; d < x.size(); ++d)
    if (!x[d].is_constant() || !out[d].is_constant())
      return Error{node.op + " input " + shape_str(x) +
                   " has a symbolic channel or spatial dim; the GEMM kernel needs them constant"};
  if (!shape_is_constant(w))
    return Error{node.op + " weight " + shape_str(w) + " has symbolic dims; the GEMM kernel needs them constant"};
  ConvShape c;
  c.transposed = traits.transposed;
  c.batched = x.size() == n + 2;
  c.groups = std::get<int64_t>(node.attrs.at("groups"));
  c.channels = x[x.size() - n - 1].value();
  c.out_channels = out[out.size() - n - 1].value();
  c.group_inputs = c.channels / c.groups;
  c.group_outputs = c.out_channels / c.groups;
  auto ints = [&](const char* name) {
    return ops::spatial_values(std::get<std::vector<int64_t>>(node.attrs.at(name)), n);
  };
  std::vector<int64_t> stride = ints("stride"), dilation = ints("dilation");
  std::vector<int64_t> pad(n, 0), pad_after(n, 0);
  const AttrValue& padding = node.attrs.at("padding");
  c.dims.resize(n);
  for (size_t d = 0; d < n; ++d) {
    ConvDim& cd = c.dims[d];
    cd.kernel = w[w.size() - n + d].value();
    cd.stride = stride[d];
    cd.dilation = dilation[d];
    if (std::holds_alternative<std::string>(padding)) { // "same" with an odd total: the extra one on the right
      const int64_t total = cd.dilation * (cd.kernel - 1);
      pad[d] = total / 2;
      pad_after[d] = total - pad[d];
    } else {
      pad[d] = pad_after[d] = ints("padding")[d];
    }
    cd.pad = pad[d];
    cd.padded = pad[d] != 0 || pad_after[d] != 0 || c.transposed;
    cd.in = x[x.size() - n + d].value();
    cd.out = out[out.size() - n + d].value();
    c.plane *= cd.in;
    c.taps *= cd.kernel;
  }
  for (size_t d = n; d-- > 0;) {
    c.dims[d].in_stride = d + 1 == n ? 1 : c.dims[d + 1].in_stride * c.dims[d + 1].in;
    c.dims[d].tap_stride = d + 1 == n ? 1 : c.dims[d + 1].tap_stride * c.dims[d + 1].kernel;
  }
  return c;
}

// Statements splitting `index` (of `type`) into per-dim coordinates `names`
// over `extents` (row-major): "const int oh = p / 7, ow = p % 7;".
std::string split_index(const std::string& type, const std::string& index, const std::vector<std::string>& names,
                        const std::vector<int64_t>& extents, const std::string& suffix) {
  std::vector<int64_t> strides(extents.size());
  int64_t after = 1;
  for (size_t d = extents.size(); d-- > 0;) {
    strides[d] = after;
    after *= extents[d];
  }
  std::string line = "const " + type + " ";
  for (size_t d = 0; d < names.size(); ++d) {
    std::string value = index;
    if (d + 1 == names.size() && d > 0) {
      value += " % " + num(extents[d]) + suffix; // the last of several: a remainder alone
    } else {
      if (strides[d] != 1)
        value += " / " + num(strides[d]) + suffix;
      if (d > 0)
        value += " % " + num(extents[d]) + suffix;
    }
    line += (d ? ", " : "") + names[d] + " = " + value;
  }
  return line + ";";
}

std::vector<std::string> names(const char* const (&all)[3], const ConvShape& c) {
  std::vector<std::string> out;
  for (size_t d = 0; d < c.dims.size(); ++d)
    out.push_back(name_of(all, c, d));
  return out;
}

template <typename F> std::vector<int64_t> per_dim(const ConvShape& c, F f) {
  std::vector<int64_t> out;
  for (const ConvDim& d : c.dims)
    out.push_back(f(d));
  return out;
}

// "c" and the tap coordinates from k: input channel major, taps row-major.
void split_depth(const ConvShape& c, const std::vector<int64_t>& tap_extents, int64_t taps,
                 std::vector<std::string>& lines) {
  lines.push_back("const int kq = static_cast<int>(k);");
  std::vector<std::string> tap_names = names(kTapNames, c);
  if (taps == 1) {
    std::string zero;
    for (const std::string& t : tap_names)
      zero += ", " + t + " = 0";
    lines.push_back("const int c = kq" + zero + ";");
    return;
  }
  lines.push_back("const int c = kq / " + num(taps) + ", tap = kq % " + num(taps) + ";");
  lines.push_back(split_index("int", "tap", tap_names, tap_extents, ""));
}

// "a * 3" (nothing for a factor of 1).
std::string times(const std::string& a, int64_t factor) { return factor == 1 ? a : a + " * " + num(factor); }

// ---- channels-last copies (KernelStep::a_layout) ----

// [lead..., C, spatial...] -> [lead..., spatial..., C].
RearrangeSpec input_copy(const EmitContext& ctx, ValueId x_id, const ConvShape& c, BufferId to) {
  const Shape& x = shape_of(ctx, x_id);
  const std::string c_text = num(c.channels) + "LL", s_text = num(c.plane) + "LL",
                    block = num(c.channels * c.plane) + "LL";
  RearrangeSpec spec;
  spec.to = to;
  spec.source = ctx.plan().buffer_of(x_id);
  spec.from = ctx.value_buffer(x_id);
  spec.decode = {"const long long lead = index / " + block + ", rest = index % " + block + ";",
                 "const long long s = rest / " + c_text + ", c = rest % " + c_text + ";",
                 "const long long from = (lead * " + c_text + " + c) * " + s_text + " + s;",
                 "const bool inside = true;"};
  spec.numel = ctx.size(x, 0, x.size());
  spec.numel_text = ctx.product(x, 0, x.size());
  spec.channels = c.channels;
  spec.channel_stride = c.plane;
  spec.suffix = "_input_channels_last";
  spec.note = "copies " + spec.from + " channels-last for the convolution's vector loads";
  return spec;
}

RearrangeSpec weight_spec(const EmitContext& ctx, ValueId w_id, BufferId to, int64_t numel, int64_t channels,
                          int64_t channel_stride, std::vector<std::string> decode, const std::string& what) {
  RearrangeSpec spec;
  spec.to = to;
  spec.source = ctx.plan().buffer_of(w_id);
  spec.from = ctx.value_buffer(w_id);
  spec.decode = std::move(decode);
  spec.numel = ctx.constant(numel);
  spec.numel_text = num(numel) + "LL";
  spec.channels = channels;
  spec.channel_stride = channel_stride;
  spec.suffix = "_weight_channels_last";
  spec.note = "copies " + spec.from + " " + what + " for the convolution's vector loads";
  return spec;
}

// The GEMM's extents: `rows` x the group's output channels x `depth`, and
// `per_sample` batches per sample (times the batch dim when batched).
GemmMapping conv_extents(const EmitContext& ctx, const ConvShape& c, const Shape& x, int64_t rows, int64_t depth,
                         int64_t per_sample) {
  GemmMapping g;
  g.rows = num(rows) + "LL";
  g.cols = num(c.group_outputs) + "LL";
  g.depth = num(depth) + "LL";
  g.launch_rows = ctx.constant(rows);
  g.launch_cols = ctx.constant(c.group_outputs);
  g.launch_depth = ctx.constant(depth);
  const std::string per_sample_text = num(per_sample) + "LL";
  if (c.batched) {
    g.batches = per_sample == 1 ? ctx.dim(x[0]) : "(" + ctx.dim(x[0]) + " * " + per_sample_text + ")";
    g.launch_batches = ctx.mul(ctx.size(x, 0, 1), ctx.constant(per_sample));
  } else {
    g.batches = per_sample_text;
    g.launch_batches = ctx.constant(per_sample);
  }
  return g;
}

// ---- forward ----

// A forward convolution's input position per dim from the output position
// and tap (statements appended to `load`): the bounds check of the padded
// dims, and each position's term of the element offset (in elements of one
// channel plane).
struct InputPositions {
  std::string outside;
  std::vector<std::string> terms;
};
InputPositions input_positions(const ConvShape& c, std::vector<std::string>& load) {
  InputPositions at;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    const ConvDim& cd = c.dims[d];
    std::string in = name_of(kInNames, c, d), out = name_of(kOutNames, c, d), tap = name_of(kTapNames, c, d);
    std::string position = times(out, cd.stride);
    if (cd.pad != 0)
      position += " - " + num(cd.pad);
    load.push_back("const int " + in + " = " + position + " + " + times(tap, cd.dilation) + ";");
    if (cd.padded) // without padding every tap of a valid output position is inside the input
      at.outside += (at.outside.empty() ? "" : " || ") + in + " < 0 || " + in + " >= " + num(cd.in);
    at.terms.push_back(times(in, cd.in_stride));
  }
  return at;
}

// A gathered from the NC... input (zero padding by bounds checks), B the
// weight [O, C/groups * taps] as [N, K]: k = (input channel, tap).
void gathered_operands(const EmitContext& ctx, const Node& node, const ConvShape& c, GemmMapping& g) {
  ValueId x_id = operand(node, "input"), w_id = operand(node, "weight");
  const std::vector<int64_t> outs = per_dim(c, [](const ConvDim& d) { return d.out; });
  const std::vector<int64_t> kernels = per_dim(c, [](const ConvDim& d) { return d.kernel; });
  const int64_t depth = c.group_inputs * c.taps;
  const std::string n_text = num(c.groups) + "LL";
  g.a_along_k = false; // consecutive output positions read neighbouring input elements
  g.b_along_k = true;
  // A: the first input channel of (sample, conv group), then the gathered element.
  const std::string sample_plane = num(c.channels * c.plane) + "LL";
  if (c.groups == 1)
    g.a_offset = {"return batch * " + sample_plane + ";"};
  else
    g.a_offset = {"return (batch / " + n_text + ") * " + sample_plane + " + (batch % " + n_text + ") * " +
                  num(c.group_inputs * c.plane) + "LL;"};
  std::vector<std::string>& load = g.a_address;
  load.push_back("const int p = static_cast<int>(m);");
  load.push_back(split_index("int", "p", names(kOutNames, c), outs, ""));
  split_depth(c, kernels, c.taps, load);
  const InputPositions at = input_positions(c, load);
  const std::string& outside = at.outside;
  std::string offset;
  for (const std::string& term : at.terms)
    offset += " + " + term;
  if (!outside.empty())
    load.push_back("if (" + outside + ") return nullptr; // zero padding");
  std::string channel_offset =
      c.group_inputs * c.plane > kIntMax ? "static_cast<long long>(c) * " + num(c.plane) + "LL" : "c * " + num(c.plane);
  load.push_back("return " + ctx.value_buffer(x_id) + " + a_base + " + channel_offset + offset + ";");

  // Without padding the address separates into the output position's corner
  // (per row) and the tap's offset from it (per k, tabled once per block).
  bool padded = false;
  for (const ConvDim& cd : c.dims)
    padded = padded || cd.padded;
  if (!padded && depth <= kMaxDepthTable && c.group_inputs * c.plane <= kIntMax) {
    g.a_depth_table = depth;
    std::string corner;
    for (size_t d = 0; d < c.dims.size(); ++d)
      corner += " + " + times(name_of(kOutNames, c, d), c.dims[d].stride * c.dims[d].in_stride);
    g.a_row = {"const int p = static_cast<int>(m);", split_index("int", "p", names(kOutNames, c), outs, ""),
               "return " + ctx.value_buffer(x_id) + " + a_base" + corner + ";"};
    std::vector<std::string>& table = g.a_depth_offset;
    split_depth(c, kernels, c.taps, table);
    std::string taps;
    for (size_t d = 0; d < c.dims.size(); ++d)
      taps += " + " + times(times(name_of(kTapNames, c, d), c.dims[d].dilation), c.dims[d].in_stride);
    table.push_back("return c * " + num(c.plane) + taps + ";");
  }

  if (c.groups == 1)
    g.b_offset = {"return 0;"};
  else
    g.b_offset = {"return (batch % " + n_text + ") * " + num(c.group_outputs * depth) + "LL;"};
  g.b_address = {"return " + (ctx.value_buffer(w_id) + " + b_base + n * " + g.depth + " + k") + ";"};
}

// Channels-last copies of the input ([N, spatial..., C]) and weight ([O,
// taps..., C/groups]), KernelStep::a_layout: k = (tap, input channel), so
// four consecutive k are four channels of one input element, a 16-byte
// vector on both operands (the planner asks for C/groups % 4 == 0). A's rows
// are gathered, so each copy computes its own address (a_affine = false).
void channels_last_operands(const EmitContext& ctx, const Node& node, const ConvShape& c, GemmMapping& g) {
  const std::string input = ctx.buffer(ctx.step().a_layout), weight = ctx.buffer(ctx.step().b_layout);
  if (!ctx.plan().buffer(ctx.step().a_layout).channels_last) // else its producer wrote it so
    g.operand_copies.push_back(input_copy(ctx, operand(node, "input"), c, ctx.step().a_layout));
  // [O, C/g, taps...] -> [O, taps..., C/g]
  const std::string t_text = num(c.taps) + "LL", cg_text = num(c.group_inputs) + "LL";
  g.operand_copies.push_back(weight_spec(ctx, operand(node, "weight"), ctx.step().b_layout,
                                         c.out_channels * c.group_inputs * c.taps, c.group_inputs, c.taps,
                                         {"const long long o = index / (" + t_text + " * " + cg_text +
                                              "), rest = index % (" + t_text + " * " + cg_text + ");",
                                          "const long long t = rest / " + cg_text + ", c = rest % " + cg_text + ";",
                                          "const long long from = (o * " + cg_text + " + c) * " + t_text + " + t;",
                                          "const bool inside = true;"},
                                         "channels-last"));
  const std::vector<int64_t> outs = per_dim(c, [](const ConvDim& d) { return d.out; });
  const std::vector<int64_t> kernels = per_dim(c, [](const ConvDim& d) { return d.kernel; });
  const int64_t depth = c.group_inputs * c.taps;
  const std::string n_text = num(c.groups) + "LL";
  g.a_along_k = g.b_along_k = true;
  g.a_vector = g.b_vector = true;
  g.a_affine = false;
  const std::string sample_size = num(c.channels * c.plane) + "LL";
  if (c.groups == 1)
    g.a_offset = {"return batch * " + sample_size + ";"};
  else
    g.a_offset = {"return (batch / " + n_text + ") * " + sample_size + " + (batch % " + n_text + ") * " +
                  num(c.group_inputs) + "LL;"};
  std::vector<std::string>& load = g.a_address;
  load.push_back("const int p = static_cast<int>(m);");
  load.push_back(split_index("int", "p", names(kOutNames, c), outs, ""));
  load.push_back("const int kq = static_cast<int>(k);");
  load.push_back("const int c = kq % " + num(c.group_inputs) + ", tap = kq / " + num(c.group_inputs) + ";");
  std::vector<std::string> tap_names = names(kTapNames, c);
  if (c.taps == 1) {
    std::string zero;
    for (const std::string& t : tap_names)
      zero += std::string(zero.empty() ? "" : ", ") + t + " = 0";
    load.push_back("const int " + zero + ";");
    load.push_back("(void)tap;");
  } else {
    load.push_back(split_index("int", "tap", tap_names, kernels, ""));
  }
  const InputPositions at = input_positions(c, load);
  const std::string& outside = at.outside;
  std::string offset;
  for (const std::string& term : at.terms)
    offset += (offset.empty() ? "" : " + ") + term;
  if (!outside.empty())
    load.push_back("if (" + outside + ") return nullptr; // zero padding");
  load.push_back("return " + input + " + a_base + static_cast<long long>(" + offset + ") * " + num(c.channels) +
                 "LL + c;");
  if (c.groups == 1)
    g.b_offset = {"return 0;"};
  else
    g.b_offset = {"return (batch % " + n_text + ") * " + num(c.group_outputs * depth) + "LL;"};
  g.b_address = {"return " + weight + " + b_base + n * " + num(depth) + "LL + k;"};
}

GemmMapping map_forward(const EmitContext& ctx, const Node& node, const ConvShape& c) {
  ValueId x_id = operand(node, "input");
  const std::vector<int64_t> outs = per_dim(c, [](const ConvDim& d) { return d.out; });
  int64_t positions = 1;
  for (int64_t o : outs)
    positions *= o;
  const std::string n_text = num(c.groups) + "LL";
  GemmMapping g = conv_extents(ctx, c, shape_of(ctx, x_id), positions, c.group_inputs * c.taps, c.groups);
  g.out_along_m = true; // NC...: an output channel's positions are adjacent

  const KernelStep& step = ctx.step();
  if (step.a_layout != kNoId && step.b_layout != kNoId)
    channels_last_operands(ctx, node, c, g);
  else
    gathered_operands(ctx, node, c, g);

  std::string sample = c.groups == 1 ? "batch" : "batch / " + n_text;
  std::string channel = c.groups == 1 ? "n" : "(batch % " + n_text + ") * " + num(c.group_outputs) + "LL + n";
  if (c.batched)
    g.coord_lines.push_back("const long long sample = " + sample + ";");
  g.coord_lines.push_back("const long long o = " + channel + ";");
  g.coord_lines.push_back(split_index("long long", "m", names(kOutNames, c), outs, "LL"));
  if (c.batched)
    g.coords.push_back("sample");
  g.coords.push_back("o");
  for (const std::string& name : names(kOutNames, c))
    g.coords.push_back(name);
  if (ValueId bias = operand(node, "bias"); bias != kNoId)
    g.bias = ctx.value_buffer(bias) + "[o]";
  return g;
}

// ---- transposed ----

// Per dim of a transposed convolution: output phase r (o = r + j * stride)
// takes taps t = first(r) + i * step, reading input j + shift(r) - i * skip.
struct PhaseDim {
  int64_t step = 1, skip = 1, taps = 1, rows = 1; // rows: positions j of the largest phase
  std::vector<int64_t> first, shift;              // per phase; first < 0: no tap
};

PhaseDim phase_dim(const ConvDim& d) {
  PhaseDim p;
  const int64_t common = std::gcd(d.stride, d.dilation);
  p.step = d.stride / common;
  p.skip = d.dilation / common;
  p.taps = (d.kernel + p.step - 1) / p.step;
  p.rows = (d.out + d.stride - 1) / d.stride;
  for (int64_t r = 0; r < d.stride; ++r) {
    const int64_t want = (r + d.pad) % d.stride; // t * dilation == want (mod stride)
    int64_t first = -1;
    for (int64_t t = 0; t < p.step && first < 0; ++t)
      if (t * d.dilation % d.stride == want)
        first = t;
    p.first.push_back(first);
    p.shift.push_back(first < 0 ? 0 : (r + d.pad - first * d.dilation) / d.stride);
  }
  return p;
}

// `values[r]` for the phase variable `r` as a chain of selects.
std::string select(const std::string& r, const std::vector<int64_t>& values) {
  std::string text = num(values.back());
  for (size_t i = values.size() - 1; i-- > 0;)
    text = "(" + r + " == " + num(static_cast<int64_t>(i)) + " ? " + num(values[i]) + " : " + text + ")";
  return text;
}

// "(void)rd; ..." for every phase variable.
std::string void_phases(const ConvShape& c) {
  std::string line;
  for (const std::string& r : names(kPhaseNames, c))
    line += std::string(line.empty() ? "" : " ") + "(void)" + r + ";";
  return line;
}

// Statements decoding the opaque per-batch value (the batch itself on this
// mapping) into "sg" (sample * groups + conv group) and the phase per dim.
std::vector<std::string> split_phase(const ConvShape& c, const std::string& batch, int64_t phases) {
  std::vector<std::string> lines;
  lines.push_back("const long long sg = " + batch + " / " + num(phases) + "LL;");
  lines.push_back("const int phase = static_cast<int>(" + batch + " % " + num(phases) + "LL);");
  lines.push_back(
      split_index("int", "phase", names(kPhaseNames, c), per_dim(c, [](const ConvDim& d) { return d.stride; }), ""));
  lines.push_back(void_phases(c)); // a dim of stride 1 has one phase, which no select reads
  return lines;
}

GemmMapping map_transposed(const EmitContext& ctx, const Node& node, const ConvShape& c) {
  ValueId x_id = operand(node, "input"), w_id = operand(node, "weight");
  std::vector<PhaseDim> pd;
  int64_t phases = 1, rows = 1, phase_taps = 1;
  for (const ConvDim& d : c.dims) {
    pd.push_back(phase_dim(d));
    phases *= d.stride;
    rows *= pd.back().rows;
    phase_taps *= pd.back().taps;
  }
  const int64_t depth = c.group_inputs * phase_taps;
  GemmMapping g = conv_extents(ctx, c, shape_of(ctx, x_id), rows, depth, c.groups * phases);
  g.a_along_k = false;
  g.b_along_k = true;
  g.out_along_m = true;
  // The operands' addresses depend on the phase: the per-batch value the
  // template passes back to a_address/b_address is the batch itself.
  g.a_offset = g.b_offset = {"return batch;"};

  const std::vector<int64_t> sub_rows = [&] {
    std::vector<int64_t> v;
    for (const PhaseDim& p : pd)
      v.push_back(p.rows);
    return v;
  }();
  const std::vector<int64_t> tap_extents = [&] {
    std::vector<int64_t> v;
    for (const PhaseDim& p : pd)
      v.push_back(p.taps);
    return v;
  }();

  const bool channels_last = ctx.step().a_layout != kNoId && ctx.step().b_layout != kNoId;
  // A: input element (j + shift - i * skip) of channel c of (sample, group);
  // channels-last, k = (tap, c) and four k are a vector of channels.
  std::vector<std::string>& load = g.a_address;
  load = split_phase(c, "a_base", phases);
  load.push_back("const int p = static_cast<int>(m);");
  load.push_back(split_index("int", "p", names(kSubNames, c), sub_rows, ""));
  if (channels_last) {
    load.push_back("const int kq = static_cast<int>(k);");
    load.push_back("const int c = kq % " + num(c.group_inputs) + ", tap = kq / " + num(c.group_inputs) + ";");
    load.push_back(split_index("int", "tap", names(kTapNames, c), tap_extents, ""));
  } else {
    split_depth(c, tap_extents, phase_taps, load);
  }
  std::string outside, offset;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    const ConvDim& cd = c.dims[d];
    const PhaseDim& p = pd[d];
    std::string r = name_of(kPhaseNames, c, d), in = name_of(kInNames, c, d), tap = name_of(kTapNames, c, d);
    std::string first = select(r, p.first), shift = select(r, p.shift);
    load.push_back("const int " + in + " = " + name_of(kSubNames, c, d) + " + " + shift + " - " + times(tap, p.skip) +
                   ";");
    outside += (outside.empty() ? "" : " || ") + first + " < 0 || " + first + " + " + times(tap, p.step) +
               " >= " + num(cd.kernel) + " || " + in + " < 0 || " + in + " >= " + num(cd.in);
    offset += (offset.empty() ? "" : " + ") + times(in, cd.in_stride);
  }
  load.push_back("if (" + outside + ") return nullptr; // no such tap in this phase, or zero padding");
  if (channels_last) {
    g.a_along_k = g.b_along_k = true;
    g.a_vector = g.b_vector = true;
    g.a_affine = false;
    const std::string groups = num(c.groups) + "LL";
    load.push_back("return " + ctx.buffer(ctx.step().a_layout) + " + (sg / " + groups + ") * " +
                   num(c.plane * c.channels) + "LL + (sg % " + groups + ") * " + num(c.group_inputs) +
                   "LL + static_cast<long long>(" + offset + ") * " + num(c.channels) + "LL + c;");
    if (!ctx.plan().buffer(ctx.step().a_layout).channels_last)
      g.operand_copies.push_back(input_copy(ctx, x_id, c, ctx.step().a_layout));
    // B: the weight rearranged per (conv group, phase) into dense [O/g, K]
    // slices with zeros for the taps a phase lacks.
    const int64_t slice = c.group_outputs * depth;
    g.b_offset = {"return (batch % " + num(c.groups * phases) + "LL) * " + num(slice) + "LL;"};
    g.b_address = {"return " + ctx.buffer(ctx.step().b_layout) + " + b_base + n * " + num(depth) + "LL + k;"};
    std::vector<std::string> decode = {
        "const long long gp = index / " + num(slice) + "LL, rest = index % " + num(slice) + "LL;",
        "const long long n = rest / " + num(depth) + "LL, kq = rest % " + num(depth) + "LL;",
        "const long long group = gp / " + num(phases) + "LL;",
        "const int phase = static_cast<int>(gp % " + num(phases) + "LL);",
        split_index("int", "phase", names(kPhaseNames, c), per_dim(c, [](const ConvDim& d) { return d.stride; }), ""),
        void_phases(c),
        "const long long c = kq % " + num(c.group_inputs) + "LL;",
        "const int tap = static_cast<int>(kq / " + num(c.group_inputs) + "LL);",
        split_index("int", "tap", names(kTapNames, c), tap_extents, "")};
    std::string valid, tap_offset;
    for (size_t d = 0; d < c.dims.size(); ++d) {
      const PhaseDim& p = pd[d];
      std::string at = "t" + name_of(kTapNames, c, d);
      decode.push_back("const int " + at + " = " + select(name_of(kPhaseNames, c, d), p.first) + " + " +
                       times(name_of(kTapNames, c, d), p.step) + ";");
      valid += (valid.empty() ? "" : " && ") + at + " >= 0 && " + at + " < " + num(c.dims[d].kernel);
      tap_offset += " + " + times(at, c.dims[d].tap_stride);
    }
    decode.push_back("const bool inside = " + valid + ";");
    decode.push_back("const long long from = inside ? ((group * " + num(c.group_inputs) + "LL + c) * " +
                     num(c.group_outputs) + "LL + n) * " + num(c.taps) + "LL" + tap_offset + " : 0;");
    g.operand_copies.push_back(weight_spec(ctx, w_id, ctx.step().b_layout, c.groups * phases * slice, c.group_inputs,
                                           c.group_outputs * c.taps, decode, "per output phase, channels-last"));
  } else {
    load.push_back("return " + ctx.value_buffer(x_id) + " + sg * " + num(c.group_inputs * c.plane) + "LL + " +
                   "static_cast<long long>(c) * " + num(c.plane) + "LL + " + offset + ";");
    // B: weight [C_in, C_out / groups, k...] at (group's channel c, n, the
    // phase's tap); a masked tap reads tap 0 (A's zero cancels it).
    std::vector<std::string>& weight = g.b_address;
    weight = split_phase(c, "b_base", phases);
    weight.push_back("const long long group = sg % " + num(c.groups) + "LL;");
    split_depth(c, tap_extents, phase_taps, weight);
    std::string tap_offset;
    for (size_t d = 0; d < c.dims.size(); ++d) {
      const PhaseDim& p = pd[d];
      std::string r = name_of(kPhaseNames, c, d), tap = name_of(kTapNames, c, d);
      std::string at = "t" + name_of(kTapNames, c, d);
      weight.push_back("int " + at + " = " + select(r, p.first) + " + " + times(tap, p.step) + ";");
      weight.push_back("if (" + at + " < 0 || " + at + " >= " + num(c.dims[d].kernel) + ") " + at + " = 0;");
      tap_offset += " + " + times(at, c.dims[d].tap_stride);
    }
    weight.push_back("return " + ctx.value_buffer(w_id) + " + ((group * " + num(c.group_inputs) + "LL + c) * " +
                     num(c.group_outputs) + "LL + n) * " + num(c.taps) + "LL" + tap_offset + ";");
  }

  // Output coordinates; rows past a phase's own sub-grid store nothing.
  std::vector<std::string>& lines = g.coord_lines;
  lines = split_phase(c, "batch", phases);
  if (!c.batched && c.groups == 1)
    lines.push_back("(void)sg;");
  if (c.batched)
    lines.push_back("const long long sample = sg / " + num(c.groups) + "LL;");
  lines.push_back(c.groups == 1
                      ? "const long long o = n;"
                      : "const long long o = (sg % " + num(c.groups) + "LL) * " + num(c.group_outputs) + "LL + n;");
  lines.push_back(split_index("long long", "m", names(kSubNames, c), sub_rows, "LL"));
  std::string beyond;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    std::string out = name_of(kOutNames, c, d);
    lines.push_back("const long long " + out + " = " + name_of(kPhaseNames, c, d) + " + " +
                    times(name_of(kSubNames, c, d), c.dims[d].stride) + ";");
    beyond += (beyond.empty() ? "" : " || ") + out + " >= " + num(c.dims[d].out) + "LL";
  }
  lines.push_back("if (" + beyond + ") return 0.0f; // past this phase's outputs");
  if (c.batched)
    g.coords.push_back("sample");
  g.coords.push_back("o");
  for (const std::string& name : names(kOutNames, c))
    g.coords.push_back(name);
  if (ValueId bias = operand(node, "bias"); bias != kNoId)
    g.bias = ctx.value_buffer(bias) + "[o]";
  return g;
}

} // namespace

Result<GemmMapping> map_convolution(const EmitContext& ctx, const Node& node) {
  Result<ConvShape> shape = conv_shape(ctx, node);
  if (!shape)
    return Error{shape.error()};
  const ConvShape& c = shape.value();
  int64_t positions = 1;
  for (const ConvDim& d : c.dims)
    positions *= d.out;
  if (positions > kIntMax || c.group_inputs * c.taps > kIntMax || c.plane > kIntMax)
    return Error{node.op + " output positions, K or input plane exceed 2^31 - 1"};
  return c.transposed ? map_transposed(ctx, node, c) : map_forward(ctx, node, c);
}

} // namespace fusegen::codegen
