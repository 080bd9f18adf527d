"""ATen-level FX nodes to fusegen spec text: the values, declarations and statements.

Used by fusegen.from_module (a torch.export graph) and the torch.compile
backend (the runs of an aot_autograd graph). One Translator builds one fusion
from a list of nodes; the op-by-op rules are in _fx_ops.py.

A Value is the spec's view of a torch value. fusegen has no reshape, so a
torch view (view, reshape, unsqueeze, squeeze) keeps the spec expression and
only changes the shape torch sees: `spec_shape` is the shape in the spec,
`torch_shape` the one torch has. The two hold the same elements in the same
row-major order. Ops that can see through such a view (pointwise ops,
reductions and softmax over whole groups of dims, pools over added unit dims,
a linear over merged leading dims) do; every other op needs the two shapes
equal, and refuses otherwise. An output whose shapes differ is returned as a
torch view of fusegen's output (free: outputs are contiguous).

Dims are ints, or strings for symbolic dims: a dim whose size is a plain
symbol of torch's shape environment (a SymInt `s0` of dynamic shapes) is
declared as the spec's symbolic dim of that name, so one fusion serves every
size and the JIT specializes per call. A dim that is an expression of symbols
(`s0 * 4`, `s1 - 2`) has no spec form; the node that has it is refused
(`dim_of` returns None for it).
"""

import os
import re

from ._errors import UnsupportedModuleError

# Words the spec parser reserves; a tensor named so gets a suffix.
_KEYWORDS = {"fusion", "input", "param", "state", "output", "true", "false", "None"}


class Value:
    """A tensor of the fusion: a spec name (or literal) and its two shapes."""

    def __init__(self, expr, spec_shape, torch_shape=None):
        self.expr = expr
        self.spec_shape = tuple(spec_shape)
        self.torch_shape = tuple(spec_shape if torch_shape is None else torch_shape)

    @property
    def viewed(self):
        return self.spec_shape != self.torch_shape

    def with_torch_shape(self, shape):
        return Value(self.expr, self.spec_shape, shape)


class Transposed:
    """t(w) / permute(w, [1, 0]) of a 2-d tensor: usable only as the weight of a matmul (linear)."""

    def __init__(self, value):
        self.value = value


class StateAfter:
    """A running statistic after a training-mode batch norm updated it in place: the
    spec's `state` argument `name` holds it once the fusion has run."""

    def __init__(self, name, shape):
        self.name = name
        self.torch_shape = tuple(shape)


class Unavailable:
    """An output of a node that fusegen does not compute (indices, saved statistics)."""

    def __init__(self, what):
        self.what = what


class Argument:
    """A declared input, param or state of the fusion: where its tensor comes from
    (`source`, an FX node outside the translated nodes) and the shape it is passed in
    (`shape`: the source's own shape, or a view of it)."""

    def __init__(self, name, kind, shape, source, view=False):
        self.name = name
        self.kind = kind
        self.shape = tuple(shape)
        self.source = source
        self.view = view


def literal(value):
    """A Python number, bool, None, str or tuple as spec text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("%r has no spec literal" % value)
        return repr(value)
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, (tuple, list)):
        items = [literal(v) for v in value]
        return "(%s,)" % items[0] if len(items) == 1 else "(%s)" % ", ".join(items)
    raise ValueError("%r has no spec literal" % (value,))


def dim_of(d):
    """A torch dim as a spec dim: an int, the name of a plain symbol (a SymInt `s0`),
    or None for an expression of symbols (no spec form)."""
    if type(d) is int:
        return d
    node = getattr(d, "node", None)
    if node is None:
        return None
    constant = node.maybe_as_int() if hasattr(node, "maybe_as_int") else None
    if constant is not None:
        return int(constant)
    expr = getattr(node, "expr", None)
    if expr is not None and getattr(expr, "is_Symbol", False) and re.match(r"^[A-Za-z_]\w*$", str(expr)):
        return str(expr)
    return None


def is_symbolic(shape):
    return any(isinstance(d, str) for d in shape)


def dim_groups(spec_shape, torch_shape):
    """The row-major correspondence of two shapes with the same number of elements:
    [(spec dims, torch dims)], each group the same product. A size-1 dim on one side
    only is a group of its own with nothing on the other side. A symbolic dim (a
    string) pairs only with the same symbol (ValueError otherwise)."""
    S, T = spec_shape, torch_shape
    i = j = 0
    groups = []
    while i < len(S) or j < len(T):
        s1 = i < len(S) and S[i] == 1
        t1 = j < len(T) and T[j] == 1
        if s1 and t1:
            groups.append(([i], [j]))
            i, j = i + 1, j + 1
        elif i < len(S) and j < len(T) and isinstance(S[i], str) and S[i] == T[j]:
            groups.append(([i], [j]))
            i, j = i + 1, j + 1
        elif (i < len(S) and isinstance(S[i], str)) or (j < len(T) and isinstance(T[j], str)):
            raise ValueError("the view %s of a %s tensor merges or splits a symbolic dim; fusegen has no "
                             "reshape" % (list(T), list(S)))
        elif t1 or i == len(S):
            groups.append(([], [j]))
            j += 1
        elif s1 or j == len(T):
            groups.append(([i], []))
            i += 1
        else:
            si, tj, ps, pt = [i], [j], S[i], T[j]
            i, j = i + 1, j + 1
            while ps != pt:
                if ps < pt and i < len(S):
                    si.append(i)
                    ps *= S[i]
                    i += 1
                elif j < len(T):
                    tj.append(j)
                    pt *= T[j]
                    j += 1
                else:
                    raise ValueError("shapes %s and %s do not hold the same elements" % (list(S), list(T)))
            groups.append((si, tj))
    return groups


def source_line(node):
    """'file:line: code' of the innermost frame outside torch in the node's stack
    trace (the module's own source line), or '' when there is none."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)', trace)
    torch_dir = _torch_dir()
    outside = [f for f in frames if not (torch_dir and os.path.abspath(f[0]).startswith(torch_dir))]
    if not (outside or frames):
        return ""
    path, line, code = (outside or frames)[-1]
    return "%s:%s: %s" % (path, line, code.strip())


def _torch_dir():
    import torch
    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def op_name(node):
    target = node.target
    if hasattr(target, "_schema"):
        return str(target)  # aten.add.Tensor
    return getattr(target, "__name__", str(target))


def _readable(node_name):
    """A node's name as a statement name: '_native_batch_norm_legit_functional_1' -> 'batch_norm_1'."""
    return re.sub(r"^_*native_batch_norm(_legit)?(_functional|_no_training)?", "batch_norm", node_name).lstrip("_")


class Translator:
    """Builds one fusion: declarations for the tensors from outside, one statement per
    node, outputs. `argument_kind(node)` says how an outside node enters the fusion:
    ("input" | "param" | "constant", preferred name, tensor or None)."""

    def __init__(self, name, argument_kind, who="from_module"):
        self.name = name
        self.argument_kind = argument_kind
        self.who = who
        self.arguments = []           # [Argument] in declaration order
        self._by_source = {}          # (source node, shape, kind) -> Argument
        self.statements = []
        self.env = {}                 # node -> Value | Transposed | StateAfter | Unavailable | tuple
        self._names = set()
        self.node = None              # the node being translated (for errors)
        self.outputs = []             # [(spec name, torch shape, expression, spec shape)]
        self.comment = None
        self.symbols = set()          # the symbolic dims seen (spec names of SymInt dims)
        self.lines = {}               # statement index -> the node that emitted it

    # ---- errors ----

    def fail(self, reason, node=None):
        node = node if node is not None else self.node
        where = source_line(node) if node is not None else ""
        what = "node '%s' (%s)" % (node.name, op_name(node)) if node is not None else "the graph"
        raise UnsupportedModuleError(
            "fusegen: %s: %s%s: %s" % (self.who, what, (" at " + where) if where else "", reason),
            op=op_name(node) if node is not None else None, source=where or None,
            node=node.name if node is not None else None)

    # ---- names ----

    def fresh(self, hint):
        base = re.sub(r"\W", "_", hint) or "t"
        if base[0].isdigit():
            base = "t" + base
        if base in _KEYWORDS:
            base += "_"
        name, k = base, 1
        while name in self._names:
            name, k = "%s_%d" % (base, k), k + 1
        self._names.add(name)
        return name

    # ---- values ----

    def shape_of(self, node):
        val = node.meta.get("val")
        if val is None:
            val = node.meta.get("example_value")
        if val is None or not hasattr(val, "shape"):
            self.fail("no tensor shape recorded for '%s'" % node.name, node)
        if str(val.dtype) != "torch.float32":
            self.fail("'%s' has dtype %s; fusegen computes float32 tensors" % (node.name, val.dtype), node)
        return self.dims(val.shape, node)

    def dims(self, shape, node=None):
        """A torch shape as spec dims (ints and symbol names); refuses expressions of symbols."""
        dims = []
        for d in shape:
            spec_dim = dim_of(d)
            if spec_dim is None:
                self.fail("'%s' has the shape %s; a dim that is an expression of symbolic dims has no spec "
                          "form (fusegen takes constant dims and plain symbols such as s0)"
                          % ((node or self.node).name, list(shape)), node)
            if isinstance(spec_dim, str) and spec_dim not in self.symbols:
                if spec_dim in self._names:
                    self.fail("the symbolic dim '%s' has the name of a tensor of the fusion" % spec_dim, node)
                self.symbols.add(spec_dim)
                self._names.add(spec_dim)  # no tensor takes a dim's name
            dims.append(spec_dim)
        return tuple(dims)

    def groups(self, spec_shape, torch_shape):
        """dim_groups, refusing the current node where a view splits or merges a symbolic dim."""
        try:
            return dim_groups(spec_shape, torch_shape)
        except ValueError as e:
            self.fail(str(e))

    def lookup(self, arg):
        """The translation of an FX node argument (declaring outside nodes as arguments)."""
        if arg in self.env:
            return self.env[arg]
        return self.argument(arg)

    def argument(self, node, kind=None, shape=None):
        """The outside node `node` declared as an argument (once per kind and shape)."""
        own = self.shape_of(node)
        shape = own if shape is None else tuple(shape)
        wanted, hint, tensor = self.argument_kind(node)
        if wanted == "constant" and tensor is not None and tensor.numel() == 1 and kind is None:
            return float(tensor.reshape(()).item())  # a 0-d constant (torch.tensor(c)) is the number c
        kind = kind or ("input" if wanted == "input" else "param")
        key = (node, shape, kind)
        known = self._by_source.get(key)
        if known is None:
            for other in self.arguments:
                if other.source is node and (other.kind == "state") != (kind == "state"):
                    self.fail("'%s' is both a running statistic that a batch norm updates and another op's "
                              "operand; fusegen updates state in place, so it cannot be both" % node.name)
            name = self.fresh(hint if shape == own else hint + "_view")
            known = Argument(name, kind, shape, node, view=shape != own)
            self._by_source[key] = known
            self.arguments.append(known)
        return Value(known.name, shape)

    def value(self, arg, materialized=False):
        """A tensor Value of `arg` (an FX node), or a number for a Python number."""
        if isinstance(arg, bool) or arg is None:
            self.fail("expected a tensor or number, got %r" % (arg,))
        if isinstance(arg, (int, float)):
            return arg
        if not hasattr(arg, "op"):
            self.fail("expected a tensor, got %r" % (arg,))
        v = self.lookup(arg)
        if isinstance(v, Transposed):
            self.fail("'%s' is a transpose, which fusegen can express only as the weight of a matmul" % arg.name)
        if isinstance(v, StateAfter):
            self.fail("'%s' is a running statistic after its update; fusegen cannot use it in the same fusion"
                      % arg.name)
        if isinstance(v, Unavailable):
            self.fail("'%s' is %s, which fusegen does not compute" % (arg.name, v.what))
        if isinstance(v, tuple):
            self.fail("'%s' is a tuple" % arg.name)
        if materialized and isinstance(v, Value) and v.viewed:
            self.fail("'%s' is a view %s of a %s tensor (view/reshape/squeeze/unsqueeze) that this op cannot "
                      "see through; fusegen has no reshape" % (arg.name, list(v.torch_shape), list(v.spec_shape)))
        return v

    def tensor(self, arg):
        """A Value with its spec shape equal to torch's."""
        v = self.value(arg, materialized=True)
        if not isinstance(v, Value):
            self.fail("expected a tensor, got the number %r" % (v,))
        return v

    def optional_tensor(self, arg):
        return None if arg is None else self.tensor(arg)

    def text(self, operand):
        return operand.expr if isinstance(operand, Value) else literal(operand)

    def emit(self, expr, spec_shape, torch_shape=None, hint=None):
        """`name = expr` for the current node; returns its Value."""
        name = self.fresh(hint or _readable(self.node.name))
        self.lines[len(self.statements)] = self.node
        self.statements.append("%s = %s" % (name, expr))
        return Value(name, spec_shape, torch_shape)

    def spec_dims(self, v, torch_dims):
        """The spec dims that torch dims of `v` are: each group of the view taken whole."""
        rank = len(v.torch_shape)
        wanted = {d % rank if rank else 0 for d in torch_dims}
        if not v.viewed:
            return sorted(wanted)
        result = []
        for sdims, tdims in self.groups(v.spec_shape, v.torch_shape):
            touched = wanted.intersection(tdims)
            if touched and len(touched) != len(tdims):
                self.fail("dims %s of the view %s of a %s tensor split a dim of the spec tensor; fusegen has "
                          "no reshape" % (sorted(wanted), list(v.torch_shape), list(v.spec_shape)))
            if touched:
                result.extend(sdims)
        return sorted(result)

    # ---- the fusion ----

    def translate(self, nodes, handlers):
        for node in nodes:
            self.node = node
            if node.op != "call_function":
                self.fail("a %s node; fusegen maps ATen op calls" % node.op)
            handler = handlers.get(node.target)
            if handler is None:
                handler = handlers.get(getattr(node.target, "overloadpacket", None))
            if handler is None:
                self.fail("%s has no fusegen op" % op_name(node))
            try:
                self.env[node] = handler(self, node)
            except UnsupportedModuleError:
                raise
            except Exception as e:  # noqa: BLE001 - an argument the rule did not foresee: refused, not a crash
                self.fail("its arguments are outside what fusegen's mapping takes (%s: %s)" % (
                    type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else ""))
        self.node = None

    def add_output(self, node, name_hint):
        """Makes `node`'s value an output; returns ('output', spec name, torch shape) or
        ('state', argument name) for a running statistic updated in place."""
        v = self.env.get(node)
        if isinstance(v, StateAfter):
            return ("state", v.name)
        self.node = node
        v = self.value(node)
        if not isinstance(v, Value):
            self.fail("the output '%s' is a number" % node.name)
        if any(a.name == v.expr for a in self.arguments):
            self.fail("the output '%s' is an argument of the fusion unchanged" % node.name)
        for name, _shape, expr, _spec in self.outputs:
            if expr == v.expr:
                return ("output", name, v.torch_shape)
        name = self.fresh(name_hint)
        self.statements.append("output %s = %s" % (name, v.expr))
        self.outputs.append((name, v.torch_shape, v.expr, v.spec_shape))
        self.node = None
        return ("output", name, v.torch_shape)

    def spec(self):
        if not self.outputs:
            raise UnsupportedModuleError("fusegen: %s: the fusion has no output" % self.who)
        lines = []
        if self.comment:
            lines += ["# " + line for line in self.comment.splitlines()]
        lines.append("fusion %s {" % self.name)
        width = max([len(a.name) for a in self.arguments] + [1])
        for a in self.arguments:
            kind = "param" if a.kind == "constant" else a.kind
            lines.append("  %-6s %-*s : f32[%s]" % (kind, width, a.name, ", ".join(str(d) for d in a.shape)))
        lines += ["  " + s for s in self.statements]
        lines.append("}")
        return "\n".join(lines) + "\n"
