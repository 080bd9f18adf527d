"""The torch.compile backend: torch.compile(model, backend="fusegen").

Dynamo's graph goes through aot_autograd (functional ATen, parameters as
inputs); in inference (no input that requires grad in grad mode) the graph is
partitioned into maximal runs of nodes that fusegen maps (_fx_ops.py, the
mapper of from_module), each run becomes one fusion called through its
torch.library custom op (torch.ops.fusegen.fused_<hash>), and the rest runs
with eager PyTorch or, with fallback="inductor", Inductor. A run whose
translation fails at a node is split there (that node stays with PyTorch)
and partitioned again. Graphs that need grad, and graphs of tensors that are
not CUDA tensors (fusegen needs CUDA), run with the fallback, with one
warning each. Shapes are static per compilation: torch.compile recompiles on
new shapes, and fusegen's JIT caches kernels per shape (memory and disk).
"""

import hashlib
import operator
import threading
import warnings

from ._errors import Error, SpecError, UnsupportedModuleError
from ._fx_translate import Translator, dim_of

_lock = threading.Lock()
_ops = {}           # (spec text, device, precision) -> OpOverload
_specs = {}         # OpOverload name -> spec text
_runtimes = {}      # (device, precision) -> Runtime
_warned = set()
compiled_graphs = []  # the last graphs the backend made (GraphModules with fusegen ops), newest last
_KEEP = 16


def _warn_once(key, message):
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def backend(precision=None, fallback="eager"):
    """A torch.compile backend with options: precision None (strict) or 'tf32'; fallback
    'eager' or 'inductor' for what fusegen does not run."""
    if fallback not in ("eager", "inductor"):
        raise ValueError("fusegen: backend fallback must be 'eager' or 'inductor', not %r" % (fallback,))
    if precision not in (None, "strict", "tf32"):
        raise ValueError("fusegen: backend precision must be None, 'strict' or 'tf32', not %r" % (precision,))

    def fusegen_compile(gm, example_inputs):
        return _compile(gm, example_inputs, precision, fallback)
    fusegen_compile.__name__ = "fusegen"
    fusegen_compile._fusegen_backend = True
    return fusegen_compile


def fusegen_backend(gm, example_inputs):
    """The backend registered as "fusegen" (default options)."""
    return _compile(gm, example_inputs, None, "eager")


fusegen_backend._fusegen_backend = True


def register(name="fusegen", precision=None, fallback="eager"):
    """Registers the backend with dynamo under `name` (again: replaced); returns it."""
    from torch._dynamo.backends import registry
    compiler = fusegen_backend if (precision, fallback) == (None, "eager") else backend(precision, fallback)
    known = registry._COMPILER_FNS.get(name)  # dynamo refuses a name twice; ours may be replaced
    if known is not None:
        if not getattr(known, "_fusegen_backend", False):
            raise ValueError("fusegen: torch.compile already has a backend named %r (not fusegen's)" % name)
        del registry._COMPILER_FNS[name]
    registry.register_backend(compiler, name=name)
    return compiler


def _fallback(gm, example_inputs, fallback):
    if fallback == "inductor":
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs)
    return gm.forward


def _host_float_scalar(value):
    """A 0-dim floating CPU tensor: how dynamo passes a Python float it leaves unspecialized."""
    import torch
    return (isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_cuda
            and value.dtype.is_floating_point)


def specialize_scalars(gm, example_inputs):
    """Dynamo passes Python floats it does not specialize (a module attribute such as a
    norm's eps under dynamic=True) as 0-dim CPU tensors read with .item(); a spec needs
    them as constants. Each such input whose every use is .item() is replaced in `gm` by
    its example value; returns [(input index, value)] for the call to check."""
    import torch
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found = []
    for index, (node, example) in enumerate(zip(placeholders, example_inputs)):
        if not (_host_float_scalar(example) and node.users
                and all(u.op == "call_method" and u.target == "item" for u in node.users)):
            continue
        value = example.item()
        for item in list(node.users):
            for user in list(item.users):
                user.args = torch.fx.node.map_arg(user.args, lambda a, item=item: value if a is item else a)
                user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda a, item=item: value if a is item else a)
            gm.graph.erase_node(item)
        found.append((index, value))
    if found:
        gm.recompile()
    return found


def guard_scalars(compiled, found, make_fallback):
    """`compiled` while every specialized scalar input keeps its value; a call where one
    differs runs the original graph through make_fallback() (built once), with a warning."""
    import math
    state = {}

    def same(a, b):
        return a == b or (math.isnan(a) and math.isnan(b))

    def call(*args):
        if all(same(args[i].item(), v) for i, v in found):
            return compiled(*args)
        if "fallback" not in state:
            _warn_once(("scalar", id(state)), "fusegen: torch.compile backend: a scalar the fusion was specialized "
                                              "on changed; this graph now runs with the fallback")
            state["fallback"] = make_fallback()
        return state["fallback"](*args)
    return call


def _compile(gm, example_inputs, precision, fallback):
    import copy
    if not any(_host_float_scalar(t) for t in example_inputs):
        return _compile_specialized(gm, example_inputs, precision, fallback, set())
    original = copy.deepcopy(gm)
    scalars = specialize_scalars(gm, example_inputs)
    if scalars:
        compiled = _compile_specialized(gm, example_inputs, precision, fallback, {i for i, _ in scalars})
        return guard_scalars(compiled, scalars, lambda: _fallback(original, example_inputs, fallback))
    return _compile_specialized(gm, example_inputs, precision, fallback, set())


def _compile_specialized(gm, example_inputs, precision, fallback, scalar_inputs):
    import torch
    tensors = [t for i, t in enumerate(example_inputs) if isinstance(t, torch.Tensor) and i not in scalar_inputs]
    if not tensors or not all(t.is_cuda for t in tensors):
        _warn_once("cpu", "fusegen: torch.compile backend: the graph's tensors are not all CUDA tensors (fusegen runs "
                          "on CUDA only); the graph runs with %s PyTorch" % fallback)
        return _fallback(gm, example_inputs, fallback)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        _warn_once("grad", "fusegen: torch.compile backend: the graph needs grad (fusegen fusions have no "
                           "backward); it runs with %s PyTorch. Run inference under torch.no_grad() or "
                           "torch.inference_mode() to fuse" % fallback)
        return _fallback(gm, example_inputs, fallback)
    from torch._dynamo.backends.common import aot_autograd
    device = tensors[0].device.index or 0

    def inference(aten_gm, aten_inputs):
        try:
            rewritten = partition_graph(aten_gm, aten_inputs, precision=precision, device=device)
        except Error as e:  # before the graph is changed: it runs whole with the fallback, with a warning
            _warn_once(("partition", str(e)), "fusegen: torch.compile backend: %s; the graph runs with %s PyTorch"
                       % (str(e).strip().splitlines()[0], fallback))
            rewritten = aten_gm
        return finish(rewritten, aten_inputs, fallback)

    def needs_grad(aten_gm, aten_inputs):  # not reached after the check above; kept as the safe answer
        return aten_gm.forward
    return aot_autograd(fw_compiler=needs_grad, inference_compiler=inference)(gm, example_inputs)


def finish(rewritten, aten_inputs, fallback):
    """The callable of a rewritten ATen graph: its forward (eager PyTorch runs what is not
    fused), or with fallback="inductor" the graph compiled by Inductor, where the fusions'
    custom ops are extern kernels and Inductor compiles the rest."""
    if fallback != "inductor":
        return rewritten.forward
    from torch._guards import detect_fake_mode
    from torch._inductor.compile_fx import compile_fx_inner
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    # the nodes made here have no example values yet, which Inductor's lowering reads
    FakeTensorProp(rewritten, detect_fake_mode(aten_inputs)).propagate_dont_convert_inputs(*aten_inputs)
    return compile_fx_inner(rewritten, aten_inputs)


# ---- partitioning ----

def _handlers():
    from ._fx_ops import handlers
    return handlers()


def _supported_locally(node, table, refused):
    """Whether the node alone is one fusegen maps: an op of the table on float32 tensors of static shapes."""
    if node.op != "call_function" or node.name in refused:
        return False
    if node.target is not operator.getitem and node.target not in table and \
            getattr(node.target, "overloadpacket", None) not in table:
        return False
    val = node.meta.get("val")
    values = val if isinstance(val, (tuple, list)) else [val]
    for v in values:
        if v is None or not hasattr(v, "shape"):
            continue
        if str(v.dtype) != "torch.float32" and node.target is not operator.getitem:
            # extra results (indices, masks) may be other dtypes: getitem picks
            if v is values[0]:
                return False
        if any(dim_of(d) is None for d in v.shape):
            return False  # an expression of symbolic dims (s0 * 4): no spec form
    if node.target is operator.getitem:
        return str(getattr(val, "dtype", "")) == "torch.float32" and _supported_locally(node.args[0], table, refused)
    return True


def fusable_runs(gm, refused=()):
    """The runs of nodes that the local rules allow, as lists of node names in graph order
    (before the translation splits any)."""
    return [[n.name for n in nodes] for nodes in _propose(gm, _handlers(), set(refused))]


def _propose(gm, table, refused):
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class Support(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return _supported_locally(node, table, refused)

    partitions = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True).propose_partitions()
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    runs = [sorted(p.nodes, key=order.get) for p in partitions]
    return sorted(runs, key=lambda nodes: order[nodes[0]])


class _Run:
    """One run translated: its spec, its arguments' source nodes and how each needed value comes back."""

    def __init__(self, nodes, translator, results):
        self.nodes = nodes
        self.translator = translator
        self.results = results  # [(node, ('output', name, shape) | ('state', argument name))]


def _translate(gm, nodes, table):
    """A _Run, or None when the run computes nothing (views and getitems only)."""
    inside = set(nodes)
    translator = Translator("fused", lambda node: _argument_kind(gm, node), who="torch.compile backend")
    translator.translate(nodes, table)
    if not translator.statements:
        return None
    needed = [n for n in nodes if any(user not in inside for user in n.users)]
    results = []
    for node in needed:
        results.append((node, translator.add_output(node, "out%d" % len(translator.outputs))))
    given = {d for a in translator.arguments for d in a.shape if isinstance(d, str)}
    for node, result in results:
        missing = [d for d in (result[2] if result[0] == "output" else ()) if isinstance(d, str) and d not in given]
        if missing:  # the op's fake implementation could not give this dim
            translator.fail("its symbolic dim %s is no dim of the fusion's arguments" % missing[0], node)
    return _Run(nodes, translator, results)


def _argument_kind(gm, node):
    if node.op == "get_attr":
        value = gm
        for part in node.target.split("."):
            value = getattr(value, part)
        return ("constant", node.name, value)
    return ("input", node.name, None)


def partition_graph(gm, example_inputs, precision=None, device=0):
    """gm (an aot_autograd ATen graph) with each maximal run of nodes that fusegen maps
    replaced by a call of one fusion's custom op (torch.ops.fusegen.fused_<hash>); the
    other nodes stay. Loads each fusion on the runtime of `device` (no GPU needed to load)."""
    import torch
    from torch.fx.passes.tools_common import legalize_graph
    table = _handlers()
    refused = set()
    while True:  # each pass refuses one more node, so this ends
        translated = []
        try:
            for nodes in _propose(gm, table, refused):
                run = _translate(gm, nodes, table)
                if run is not None:
                    run.op = _op(run.translator, precision, device)
                    translated.append(run)
        except UnsupportedModuleError as e:
            if e.node is None or e.node in refused:
                raise
            refused.add(e.node)
            continue
        break
    sizes = _SizeNodes(gm)
    for symbol in sorted({d for run in translated for d in run.translator.symbols}):
        sizes.get(symbol)  # each symbol's node first: a failure here leaves the graph as it was
    for run in translated:
        _replace(gm, run, run.op, torch, sizes)
    legalize_graph(gm)
    gm.graph.lint()
    gm.recompile()
    with _lock:
        compiled_graphs.append(gm)
        del compiled_graphs[:-_KEEP]
    return gm


def _op(translator, precision, device):
    """The custom op of the run's fusion, made once per spec text, device and precision."""
    from ._runtime import Runtime
    body = translator.spec()
    digest = hashlib.sha1(("%s|%s|%s" % (body, precision, device)).encode()).hexdigest()[:16]
    translator.name = "fused_" + digest + (" (precision=%s)" % precision if precision else "")
    spec = translator.spec()
    key = (spec, device, precision)
    with _lock:
        op = _ops.get(key)
        if op is not None:
            return op
        runtime = _runtimes.get((device, precision))
        if runtime is None:
            runtime = _runtimes[(device, precision)] = Runtime(device, precision=precision)
        try:
            function = runtime.load_string(spec, name="<torch.compile fused_%s>" % digest).function()
        except SpecError as e:  # the node of the statement stays with the fallback; no crash
            _refuse_statement(translator, spec, e)
        op = function.torch_op(namespace="fusegen", name="fused_" + digest)
        _ops[key] = op
        _specs[op.name()] = spec
    return op


def _refuse_statement(translator, spec, error):
    """A spec that fusegen's check refuses (at symbolic dims, mostly): refuses the node whose
    statement the error names (that node stays with the fallback), else the run's first node."""
    import re
    match = re.search(r":(\d+):\d+: error", str(error))
    node = None
    if match:
        line = spec.splitlines()[int(match.group(1)) - 1].strip() if int(match.group(1)) <= len(
            spec.splitlines()) else ""
        for index, statement in enumerate(translator.statements):
            if statement == line or line.startswith(statement):
                node = translator.lines.get(index)
                break
    if node is None:
        node = next(iter(translator.lines.values()), None)
    first = str(error).strip().splitlines()[0]
    reason = ("fusegen refuses it at symbolic dims %s: %s" % (sorted(translator.symbols), first)
              if translator.symbols else "fusegen refuses the statement: %s" % first)
    translator.fail(reason, node)


class _SizeNodes:
    """FX nodes that give each symbolic dim's value at run time (for the reshapes and views
    around the fusions): a SymInt placeholder of that symbol, else aten.sym_size.int of a
    placeholder tensor that has it."""

    def __init__(self, gm):
        self.gm = gm
        self.known = {}

    def get(self, symbol):
        if symbol in self.known:
            return self.known[symbol]
        import torch
        graph = self.gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        found = None
        for node in placeholders:
            val = node.meta.get("val")
            if not hasattr(val, "shape") and val is not None and dim_of(val) == symbol:
                found = node
                break
        if found is None:
            for node in placeholders:
                val = node.meta.get("val")
                dims = [dim_of(d) for d in getattr(val, "shape", ())]
                if symbol in dims:
                    with graph.inserting_after(node):
                        found = graph.call_function(torch.ops.aten.sym_size.int, (node, dims.index(symbol)))
                    found.meta["val"] = val.shape[dims.index(symbol)]
                    break
        if found is None:
            raise UnsupportedModuleError("fusegen: torch.compile backend: no graph input gives the symbolic dim "
                                         "'%s'" % symbol)
        self.known[symbol] = found
        return found

    def shape(self, shape):
        return [self.get(d) if isinstance(d, str) else d for d in shape]


def spec_of(op):
    """The spec text of a fusion op the backend made (torch.ops.fusegen.fused_<hash>)."""
    name = op.name() if hasattr(op, "name") else str(op)
    return _specs[name if "::" in name else "fusegen::" + name]


def _aligned(val):
    """Whether the tensor starts 16 bytes into its storage's alignment, without a guard on a symbolic offset."""
    offset = val.storage_offset()
    if type(offset) is int:
        return offset % 4 == 0
    from torch.fx.experimental.symbolic_shapes import statically_known_true
    return statically_known_true(offset % 4 == 0)


def _replace(gm, run, op, torch, sizes):
    graph = gm.graph
    aten = torch.ops.aten
    arguments = run.translator.arguments
    with graph.inserting_after(run.nodes[-1]):
        passed = {}
        for a in arguments:
            node = a.source
            val = node.meta.get("val")
            if val is not None and (not val.is_contiguous() or not _aligned(val)):
                # fusegen takes contiguous, 16-byte aligned tensors: a copy of a strided view
                node = graph.call_function(aten.clone.default, (node,), {"memory_format": torch.contiguous_format})
            if a.view:
                node = graph.call_function(aten.reshape.default, (node, sizes.shape(a.shape)))
            if a.kind == "state":  # the fusion writes it: a copy, whose new value is the functional result
                node = graph.call_function(aten.clone.default, (node,))
            passed[a.name] = node
        call = graph.call_function(op, tuple(passed[a.name] for a in arguments))
        outputs = [o[0] for o in run.translator.outputs]
        spec_shapes = {o[0]: tuple(o[3]) for o in run.translator.outputs}
        replacements = []
        for node, result in run.results:
            if result[0] == "state":
                replacements.append((node, passed[result[1]]))
                continue
            _, name, shape = result
            value = call if len(outputs) == 1 else graph.call_function(operator.getitem, (call, outputs.index(name)))
            if spec_shapes[name] != tuple(shape):
                value = graph.call_function(aten.view.default, (value, sizes.shape(shape)))
            replacements.append((node, value))
    for node, value in replacements:
        node.replace_all_uses_with(value)
    for node in reversed(run.nodes):
        if not node.users:
            graph.erase_node(node)
