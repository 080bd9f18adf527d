"""Arguments from a torch nn.Module: run a PyTorch model's own weights through a fusion."""

from . import _tensors
from ._errors import ArgumentError


def _attribute(module, spec_name, dotted):
    value = module
    walked = []
    for part in dotted.split("."):
        if not part:
            raise ArgumentError("fusegen: module_arguments: '%s' -> '%s' is not a dotted attribute name"
                                % (spec_name, dotted))
        try:
            value = getattr(value, part)
        except AttributeError:
            where = type(module).__name__ + ("." + ".".join(walked) if walked else "")
            raise ArgumentError("fusegen: module_arguments: '%s' -> '%s': %s (%s) has no attribute '%s'"
                                % (spec_name, dotted, where, type(value).__name__, part)) from None
        walked.append(part)
    if value is None:
        raise ArgumentError("fusegen: module_arguments: '%s' -> '%s' is None (e.g. a layer built with "
                            "bias=False or affine=False)" % (spec_name, dotted))
    return value


class _Reshaped:
    """A reshaped view of an object exposing __cuda_array_interface__ (same memory)."""

    def __init__(self, base, shape):
        self._base = base  # keeps the memory alive
        interface = dict(base.__cuda_array_interface__)
        interface["shape"] = tuple(shape)
        interface["strides"] = None
        self.__cuda_array_interface__ = interface
        self.shape = tuple(shape)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _fit(function, spec_name, dotted, value):
    """`value` in the spec's shape: itself, or a view of the same memory.

    Only a view is ever made: a copy would hide in-place updates of state
    tensors (running stats) from the module. A view needs the same number of
    elements and contiguous memory; symbolic dims are left to the call."""
    spec = {s.name: s for s in function.arguments}.get(spec_name)
    if spec is None:
        raise ArgumentError("fusegen: module_arguments: %s has no argument '%s'; its arguments are %s"
                            % (function.name, spec_name, ", ".join(function.argument_names)))
    if not all(isinstance(d, int) for d in spec.dims):
        return value
    wanted = tuple(spec.dims)
    shape = tuple(int(d) for d in _tensors.as_shape(spec_name, value))
    if shape == wanted:
        return value
    if _numel(shape) != _numel(wanted):
        raise ArgumentError("fusegen: module_arguments: '%s' -> '%s' has shape %s; %s needs %s"
                            % (spec_name, dotted, list(shape), function.name, list(wanted)))
    Tensor = _tensors.torch_tensor_type()
    if Tensor is not None and isinstance(value, Tensor):
        if not value.is_contiguous():
            raise ArgumentError("fusegen: module_arguments: '%s' -> '%s' has shape %s and is not contiguous, so it "
                                "cannot be viewed as %s" % (spec_name, dotted, list(shape), list(wanted)))
        return value.view(wanted)
    if hasattr(value, "__cuda_array_interface__"):
        _tensors.cuda_array("'%s' -> '%s'" % (spec_name, dotted), value, False)  # contiguity and dtype
        return _Reshaped(value, wanted)
    raise ArgumentError("fusegen: module_arguments: '%s' -> '%s' is a %s, not a tensor"
                        % (spec_name, dotted, type(value).__name__))


def module_arguments(module, names, function=None, **extra):
    """{spec argument name: tensor} from a module's parameters and buffers.

    names: {spec name: dotted attribute path}, e.g. {"w": "fc.weight",
    "running_mean": "bn.running_mean"}; a value that is not a string is taken
    as the tensor itself. extra: more arguments by name (e.g. x=x).
    With `function`, each tensor is checked against the signature's constant
    dims, and a tensor with the same number of elements but another shape
    (a [C, 1, 1] scale for a [C] argument, say) is passed as a view of the
    same memory if it is contiguous, so state updates still reach the module."""
    if not isinstance(names, dict):
        raise ArgumentError("fusegen: module_arguments: names must be a dict {spec name: 'dotted.attribute'}")
    result = {}
    for spec_name, dotted in names.items():
        if isinstance(dotted, str):
            value = _attribute(module, spec_name, dotted)
        else:
            value, dotted = dotted, "<given>"
        if function is not None:
            value = _fit(function, spec_name, dotted, value)
        result[spec_name] = value
    for spec_name, value in extra.items():
        if spec_name in result:
            raise ArgumentError("fusegen: module_arguments: '%s' is given twice" % spec_name)
        result[spec_name] = value
    return result
