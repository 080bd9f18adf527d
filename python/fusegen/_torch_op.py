"""A fusion as a torch.library custom op: `op = f.torch_op()`, then
`op(x, w, b)` or `torch.ops.fusegen.<fusion>(x, w, b)`.

What PyTorch's machinery needs to see through a fusion:
- a schema that declares the state tensors the fusion writes (Tensor(a0!)),
  so functionalization (torch.compile, torch.export) knows about the mutation;
- a fake implementation: output shapes from fusegen's own shape inference
  (the C library, no device and no data pointers), outputs as new float32
  tensors on the inputs' device;
- an Autograd kernel that refuses inputs that require grad in grad mode
  (fusions have no backward: never a silently detached output).
torch is imported here only, when the first op is registered.
"""

import threading

from . import _tensors
from ._errors import ArgumentError

_registered = {}  # "namespace::name" -> (Function, OpOverload, torch.library.Library)
_lock = threading.Lock()


def schema(function, name):
    """The op's schema: arguments in declaration order, state ones mutable."""
    args = []
    mutated = 0
    for spec in function.arguments:
        if spec.kind == "state":
            args.append("Tensor(a%d!) %s" % (mutated, spec.name))
            mutated += 1
        else:
            args.append("Tensor %s" % spec.name)
    returns = "Tensor" if len(function.outputs) == 1 else "(%s)" % ", ".join("Tensor" for _ in function.outputs)
    return "%s(%s) -> %s" % (name, ", ".join(args), returns)


def _check_name(what, value):
    if not isinstance(value, str) or not value.isidentifier():
        raise ArgumentError("fusegen: torch_op: %s must be a Python identifier, not %r" % (what, value))


def register(function, namespace="fusegen", name=None):
    """The custom op torch.ops.<namespace>.<name> (default: the fusion's name) that runs
    `function`; registered once per name (again for the same Function: the same op)."""
    name = function.name if name is None else name
    _check_name("namespace", namespace)
    _check_name("name", name)
    qualname = "%s::%s" % (namespace, name)
    with _lock:
        known = _registered.get(qualname)
        if known is not None:
            if known[0] is not function:
                raise ArgumentError(
                    "fusegen: torch_op: %s is already the op of another fusegen.Function (%s); give this one "
                    "another name or namespace: f.torch_op(name=...)" % (qualname, known[0].signature))
            return known[1]
        op, library = _define(function, namespace, name, qualname)
        _registered[qualname] = (function, op, library)
    return op


def _define(function, namespace, name, qualname):
    import torch
    _tensors.require_torch("torch_op")
    if hasattr(getattr(torch.ops, namespace), name):
        raise ArgumentError("fusegen: torch_op: torch already has an op %s (not made here); give another name "
                            "or namespace: f.torch_op(name=...)" % qualname)
    library = torch.library.Library(namespace, "FRAGMENT")
    library.define(schema(function, name))
    names = function.argument_names

    def kernel(*args):  # CUDA tensors: the fusion itself, on torch's current stream
        return function.call(dict(zip(names, args)))

    library.impl(name, kernel, "CUDA")
    torch.library.register_fake(qualname, lambda *args: fake_outputs(function, args), lib=library)
    op = getattr(getattr(torch.ops, namespace), name).default
    library.impl(name, _autograd_kernel(torch, function, op), "Autograd")
    return op, library


def _autograd_kernel(torch, function, op):
    """Refuses a call that autograd would record (no backward), else runs the op below
    autograd and bumps the version of the state tensors it wrote (as in-place ops do)."""
    state = [i for i, spec in enumerate(function.arguments) if spec.kind == "state"]
    bump = getattr(getattr(torch.autograd, "graph", None), "increment_version", None)

    def autograd(*args):
        if torch.is_grad_enabled():
            for spec, a in zip(function.arguments, args):
                if a.requires_grad:
                    raise _tensors.grad_error("argument '%s' of %s" % (spec.name, function.name))
        with torch._C._AutoDispatchBelowAutograd():
            result = op(*args)
        if bump is not None and state:
            bump(tuple(args[i] for i in state))
        return result

    return autograd


def fake_outputs(function, args):
    """New float32 tensors of the output shapes on the inputs' device, from shapes alone."""
    if len(args) != len(function.arguments):
        raise ArgumentError("fusegen: %s takes %d tensors, not %d" % (function.name, len(function.arguments),
                                                                      len(args)))
    device = args[0].device
    for spec, a in zip(function.arguments, args):
        what = "argument '%s' of %s" % (spec.name, function.name)
        if str(a.dtype) != "torch.float32":
            raise ArgumentError("fusegen: %s has dtype %s; fusegen takes float32 tensors" % (what, a.dtype))
        if a.device != device:  # the kernel itself is registered for CUDA only
            raise ArgumentError("fusegen: %s is on %s; the op's tensors must all be on one device (%s is on %s)"
                                % (what, a.device, function.arguments[0].name, device))
    sizes = [tuple(a.shape) for a in args]
    if all(type(d) is int for s in sizes for d in s):
        shapes = function._output_shapes(tuple(sizes))[2]
    else:
        shapes = symbolic_output_shapes(function, sizes)
    return _results(function, [args[0].new_empty(s) for s in shapes])


def _results(function, outputs):
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _hint(d):
    """A concrete value of a dim (a SymInt's example value), or None."""
    if type(d) is int:
        return d
    node = getattr(d, "node", None)
    hint = getattr(node, "hint", None)
    return hint if isinstance(hint, int) else None


def symbolic_output_shapes(function, sizes):
    """Output shapes with SymInts (dynamic shapes): each output dim is a constant or a dim
    symbol of the spec bound by an input; the example values are checked by the library.
    Dims that the spec ties together (one symbol, or a constant) are told to torch."""
    import torch
    bound = {}
    for spec, size in zip(function.arguments, sizes):
        if len(size) != len(spec.dims):
            raise ArgumentError("fusegen: argument '%s' of %s has rank %d; the spec says %s" % (
                spec.name, function.name, len(size), list(spec.dims)))
        for want, d in zip(spec.dims, size):
            if isinstance(want, int):
                torch._check(d == want)
            elif want in bound:
                torch._check(d == bound[want])
            else:
                bound[want] = d
    hints = [tuple(_hint(d) for d in s) for s in sizes]
    if all(h is not None for s in hints for h in s):
        function._output_shapes(tuple(hints))  # the library's checks on the example shapes
    shapes = []
    for spec in function.outputs:
        shape = []
        for want in spec.dims:
            if isinstance(want, int):
                shape.append(want)
            elif want in bound:
                shape.append(bound[want])
            else:
                raise ArgumentError(
                    "fusegen: %s: output '%s' has dim '%s', which no input dim gives; with dynamic shapes "
                    "fusegen takes output dims that are constants or input dims (mark the inputs static, e.g. "
                    "torch.compile(dynamic=False))" % (function.name, spec.name, want))
        shapes.append(tuple(shape))
    return shapes
