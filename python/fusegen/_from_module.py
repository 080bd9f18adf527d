"""fusegen.from_module: a PyTorch module's forward as a fusion, with no spec written by hand.

The forward is captured with torch.export at the ATen level (functional: a
training-mode batch norm's running-stat update is an output of the graph),
every node is mapped to fusegen ops (_fx_ops.py), and the spec is loaded.
The result runs the fusion on the module's own parameters and buffers.
"""

import re

from ._errors import UnsupportedModuleError
from ._fx_translate import StateAfter, Translator, source_line
from ._modules import module_arguments


def _export(module, args, dynamic_shapes=None):
    import torch
    try:
        program = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # torch's own message says what it could not trace
        raise UnsupportedModuleError("fusegen: from_module: torch.export could not capture %s.forward: %s: %s" % (
            type(module).__name__, type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")) from e
    # Functional ATen with torch's composite ops kept where export keeps them (linear, conv2d, ...).
    return program.run_decompositions({})


def _needed(nodes_out):
    """The call_function nodes that the given nodes depend on (themselves included)."""
    seen, stack = set(), list(nodes_out)
    while stack:
        node = stack.pop()
        if node in seen or node.op != "call_function":
            continue
        seen.add(node)
        stack.extend(node.all_input_nodes)
    return seen


def _counter_increment(node, placeholder_fqn):
    """k when `node` is `buffer + k` of an integer buffer (a batch norm's num_batches_tracked), else None."""
    if node.op != "call_function" or getattr(node.target, "__name__", "") not in ("add.Tensor", "add.Scalar"):
        return None
    source, amount = node.args[0], node.args[1] if len(node.args) > 1 else None
    val = node.meta.get("val")
    if source in placeholder_fqn and isinstance(amount, int) and val is not None and not val.dtype.is_floating_point:
        return amount
    return None


class ModuleFusion:
    """A module's forward as a loaded fusion. Call it like the module (same inputs);
    it runs fusegen on the module's own parameters and buffers, and updates running
    statistics (and num_batches_tracked) as the module's forward would.

    spec: the spec text. names: {spec argument: module attribute} for
    fusegen.module_arguments (a constant the forward makes is the tensor itself).
    inputs: the forward's inputs as the spec's argument names (None: unused).
    function: the loaded fusegen.Function."""

    def __init__(self, module, spec, names, inputs, input_views, counters, outputs, out_spec, function):
        self.module = module
        self.spec = spec
        self.names = names
        self.inputs = inputs
        self._input_views = input_views
        self._counters = counters
        self._outputs = outputs
        self._out_spec = out_spec
        self.function = function

    def __repr__(self):
        return "<fusegen.ModuleFusion %s of %s>" % (self.function.name, type(self.module).__name__)

    def _symbols(self, inputs):
        """{symbolic dim: size} of a call (dynamic_shapes): read off the inputs declared in their own rank."""
        symbols = {}
        for tensor, views in zip(inputs, self._input_views):
            for _, shape in views:
                if len(shape) == len(tensor.shape):
                    for want, size in zip(shape, tensor.shape):
                        if isinstance(want, str):
                            symbols.setdefault(want, int(size))
        return symbols

    def _sizes(self, shape, symbols):
        if not any(isinstance(d, str) for d in shape):
            return shape
        missing = [d for d in shape if isinstance(d, str) and d not in symbols]
        if missing:
            raise UnsupportedModuleError("fusegen: %s: no input gives the symbolic dim '%s'" % (
                self.function.name, missing[0]))
        return tuple(symbols[d] if isinstance(d, str) else d for d in shape)

    def arguments(self, *inputs):
        """{spec argument: tensor} for a call with these forward inputs."""
        return self._arguments(inputs, self._symbols(inputs))

    def _arguments(self, inputs, symbols):
        if len(inputs) != len(self.inputs):
            raise UnsupportedModuleError("fusegen: %s takes the %d inputs of %s.forward, not %d" % (
                self.function.name, len(self.inputs), type(self.module).__name__, len(inputs)))
        extra = {}
        for tensor, views in zip(inputs, self._input_views):
            for spec_name, shape in views:
                shape = self._sizes(shape, symbols)
                extra[spec_name] = tensor if tuple(tensor.shape) == shape else tensor.reshape(shape)
        return module_arguments(self.module, self.names, function=self.function, **extra)

    def __call__(self, *inputs):
        import torch
        from torch.utils import _pytree
        symbols = self._symbols(inputs)
        results = self.function(**self._arguments(inputs, symbols))
        results = results if isinstance(results, tuple) else (results,)
        by_name = dict(zip(self.function.output_names, results))
        flat = [by_name[name].view(self._sizes(shape, symbols)) for name, shape in self._outputs]
        if self._counters:
            with torch.no_grad():
                for dotted, amount in self._counters:
                    _attribute(self.module, dotted).add_(amount)
        return _pytree.tree_unflatten(flat, self._out_spec)


def _attribute(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


def _fusion_name(module, name):
    if name is None:
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", type(module).__name__).lower()
    name = re.sub(r"\W", "_", name)
    return name if name and not name[0].isdigit() else "m_" + name


def translate_module(module, example_inputs, name=None, precision=None, dynamic_shapes=None):
    """(spec text, {spec name: attribute}, per-input [(spec name, shape)], counters, [(output name, shape)],
    out_spec) of module's forward at the example inputs' shapes (dims that dynamic_shapes makes dynamic:
    the spec's symbolic dims, named as torch.export's symbols, s0 ...); no library needed."""
    from ._fx_ops import handlers
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    program = _export(module, args, dynamic_shapes)
    graph = program.graph
    signature = program.graph_signature
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    kinds, fqn = {}, {}
    user_inputs = []
    for spec in signature.input_specs:
        node = placeholders[spec.arg.name]
        kind = spec.kind.name
        if kind == "USER_INPUT":
            kinds[node] = ("input", spec.arg.name, None)
            user_inputs.append(node)
        elif kind in ("PARAMETER", "BUFFER"):
            kinds[node] = ("param", spec.target.replace(".", "_"), None)
            fqn[node] = spec.target
        elif kind == "CONSTANT_TENSOR":
            kinds[node] = ("constant", "constant", program.constants[spec.target])
        else:
            raise UnsupportedModuleError("fusegen: from_module: %s.forward takes a %s (%s), which fusegen cannot "
                                         "pass" % (type(module).__name__, kind.lower(), spec.arg.name))

    output_node = next(n for n in graph.nodes if n.op == "output")
    returned = list(output_node.args[0])
    user_outputs, mutations, counters = [], [], []
    for spec, node in zip(signature.output_specs, returned):
        kind = spec.kind.name
        if kind == "USER_OUTPUT":
            user_outputs.append(node)
        elif kind == "BUFFER_MUTATION":
            amount = _counter_increment(node, fqn)
            if amount is not None:
                counters.append((spec.target, amount))  # done in torch after the call
            else:
                mutations.append((node, spec.target))
        else:
            raise UnsupportedModuleError("fusegen: from_module: %s.forward has a %s output (%s), which fusegen "
                                         "cannot express" % (type(module).__name__, kind.lower(), spec.target))
    for node in user_outputs:
        if not hasattr(node, "op"):
            raise UnsupportedModuleError("fusegen: from_module: %s.forward returns %r, not a tensor"
                                         % (type(module).__name__, node))
    needed = _needed(user_outputs + [n for n, _ in mutations])
    nodes = [n for n in graph.nodes if n in needed]

    fusion_name = _fusion_name(module, name)
    translator = Translator(fusion_name + (" (precision=%s)" % precision if precision else ""),
                            lambda node: kinds.get(node) or ("input", node.name, None))
    translator.translate(nodes, handlers())
    outputs = []
    for i, node in enumerate(user_outputs):
        result = translator.add_output(node, "y" if len(user_outputs) == 1 else "y%d" % i)
        if result[0] != "output":
            translator.fail("the forward returns a running statistic after its update", node)
        outputs.append(result[1:])
    by_name = {a.name: a for a in translator.arguments}
    for node, target in mutations:
        v = translator.env.get(node)
        source = by_name[v.name].source if isinstance(v, StateAfter) else None
        if source is None or fqn.get(source) != target:
            translator.fail("the buffer %s is updated in a way fusegen cannot express (only a training-mode batch "
                            "norm's running statistics are)" % target, node)

    names, input_views = {}, [[] for _ in user_inputs]
    for a in translator.arguments:
        wanted, _, tensor = kinds.get(a.source, ("input", None, None))
        if wanted == "input":
            input_views[user_inputs.index(a.source)].append((a.name, a.shape))
        elif wanted == "constant":
            names[a.name] = tensor
        else:
            names[a.name] = fqn[a.source]
    translator.comment = "%s.forward, mapped by fusegen.from_module from torch.export's ATen graph." % (
        type(module).__name__)
    out_spec = program.call_spec.out_spec
    return translator.spec(), names, input_views, counters, outputs, out_spec


def from_module(module, example_inputs, *, name=None, precision=None, runtime=None, dynamic_shapes=None):
    """The module's forward as a fusegen fusion (a ModuleFusion): captured with torch.export at the
    example inputs' shapes, mapped node by node to fusegen ops, loaded on `runtime` (default: the
    default runtime of the CUDA device of the module's tensors or the inputs, else of device 0). Refuses with
    UnsupportedModuleError naming the first node fusegen cannot express (op and source line).
    precision: None (strict) or 'tf32', written into the spec. Call the result like the module:
    fusion(*inputs), under torch.no_grad() when the parameters require grad.
    dynamic_shapes: torch.export's (e.g. {"x": {0: torch.export.Dim("batch")}}): those dims become
    symbolic dims of the spec, so the one fusion takes every size (the JIT specializes per call shape);
    a dim that becomes an expression of symbols (a 3x3 convolution's H - 2) is refused."""
    from ._runtime import default_runtime
    spec, names, input_views, counters, outputs, out_spec = translate_module(module, example_inputs, name,
                                                                             precision, dynamic_shapes)
    if runtime is None:
        tensors = list(module.parameters()) + list(module.buffers()) + [
            t for t in (example_inputs if isinstance(example_inputs, (tuple, list)) else [example_inputs])
            if hasattr(t, "is_cuda")]
        device = next((t.device for t in tensors if t.is_cuda), None)
        runtime = default_runtime(device if device is not None else 0)
    function = runtime.load_string(spec, name="<from_module %s>" % type(module).__name__).function()
    inputs = [views[0][0] if views else None for views in input_views]
    return ModuleFusion(module, spec, names, inputs, input_views, counters, outputs, out_spec, function)


__all__ = ["ModuleFusion", "from_module", "translate_module", "source_line"]
