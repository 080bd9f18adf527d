"""The KernelBench level-2 convolution and pooling chains: for each problem,
the fusegen spec body, where each spec argument lives in the problem's Model,
and the small shapes of its twin. scripts/kernelbench_conv.py builds the Model
from bench/kernelbench_problems/level2/ and writes the specs from this table.

Each chain is chain(number, small=..., args=..., body=..., state=..., note=...):
- small: module-level constants of the problem replaced for the small twin
  (specs/kernelbench/conv/small/); constants computed from them (bias_shape =
  (out_channels, 1, 1), say) follow, since the problem's statements are run in
  order with these values put back after each one.
- args: {spec name: Model attribute}, in declaration order (the spec's inputs
  come first: the forward arguments, named as in Model.forward). A tuple
  (attribute, shape) declares the argument with another shape of the same
  elements (a view of the parameter, e.g. a [C] parameter that the forward
  views as [1, C, 1, 1, 1]).
- state: spec names updated in place (train-mode batch norm running stats).
- body: the fusion's statements. Fields in braces are filled from the built
  Model (`m`, e.g. {m.group_norm.num_groups}) and the problem's constants
  ({scaling_factor}); `:f` prints a number as a float literal, and `:args` the
  non-default arguments of a convolution or pool module (", stride=(2, 2),
  padding=(1, 1)"). Literal braces are doubled.
- note: how the spec departs from the problem's code in form, where it does.

Problem 85 is a seed chain (specs/kernelbench/85_*.fg, scripts/kernelbench_models.py).
"""

CHAINS = {}


def chain(number, small, args, body, state=(), note=None):
    CHAINS[str(number)] = dict(small=small, args=args, body=body.strip("\n"), state=list(state), note=note)


CONV = {"w": "conv.weight", "b": "conv.bias"}
CONVT = {"w": "conv_transpose.weight", "b": "conv_transpose.bias"}
S2 = dict(batch_size=2, in_channels=3, out_channels=8, height=10, width=10)      # Conv2d chains
S3 = dict(batch_size=2, in_channels=3, out_channels=8, depth=6, height=8, width=8)  # Conv3d chains
T2 = dict(batch_size=2, in_channels=4, out_channels=8, height=6, width=6)          # ConvTranspose2d chains
T3 = dict(batch_size=2, in_channels=4, out_channels=8, depth=4, height=6, width=6)  # ConvTranspose3d chains
DHW3 = dict(batch_size=2, in_channels=3, out_channels=8, D=6, H=8, W=8)
TDHW3 = dict(batch_size=2, in_channels=4, out_channels=8, D=4, H=6, W=6)


def bn(module, out="h"):
    return ("%s = batch_norm(h, running_mean, running_var, weight=bn_w, bias=bn_b, training=true,\n"
            "%s momentum={m.%s.momentum:f}, eps={m.%s.eps:f})" % (out, " " * (len(out) + 14), module, module))


def bn_args(module):
    return {"bn_w": module + ".weight", "bn_b": module + ".bias", "running_mean": module + ".running_mean",
            "running_var": module + ".running_var"}


BN_STATE = ("running_mean", "running_var")


def gn(module, x="h"):
    return ("group_norm(%s, num_groups={m.%s.num_groups}, weight=gn_w, bias=gn_b, eps={m.%s.eps:f})"
            % (x, module, module))


def gn_args(module):
    return {"gn_w": module + ".weight", "gn_b": module + ".bias"}


chain(1, S2, dict(CONV, bias="bias"), """
h = conv2d(x, w, b{m.conv:args})
h = relu(h)
output y = h + bias
""")

chain(2, T2, dict(CONVT, bias="bias"), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = h + bias
h = clamp(h, min=0.0, max=1.0)
h = h * {scaling_factor:f}
h = clamp(h, min=0.0, max=1.0)
output y = h / {scaling_factor:f}
""")

# LayerNorm over the last dim (W of the output, which equals out_channels).
chain(3, dict(batch_size=2, in_channels=4, out_channels=8, depth=4, height=6, width=4),
      dict(CONVT, sum_weight="sum_weight", ln_w="norm.weight", ln_b="norm.bias"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = h + sum_weight
h = layer_norm(h, normalized_shape={m.norm.normalized_shape}, weight=ln_w, bias=ln_b, eps={m.norm.eps:f})
h = avg_pool3d(h{m.avg_pool:args})
output y = gelu(h)
""")

chain(4, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = mish(h)
output y = mish(h)
""")

chain(5, T2, dict(CONVT, bias="bias"), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = h - bias
output y = tanh(h)
""")

chain(6, dict(S3, depth=10, height=12, width=12), CONV, """
h = conv3d(x, w, b{m.conv:args})
h = softmax(h, dim=1)
h = max_pool3d(h{m.pool1:args})
output y = max_pool3d(h{m.pool2:args})
""")

chain(7, S3, dict(CONV, bias="bias"), """
h = conv3d(x, w, b{m.conv:args})
h = relu(h)
h = leaky_relu(h, negative_slope=0.01)
h = gelu(h)
h = sigmoid(h)
output y = h + bias
""")

chain(8, S3, dict(CONV, bias="bias"), """
h = conv3d(x, w, b{m.conv:args})
h = h / {divisor:f}
h = max_pool3d(h{m.max_pool:args})
h = adaptive_avg_pool3d(h, output_size={m.global_avg_pool.output_size})
h = h + bias
output y = sum(h, dim={sum_dim})
""")

chain(10, dict(T2, height=8, width=8), CONVT, """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = max_pool2d(h{m.maxpool:args})
h = hardtanh(h, min_val={m.hardtanh.min_val:f}, max_val={m.hardtanh.max_val:f})
h = mean(h, dim=(2, 3), keepdim=true)
output y = tanh(h)
""")

chain(11, dict(T2, height=8, width=8, groups=4, num_groups=4),
      dict(CONVT, **bn_args("batch_norm"), **gn_args("group_norm")), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
""" + bn("batch_norm") + """
h = tanh(h)
h = max_pool2d(h{m.max_pool:args})
output y = """ + gn("group_norm"), state=BN_STATE)

chain(13, T3, dict(CONVT, bias="bias"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = mean(h, dim=2, keepdim=true)
h = h + bias
h = softmax(h, dim=1)
h = tanh(h)
output y = h * {scaling_factor:f}
""")

chain(15, T3, dict(CONVT, **bn_args("batch_norm")), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
""" + bn("batch_norm") + """
output y = h - mean(h, dim=(2, 3, 4), keepdim=true)
""", state=BN_STATE)

chain(16, T2, CONVT, """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = mish(h)
h = h + {add_value:f}
h = hardtanh(h, min_val=-1.0, max_val=1.0)
output y = h * {scale:f}
""")

chain(17, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = instance_norm(h, eps={m.instance_norm.eps:f})
output y = h / {divide_by:f}
""")

chain(19, dict(T2, height=8, width=8, groups=4, num_groups=4), dict(CONVT, **gn_args("group_norm")), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = gelu(h)
output y = """ + gn("group_norm"))

# original_x = x.clone().detach() is the conv output itself.
chain(20, T3, dict(CONVT, bias="bias"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
o = h
h = h + bias
h = h + o
h = h * o
output y = h + o
""")

chain(21, dict(S2, num_groups=4), dict(CONV, bias="bias", scale="scale", **gn_args("group_norm")), """
h = conv2d(x, w, b{m.conv:args})
h = h + bias
h = h * scale
h = sigmoid(h)
output y = """ + gn("group_norm"))

chain(23, dict(DHW3, num_groups=4), dict(CONV, **gn_args("group_norm")), """
h = conv3d(x, w, b{m.conv:args})
h = """ + gn("group_norm") + """
output y = mean(h, dim=(1, 2, 3, 4))
""")

chain(24, DHW3, CONV, """
h = conv3d(x, w, b{m.conv:args})
h = min(h, dim={dim})
output y = softmax(h, dim=1)
""")

chain(25, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = min(h, dim=1, keepdim=true)
h = tanh(h)
output y = tanh(h)
""")

# self.bias is a parameter the forward does not use.
chain(26, dict(TDHW3, D=4, H=4, W=4), CONVT, """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = h + add_input
output y = h * hardswish(h)
""")

chain(27, dict(S3, depth=6, height=8, width=8), dict(CONV, **gn_args("group_norm")), """
h = conv3d(x, w, b{m.conv:args})
h = hardswish(h)
h = """ + gn("group_norm") + """
output y = mean(h, dim=(2, 3, 4))
""")

chain(31, S2, dict(CONV, bias="bias"), """
h = conv2d(x, w, b{m.conv:args})
h = minimum(h, {constant_value:f})
h = h + bias
output y = h * {scaling_factor:f}
""", note="torch.min(x, torch.tensor(c)) is minimum(x, c)")

chain(32, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = h * {scale_factor:f}
output y = min(h, dim=1, keepdim=true)
""")

# LayerNorm(out_channels) normalizes the last dim (W of the output, which equals out_channels).
chain(34, dict(TDHW3, D=3, H=5, W=4), dict(CONVT, ln_w="layer_norm.weight", ln_b="layer_norm.bias"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = layer_norm(h, normalized_shape={m.layer_norm.normalized_shape}, weight=ln_w, bias=ln_b,
               eps={m.layer_norm.eps:f})
h = gelu(h)
output y = h * {scaling_factor:f}
""")

chain(35, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = h - {subtract_value:f}
h = hardswish(h)
h = max_pool2d(h{m.pool:args})
output y = mish(h)
""")

chain(36, T2, dict(CONVT, bias="bias"), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = min(h, dim=1, keepdim=true)
h = sum(h, dim=2, keepdim=true)
h = gelu(h)
output y = h + bias
""")

chain(38, dict(T3, depth=6, height=8, width=8), dict(CONVT, scale="scale"), """
h = avg_pool3d(x{m.avg_pool:args})
h = conv_transpose3d(h, w, b{m.conv_transpose:args})
h = clamp(h, min={clamp_min:f}, max={clamp_max:f})
peak = amax(h, dim=(2, 3, 4), keepdim=true)
e = exp(h - peak)
h = e / sum(e, dim=(2, 3, 4), keepdim=true)
output y = h * scale
""", note="the softmax over x.view(b, c, -1) (dim 2) is written out over dims (2, 3, 4) as "
          "exp(x - amax) / sum(exp(x - amax)), torch's own algorithm: fusegen has no view/reshape and its "
          "softmax takes one dim")

chain(42, dict(T2, height=8, width=8), dict(CONVT, bias="bias"), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = mean(h, dim=(2, 3), keepdim=true)
h = h + bias
h = logsumexp(h, dim=1, keepdim=true)
h = sum(h, dim=(2, 3))
output y = h * 10.0
""")

chain(43, dict(S3, in_channels=4), CONV, """
h = conv3d(x, w, b{m.conv:args})
h = max_pool3d(h{m.max_pool:args})
h = logsumexp(h, dim=1, keepdim=true)
output y = relu(h)
""")

chain(44, T2, CONVT, """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = h * {multiplier:f}
h = mean(h, dim=(2, 3), keepdim=true)
output y = mean(h, dim=(2, 3), keepdim=true)
""")

chain(46, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = h - {subtract1_value:f}
h = tanh(h)
h = h - {subtract2_value:f}
output y = avg_pool2d(h{m.avgpool:args})
""")

chain(47, DHW3, CONV, """
h = conv3d(x, w, b{m.conv:args})
h = mish(h)
output y = tanh(h)
""")

chain(48, S3, dict(CONV, scaling_factor="scaling_factor", bias="bias"), """
h = conv3d(x, w, b{m.conv:args})
h = h * scaling_factor
h = tanh(h)
h = h * bias
output y = sigmoid(h)
""")

chain(49, TDHW3, CONVT, """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = softmax(h, dim=1)
output y = sigmoid(h)
""")

chain(50, dict(T3, in_channels=3), dict(CONVT, scale1="scale1", bias="bias", scale2="scale2"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = h * scale1
h = avg_pool3d(h{m.avg_pool:args})
h = h + bias
output y = h * scale2
""")

chain(52, S2, dict(CONV, **bn_args("bn")), """
h = conv2d(x, w, b{m.conv:args})
h = tanh(softplus(h)) * h
""" + bn("bn", out="output y"), state=BN_STATE)

chain(54, S2, dict(CONV, multiplier="multiplier"), """
h = conv2d(x, w, b{m.conv:args})
h = h * multiplier
h = leaky_relu(h, negative_slope={m.leaky_relu.negative_slope:f})
output y = gelu(h)
""")

chain(55, dict(batch_size=2, in_features=64, out_features=32), {"w": "matmul.weight", "b": "matmul.bias"}, """
h = linear(x, w, b)
h = max_pool1d(h{m.max_pool:args})
h = sum(h, dim=1)
output y = h * {scale_factor:f}
""", note="max_pool1d(x.unsqueeze(1)).squeeze(1) is max_pool1d on the [N, F] tensor, which a 1-d pool takes "
          "as an unbatched [C, L] input: the same windows over the last dim")

chain(57, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = relu(h)
output y = h * clamp((h + 3.0) / 6.0, min=0.0, max=1.0)
""")

chain(58, T3, dict(CONVT, bias="bias"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = logsumexp(h, dim=1, keepdim=true)
h = h * sigmoid(h + 3.0) / 6.0
h = h - bias
output y = clamp(h, min=-1.0, max=1.0)
""")

chain(60, dict(T3, in_channels=3), dict(CONVT, **gn_args("group_norm")), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = sigmoid(h) * h
h = """ + gn("group_norm") + """
output y = hardswish(h)
""")

chain(61, dict(TDHW3, groups=4), {"w": "conv_transpose.weight", **gn_args("group_norm")}, """
h = conv_transpose3d(x, w, None{m.conv_transpose:args})
h = relu(h)
output y = """ + gn("group_norm"))

chain(65, dict(S2, height=12, width=12), CONV, """
h = conv2d(x, w, b{m.conv:args})
h = avg_pool2d(h{m.avg_pool:args})
h = sigmoid(h)
output y = sum(h, dim=(1, 2, 3))
""")

chain(67, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = gelu(h)
h = adaptive_avg_pool2d(h, output_size=1)
output y = sum(h, dim=(2, 3))
""", note=".squeeze(-1).squeeze(-1) of the [N, C, 1, 1] pool is a sum over its two size-1 dims "
          "(exact): fusegen has no squeeze/reshape")

chain(69, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = hardswish(h)
output y = relu(h)
""")

chain(71, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = h / {divisor:f}
output y = leaky_relu(h, negative_slope=0.01)
""")

chain(72, dict(T3, in_channels=3), dict(CONVT, **bn_args("batch_norm")), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
""" + bn("batch_norm") + """
h = avg_pool3d(h{m.avg_pool1:args})
output y = avg_pool3d(h{m.avg_pool2:args})
""", state=BN_STATE)

chain(73, S2, dict(CONV, **bn_args("bn")), """
h = conv2d(x, w, b{m.conv:args})
""" + bn("bn") + """
output y = h * {scaling_factor:f}
""", state=BN_STATE)

chain(74, T3, dict(CONVT, multiplier="multiplier"), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = leaky_relu(h, negative_slope={m.leaky_relu.negative_slope:f})
h = h * multiplier
h = leaky_relu(h, negative_slope={m.leaky_relu.negative_slope:f})
output y = max_pool3d(h{m.max_pool:args})
""")

chain(77, dict(T3, depth=3, height=5, width=5), dict(CONVT, **bn_args("batch_norm")), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = h * {scale_factor:f}
""" + bn("batch_norm") + """
output y = adaptive_avg_pool3d(h, output_size={m.global_avg_pool.output_size})
""", state=BN_STATE)

chain(78, dict(T3, depth=6, height=8, width=8), CONVT, """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = max_pool3d(h{m.max_pool1:args})
h = max_pool3d(h{m.max_pool2:args})
output y = sum(h, dim=1, keepdim=true)
""")

chain(79, S3, dict(CONV, multiplier="multiplier"), """
h = conv3d(x, w, b{m.conv:args})
h = h * multiplier
h = instance_norm(h, eps={m.instance_norm.eps:f})
h = clamp(h, min={clamp_min:f}, max={clamp_max:f})
h = h * multiplier
output y = max(h, dim=1)
""")

chain(82, S2, dict(CONV, bias="bias"), """
h = conv2d(x, w, b{m.conv:args})
h = tanh(h)
h = h * {scaling_factor:f}
h = h + bias
output y = max_pool2d(h{m.max_pool:args})
""")

chain(83, dict(S3, groups=4), dict(CONV, **gn_args("norm")), """
h = conv3d(x, w, b{m.conv:args})
h = """ + gn("norm") + """
h = minimum(h, {min_value:f})
h = clamp(h, min={min_value:f}, max={max_value:f})
output y = dropout(h, p={dropout_p:f})
""", note="nn.Dropout runs in train mode in KernelBench, which fusegen's dropout does not support; its input "
          "here is identically 0 (min with 0.0, then clamp to [0, 1]) and train-mode dropout of 0 is 0, so "
          "the eval-mode dropout gives the same output; torch.min(x, torch.tensor(c)) is minimum(x, c)")

chain(87, S2, CONV, """
h = conv2d(x, w, b{m.conv:args})
h = h - {subtract_value_1:f}
h = h - {subtract_value_2:f}
output y = mish(h)
""")

chain(89, dict(T3, in_channels=3), dict(CONVT, subtract=("subtract", (1, -1, 1, 1, 1))), """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = max_pool3d(h{m.max_pool:args})
h = softmax(h, dim=1)
h = h - subtract
h = sigmoid(h) * h
output y = max(h, dim=1)
""", note="the [C] parameter subtract is declared as its view(1, -1, 1, 1, 1)")

chain(90, S3, dict(CONV, sum_tensor="sum_tensor"), """
h = conv3d(x, w, b{m.conv:args})
h = leaky_relu(h, negative_slope=0.2)
h = h + sum_tensor
h = clamp(h, min=-1.0, max=1.0)
output y = gelu(h)
""")

chain(91, T2, dict(CONVT, bias="bias"), """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = softmax(h, dim=1)
h = h + bias
h = h * {scaling_factor:f}
output y = sigmoid(h)
""")

chain(92, dict(S2, groups=4), dict(CONV, **gn_args("group_norm")), """
c = conv2d(x, w, b{m.conv:args})
h = """ + gn("group_norm", x="c") + """
h = tanh(h)
h = hardswish(h)
h = c + h
output y = logsumexp(h, dim=1, keepdim=true)
""")

chain(93, T2, CONVT, """
h = conv_transpose2d(x, w, b{m.conv_transpose:args})
h = h + {add_value:f}
h = minimum(h, 0.0)
h = gelu(h)
output y = h * {multiply_value:f}
""", note="torch.min(x, torch.tensor(0.0)) is minimum(x, 0.0)")

chain(96, dict(T3, in_channels=3), CONVT, """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = h * {scale:f}
h = max_pool3d(h{m.maxpool:args})
h = adaptive_avg_pool3d(h, output_size={m.global_avg_pool.output_size})
output y = clamp(h, min={m.clamp_min:f}, max={m.clamp_max:f})
""")

chain(98, dict(batch_size=2, in_features=64, out_features=64), {"w": "matmul.weight", "b": "matmul.bias"}, """
h = linear(x, w, b)
h = avg_pool1d(h{m.avg_pool:args})
h = gelu(h)
h = h * {scale_factor:f}
output y = max(h, dim=1)
""", note="avg_pool1d(x.unsqueeze(1)).squeeze(1) is avg_pool1d on the [N, F] tensor, which a 1-d pool takes "
          "as an unbatched [C, L] input: the same windows over the last dim")

chain(100, T3, CONVT, """
h = conv_transpose3d(x, w, b{m.conv_transpose:args})
h = clamp(h, min={min_value:f})
output y = h / {divisor:f}
""")
