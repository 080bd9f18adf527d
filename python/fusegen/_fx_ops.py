"""ATen ops to fusegen ops, one handler each (see docs/ops.md for the fusegen side).

A handler takes the Translator and the node and returns the node's Value (or a
tuple for ops with several results, read by getitem). It refuses with
Translator.fail when the node's arguments are outside what fusegen computes.
Both the high-level ATen ops that torch.export keeps (aten.linear,
aten.conv2d, aten.batch_norm, ...) and their decompositions that
aot_autograd produces (aten.t + aten.addmm, aten.convolution,
aten._native_batch_norm_legit_functional, ...) are mapped.
"""

import operator

from ._fx_translate import StateAfter, Transposed, Unavailable, Value, literal


def bind(node):
    """{schema argument name: value} of an OpOverload call, defaults filled in."""
    schema = node.target._schema
    bound = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            bound[arg.name] = None
    return bound


def _out_shape(t, node):
    """The node's own (first) result shape."""
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        val = val[0]
    return t.dims(val.shape, node)


def _kw(pairs):
    """', key=value' for each (key, text) whose text is not None."""
    return "".join(", %s=%s" % (k, v) for k, v in pairs if v is not None)


# ---- pointwise ----

_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "multiply": "*", "subtract": "-", "divide": "/",
           "true_divide": "/"}


def binary(t, node):
    name = node.target.overloadpacket.__name__
    a = bind(node)
    x, y = a.get("self", a.get("input")), a["other"]
    if name in ("add", "sub", "subtract") and a.get("alpha", 1) != 1:
        if isinstance(y, (int, float)):
            y = y * a["alpha"]
        else:
            t.fail("alpha=%r: fusegen's %s has no alpha" % (a["alpha"], name))
    if a.get("rounding_mode") is not None:
        t.fail("rounding_mode=%r: fusegen's div is true division" % a["rounding_mode"])
    return _pointwise2(t, node, "%s " + _BINARY[name] + " %s", x, y)


def _pointwise2(t, node, pattern, x, y):
    vx, vy = t.value(x), t.value(y)
    tensors = [v for v in (vx, vy) if isinstance(v, Value)]
    if not tensors:
        t.fail("both operands are numbers")
    out = _out_shape(t, node)
    viewed = [v for v in tensors if v.viewed]
    if viewed:
        # a view passes through an op with a number, or with a tensor of the same view
        if len(tensors) == 2 and not (vx.spec_shape == vy.spec_shape and vx.torch_shape == vy.torch_shape):
            t.fail("an operand is a view %s of a %s tensor; fusegen has no reshape, so it can combine it only "
                   "with a number or the same view" % (list(viewed[0].torch_shape), list(viewed[0].spec_shape)))
        return t.emit(pattern % (t.text(vx), t.text(vy)), viewed[0].spec_shape, out)
    return t.emit(pattern % (t.text(vx), t.text(vy)), out)


def rsub(t, node):
    a = bind(node)
    if a.get("alpha", 1) != 1:
        t.fail("alpha=%r is not supported" % a["alpha"])
    return _pointwise2(t, node, "%s - %s", a["other"], a["self"])


def minmax2(fusegen_name):
    def handler(t, node):
        a = bind(node)
        return _pointwise2(t, node, fusegen_name + "(%s, %s)", a["self"], a["other"])
    return handler


def unary(fusegen_name, params=()):
    """`fusegen_name(x, key=value...)`; params: [(aten name, spec name, default or a check)]."""
    def handler(t, node):
        a = bind(node)
        v = t.value(a.get("self", a.get("input")))
        if not isinstance(v, Value):
            t.fail("the operand is a number")
        pairs = []
        for aten_name, spec_name in params:
            value = a.get(aten_name)
            if value is not None and hasattr(value, "op"):
                t.fail("%s is a tensor; fusegen takes a number" % aten_name)
            pairs.append((spec_name, None if value is None else _number(t, value)))
        return t.emit("%s(%s%s)" % (fusegen_name, v.expr, _kw(pairs)), v.spec_shape, v.torch_shape)
    return handler


def _number(t, value):
    try:
        return literal(value)
    except ValueError as e:
        t.fail(str(e))


def elu(t, node):
    a = bind(node)
    if a.get("scale", 1) != 1 or a.get("input_scale", 1) != 1:
        t.fail("elu with scale or input_scale other than 1 (selu) is not a fusegen op")
    return unary("elu", [("alpha", "alpha")])(t, node)


def clamp(t, node):
    a = bind(node)
    if a.get("min") is None and a.get("max") is None:
        t.fail("clamp without bounds")
    return unary("clamp", [("min", "min"), ("max", "max")])(t, node)


def identity(t, node):
    a = bind(node)
    v = t.value(a.get("self", a.get("input")))
    return v


def to_copy(t, node):
    a = bind(node)
    dtype = a.get("dtype")
    if dtype is not None and str(dtype) != "torch.float32":
        t.fail("a cast to %s; fusegen computes float32" % dtype)
    return identity(t, node)


def dropout(t, node):
    a = bind(node)
    train = a.get("train", a.get("training"))
    if train:
        t.fail("dropout in training mode (p=%r) is random; fusegen's dropout is the eval-mode identity "
               "(call module.eval(), or set p=0)" % a["p"])
    v = identity(t, node)
    return (v, Unavailable("the dropout mask")) if node.target.overloadpacket.__name__ == "native_dropout" else v


# ---- views ----

def view(t, node):
    """view / reshape / squeeze / unsqueeze / flatten: the same spec tensor seen in another shape."""
    a = bind(node)
    source = a.get("self", a.get("input"))
    out = _out_shape(t, node)
    if source not in t.env and hasattr(source, "op"):
        # a view of a tensor from outside (a parameter viewed as [1, C, 1, 1], say): declare it in that shape
        return t.argument(source, shape=out)
    v = t.value(source)
    if not isinstance(v, Value):
        t.fail("a view of a number")
    return v.with_torch_shape(out)


def transpose(t, node):
    """t(w), permute(w, [1, 0]), transpose(w, 0, 1) of a 2-d tensor: a matmul weight."""
    a = bind(node)
    v = t.tensor(a["self"])
    name = node.target.overloadpacket.__name__
    swap = len(v.spec_shape) == 2 and (
        name == "t" or (name == "permute" and [d % 2 for d in a["dims"]] == [1, 0])
        or (name == "transpose" and {a["dim0"] % 2, a["dim1"] % 2} == {0, 1}))
    if name == "t" and len(v.spec_shape) < 2:
        return v
    if not swap:
        t.fail("%s of a %s tensor: fusegen has no transpose or permute (only a 2-d matmul weight's "
               "transpose maps, to linear)" % (name, list(v.spec_shape)))
    return Transposed(v)


# ---- contractions ----

def linear(t, node):
    a = bind(node)
    x, w, b = t.value(a["input"]), t.tensor(a["weight"]), t.optional_tensor(a.get("bias"))
    return _linear(t, node, x, w, b)


def _linear(t, node, x, w, b):
    if not isinstance(x, Value):
        t.fail("the input is a number")
    if x.viewed and (x.spec_shape[-1:] != x.torch_shape[-1:]):
        t.fail("the input is a view %s of a %s tensor that changes its last dim" % (list(x.torch_shape),
                                                                                  list(x.spec_shape)))
    if len(w.spec_shape) != 2:
        t.fail("a %d-d weight; fusegen's linear takes [out, in]" % len(w.spec_shape))
    spec = x.spec_shape[:-1] + (w.spec_shape[0],)
    torch_shape = x.torch_shape[:-1] + (w.spec_shape[0],)
    if b is not None and b.spec_shape != (w.spec_shape[0],):
        h = t.emit("linear(%s, %s)" % (x.expr, w.expr), spec, torch_shape, hint=t.node.name + "_mm")
        if x.viewed:
            t.fail("a bias of shape %s after a matmul of a view" % list(b.spec_shape))
        return t.emit("%s + %s" % (h.expr, b.expr), _out_shape(t, node))
    return t.emit("linear(%s, %s%s)" % (x.expr, w.expr, ", " + b.expr if b is not None else ""), spec,
                  torch_shape)


def addmm(t, node):
    a = bind(node)
    if a.get("beta", 1) != 1 or a.get("alpha", 1) != 1:
        t.fail("addmm with beta or alpha other than 1")
    return _mm(t, node, a["mat1"], a["mat2"], a["self"])


def mm(t, node):
    a = bind(node)
    return _mm(t, node, a["self"], a["mat2"], None)


def _mm(t, node, x_arg, w_arg, bias_arg):
    x = t.value(x_arg)
    w = t.lookup(w_arg)
    bias = t.optional_tensor(bias_arg)
    if isinstance(w, Transposed):
        return _linear(t, node, x, w.value, bias)
    w = t.tensor(w_arg)
    x = t.tensor(x_arg)
    h = t.emit("matmul(%s, %s)" % (x.expr, w.expr), _out_shape(t, node), hint=t.node.name if bias is None
               else t.node.name + "_mm")
    return h if bias is None else t.emit("%s + %s" % (h.expr, bias.expr), _out_shape(t, node))


def matmul(t, node):
    a = bind(node)
    x, y = t.tensor(a["self"]), t.tensor(a["other"])
    return t.emit("matmul(%s, %s)" % (x.expr, y.expr), _out_shape(t, node))


def _ints(value, rank):
    if isinstance(value, int):
        return (value,) * rank
    value = tuple(value)
    return value * rank if len(value) == 1 and rank > 1 else value


def convolution(t, node):
    """aten.convolution and aten.conv{1,2,3}d / conv_transpose{1,2,3}d."""
    a = bind(node)
    name = node.target.overloadpacket.__name__
    x, w, b = t.tensor(a["input"]), t.tensor(a["weight"]), t.optional_tensor(a.get("bias"))
    rank = len(w.spec_shape) - 2
    transposed = a.get("transposed", False) if name == "convolution" else name.startswith("conv_transpose")
    padding = a.get("padding", 0)
    pad_text = literal(padding) if isinstance(padding, str) else literal(_ints(padding, rank))
    common = [("stride", literal(_ints(a.get("stride", 1), rank))), ("padding", pad_text)]
    if transposed:
        pairs = common + [("output_padding", literal(_ints(a.get("output_padding", 0), rank))),
                          ("groups", literal(a.get("groups", 1))), ("dilation", literal(_ints(a.get("dilation", 1),
                                                                                              rank)))]
        op = "conv_transpose%dd" % rank
    else:
        if name == "convolution" and any(_ints(a.get("output_padding", 0), rank)):
            t.fail("output_padding on a convolution that is not transposed")
        pairs = common + [("dilation", literal(_ints(a.get("dilation", 1), rank))),
                          ("groups", literal(a.get("groups", 1)))]
        op = "conv%dd" % rank
    if rank not in (1, 2, 3):
        t.fail("a %d-d convolution; fusegen has 1-d to 3-d" % rank)
    return t.emit("%s(%s, %s, %s%s)" % (op, x.expr, w.expr, b.expr if b is not None else "None", _kw(pairs)),
                  _out_shape(t, node))


# ---- normalizations ----

def _affine(t, a):
    w, b = t.optional_tensor(a.get("weight")), t.optional_tensor(a.get("bias"))
    return [("weight", w.expr if w else None), ("bias", b.expr if b else None)]


def group_norm(t, node):
    a = bind(node)
    x = t.tensor(a["input"])
    groups = a.get("num_groups", a.get("group"))
    pairs = [("num_groups", literal(groups))] + _affine(t, a) + [("eps", literal(float(a["eps"])))]
    v = t.emit("group_norm(%s%s)" % (x.expr, _kw(pairs)), x.spec_shape)
    if node.target.overloadpacket.__name__ == "native_group_norm":
        return (v, Unavailable("group norm's saved mean"), Unavailable("group norm's saved rstd"))
    return v


def layer_norm(t, node):
    a = bind(node)
    x = t.tensor(a["input"])
    pairs = [("normalized_shape", literal(tuple(a["normalized_shape"])))] + _affine(t, a) + \
        [("eps", literal(float(a["eps"])))]
    v = t.emit("layer_norm(%s%s)" % (x.expr, _kw(pairs)), x.spec_shape)
    if node.target.overloadpacket.__name__ == "native_layer_norm":
        return (v, Unavailable("layer norm's saved mean"), Unavailable("layer norm's saved rstd"))
    return v


def instance_norm(t, node):
    a = bind(node)
    if not a.get("use_input_stats", True):
        t.fail("instance norm with running statistics (use_input_stats=False) is not a fusegen op")
    if a.get("running_mean") is not None or a.get("running_var") is not None:
        t.fail("instance norm that tracks running statistics (track_running_stats=True) is not a fusegen op")
    x = t.tensor(a["input"])
    pairs = _affine(t, a) + [("eps", literal(float(a["eps"])))]
    return t.emit("instance_norm(%s%s)" % (x.expr, _kw(pairs)), x.spec_shape)


def batch_norm(t, node):
    """batch_norm, native_batch_norm, _native_batch_norm_legit(_functional, _no_training)."""
    a = bind(node)
    name = node.target.overloadpacket.__name__
    training = False if name == "_native_batch_norm_legit_no_training" else bool(a.get("training"))
    x = t.tensor(a["input"])
    rm, rv = a.get("running_mean"), a.get("running_var")
    if rm is None or rv is None:
        t.fail("batch norm without running statistics (track_running_stats=False) is not a fusegen op")
    if training and a.get("momentum") is None:
        t.fail("batch norm with momentum=None (a cumulative average) is not supported")
    kind = "state" if training else None
    for stat in (rm, rv):
        if training and (stat in t.env or not hasattr(stat, "op")):
            t.fail("the running statistic '%s' is computed in the fusion; fusegen updates state arguments"
                   % getattr(stat, "name", stat))
    mean = t.argument(rm, kind=kind) if training else t.tensor(rm)
    var = t.argument(rv, kind=kind) if training else t.tensor(rv)
    pairs = _affine(t, a) + [("training", literal(training))]
    if training:
        pairs.append(("momentum", literal(float(a["momentum"]))))
    pairs.append(("eps", literal(float(a["eps"]))))
    v = t.emit("batch_norm(%s, %s, %s%s)" % (x.expr, mean.expr, var.expr, _kw(pairs)), x.spec_shape)
    if name == "batch_norm":
        return v
    saved = (Unavailable("batch norm's saved mean"), Unavailable("batch norm's saved inverse std"))
    if name == "_native_batch_norm_legit_functional":
        return (v,) + saved + (StateAfter(mean.expr, mean.spec_shape), StateAfter(var.expr, var.spec_shape))
    return (v,) + saved


def softmax(t, node):
    a = bind(node)
    name = node.target.overloadpacket.__name__
    log = "log" in name
    if a.get("dtype") is not None or a.get("half_to_float"):
        t.fail("a dtype argument; fusegen computes float32")
    x = t.value(a["self"])
    dims = t.spec_dims(x, [a["dim"]])
    if not dims:
        t.fail("softmax over an added unit dim")
    if len(dims) == 1:
        return t.emit("%s(%s, dim=%d)" % ("log_softmax" if log else "softmax", x.expr, dims[0]), x.spec_shape,
                      x.torch_shape)
    # over a merged view's dim: torch's own algorithm over the spec dims it covers
    d = literal(tuple(dims))
    peak = t.emit("amax(%s, dim=%s, keepdim=true)" % (x.expr, d), (), hint=node.name + "_max")
    shifted = t.emit("%s - %s" % (x.expr, peak.expr), (), hint=node.name + "_shifted")
    if log:
        total = t.emit("sum(exp(%s), dim=%s, keepdim=true)" % (shifted.expr, d), (), hint=node.name + "_sum")
        return t.emit("%s - log(%s)" % (shifted.expr, total.expr), x.spec_shape, x.torch_shape)
    e = t.emit("exp(%s)" % shifted.expr, (), hint=node.name + "_exp")
    return t.emit("%s / sum(%s, dim=%s, keepdim=true)" % (e.expr, e.expr, d), x.spec_shape, x.torch_shape)


# ---- reductions ----

def reduction(fusegen_name, single_dim=False, with_indices=False):
    def handler(t, node):
        a = bind(node)
        if a.get("dtype") is not None:
            t.fail("a dtype argument; fusegen computes float32")
        x = t.value(a["self"])
        if not isinstance(x, Value):
            t.fail("a reduction of a number")
        out = _out_shape(t, node)
        dim = a.get("dim")
        keepdim = bool(a.get("keepdim", False))
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            dim = list(range(len(x.torch_shape)))  # every dim (torch's dim=None / [])
        torch_dims = [dim] if isinstance(dim, int) else list(dim)
        dims = t.spec_dims(x, torch_dims)
        name = fusegen_name
        if single_dim and len(dims) != 1:
            name = {"max": "amax", "min": "amin"}[fusegen_name]
        if not dims:
            v = x.with_torch_shape(out)  # reduced only added unit dims: the same elements
        else:
            kept = [1 if i in dims else s for i, s in enumerate(x.spec_shape)] if keepdim else \
                [s for i, s in enumerate(x.spec_shape) if i not in dims]
            dim_text = str(dims[0]) if name in ("max", "min") else literal(tuple(dims))
            v = t.emit("%s(%s, dim=%s%s)" % (name, x.expr, dim_text, ", keepdim=true" if keepdim else ""), kept,
                       out)
        return (v, Unavailable("the indices of %s" % fusegen_name)) if with_indices else v
    return handler


# ---- windows ----

def pool(kind, adaptive=False, with_indices=False):
    """max/avg pools, adaptive ones, of any rank: torch dims that are added unit dims (a
    max_pool1d's unsqueeze, say) are left out, so the pool may run on fewer dims."""
    def handler(t, node):
        a = bind(node)
        x = t.value(a["self"])
        if not isinstance(x, Value):
            t.fail("a pool of a number")
        name = node.target.overloadpacket.__name__.lstrip("_")
        rank = int(name.split("pool")[1][0])
        T = x.torch_shape
        lead = len(T) - rank
        unit = _added_unit_dims(t, x)
        if adaptive:
            opts = {"output_size": _ints(a["output_size"], rank)}
        else:
            k = _ints(a["kernel_size"], rank)
            stride = a.get("stride")
            opts = {"kernel_size": k, "stride": _ints(stride, rank) if stride not in (None, [], ()) else k,
                    "padding": _ints(a.get("padding", 0), rank)}
            if kind == "max":
                opts["dilation"] = _ints(a.get("dilation", 1), rank)
        keep = []
        for i in range(rank):
            if lead + i in unit:
                trivial = (opts["output_size"][i] == 1) if adaptive else (
                    opts["kernel_size"][i] == 1 and opts["stride"][i] == 1 and opts["padding"][i] == 0)
                if not trivial:
                    t.fail("a pool window over an added unit dim")
            else:
                keep.append(i)
        lead_kept = [d for d in range(lead) if d not in unit]
        if not keep or len(lead_kept) not in (1, 2):
            t.fail("a pool on a view %s of a %s tensor" % (list(T), list(x.spec_shape)))
        new_rank = len(keep)
        pairs = [(key, literal(tuple(value[i] for i in keep))) for key, value in opts.items()]
        if not adaptive:
            pairs.append(("ceil_mode", literal(bool(a.get("ceil_mode", False)))))
            if kind == "avg":
                pairs.append(("count_include_pad", literal(bool(a.get("count_include_pad", True)))))
                if a.get("divisor_override") is not None:
                    pairs.append(("divisor_override", literal(a["divisor_override"])))
        op = "%s%s_pool%dd" % ("adaptive_" if adaptive else "", kind, new_rank)
        out = _out_shape(t, node)
        spec = tuple(s for i, s in enumerate(out) if i not in unit)
        v = t.emit("%s(%s%s)" % (op, x.expr, _kw(pairs)), spec, out)
        return (v, Unavailable("the pool's indices")) if with_indices else v
    return handler


def _added_unit_dims(t, x):
    """The torch dims of `x` that are size-1 dims the spec tensor does not have."""
    if not x.viewed:
        return set()
    unit = set()
    for sdims, tdims in t.groups(x.spec_shape, x.torch_shape):
        if not sdims:
            unit.update(tdims)
        elif len(sdims) != len(tdims):
            t.fail("a pool on a view %s of a %s tensor that merges or splits dims" % (list(x.torch_shape),
                                                                                    list(x.spec_shape)))
    return unit


def getitem(t, node):
    source, index = node.args
    results = t.lookup(source)
    if not isinstance(results, tuple):
        t.fail("getitem of a value that is not a tuple")
    return results[index]


def handlers():
    """{OpOverloadPacket or callable: handler}."""
    import torch
    aten = torch.ops.aten
    table = {operator.getitem: getitem}

    def add(names, handler):
        for n in names:
            packet = getattr(aten, n, None)
            if packet is not None:
                table[packet] = handler

    add(_BINARY, binary)
    add(["rsub"], rsub)
    add(["maximum", "fmax"], minmax2("maximum"))
    add(["minimum", "fmin"], minmax2("minimum"))
    table[aten.max.other] = minmax2("maximum")
    table[aten.min.other] = minmax2("minimum")
    for n in ("relu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "silu", "mish", "hardswish",
              "hardsigmoid"):
        add([n], unary(n))
    add(["gelu"], unary("gelu", [("approximate", "approximate")]))
    add(["leaky_relu"], unary("leaky_relu", [("negative_slope", "negative_slope")]))
    add(["hardtanh"], unary("hardtanh", [("min_val", "min_val"), ("max_val", "max_val")]))
    add(["softplus"], unary("softplus", [("beta", "beta"), ("threshold", "threshold")]))
    add(["elu"], elu)
    add(["clamp", "clip"], clamp)
    add(["clamp_min"], unary("clamp", [("min", "min")]))
    add(["clamp_max"], unary("clamp", [("max", "max")]))
    add(["clone", "detach", "alias", "lift_fresh_copy", "contiguous"], identity)
    add(["_to_copy", "to"], to_copy)
    add(["dropout", "native_dropout"], dropout)
    add(["view", "_unsafe_view", "reshape", "squeeze", "unsqueeze", "flatten"], view)
    add(["t", "permute", "transpose"], transpose)
    add(["linear"], linear)
    add(["addmm"], addmm)
    add(["mm"], mm)
    add(["bmm", "matmul"], matmul)
    add(["convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"],
        convolution)
    add(["group_norm", "native_group_norm"], group_norm)
    add(["layer_norm", "native_layer_norm"], layer_norm)
    add(["instance_norm"], instance_norm)
    add(["batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
         "_native_batch_norm_legit_no_training"], batch_norm)
    add(["softmax", "_softmax", "log_softmax", "_log_softmax"], softmax)
    add(["sum"], reduction("sum"))
    add(["mean"], reduction("mean"))
    add(["amax"], reduction("amax"))
    add(["amin"], reduction("amin"))
    add(["logsumexp"], reduction("logsumexp"))
    table[aten.max.dim] = reduction("max", single_dim=True, with_indices=True)
    table[aten.min.dim] = reduction("min", single_dim=True, with_indices=True)
    table[aten.max.default] = reduction("amax")
    table[aten.min.default] = reduction("amin")
    for r in (1, 2, 3):
        add(["max_pool%dd" % r], pool("max"))
        add(["max_pool%dd_with_indices" % r], pool("max", with_indices=True))
        add(["avg_pool%dd" % r], pool("avg"))
        add(["adaptive_avg_pool%dd" % r, "_adaptive_avg_pool%dd" % r], pool("avg", adaptive=True))
        add(["adaptive_max_pool%dd" % r], pool("max", adaptive=True, with_indices=True))
    return table
