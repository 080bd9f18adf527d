"""Turns the caller's tensors into (shape, device pointer) pairs, with clear
errors for what fusegen cannot take.

torch is never imported here unless it is needed: a torch tensor can only be
passed if the caller already imported torch, so `sys.modules` tells whether
to look for one; torch is imported only to allocate outputs.
"""

import operator
import sys

from ._errors import ArgumentError

# Filled by torch_tensor_type() once torch is loaded in this process.
TorchTensor = None   # torch.Tensor
float32 = None       # torch.float32
empty = None         # torch.empty
empty_like = None    # torch.empty_like, or None where the torch module has none
raw_stream = None    # device index -> the current stream's handle (int)
Parameter = None     # torch.nn.Parameter, or None where the torch module has none
torch_version = None  # torch.__version__, or None where the torch module has none
grad_enabled = None  # torch.is_grad_enabled (a stand-in torch without it: never)


def _bind(torch):
    global TorchTensor, float32, empty, empty_like, raw_stream, Parameter, torch_version, grad_enabled
    float32 = torch.float32
    grad_enabled = getattr(torch, "is_grad_enabled", None) or (lambda: False)
    torch_version = getattr(torch, "__version__", None)
    Parameter = getattr(getattr(torch, "nn", None), "Parameter", None)
    empty = torch.empty
    empty_like = getattr(torch, "empty_like", None)
    getter = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if getter is None:  # the public, slower way (it builds a Stream object per call)
        def getter(device):
            return torch.cuda.current_stream(device).cuda_stream
    raw_stream = getter
    TorchTensor = torch.Tensor  # last: the fast path tests this one


def torch_tensor_type():
    """torch.Tensor if torch is loaded in this process, else None (cheap: no import)."""
    if TorchTensor is None:
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(torch, "Tensor") or not hasattr(torch, "empty"):
            return None
        _bind(torch)
    return TorchTensor


def require_torch(why):
    """Imports torch (for allocating outputs); ArgumentError if it is not installed."""
    if TorchTensor is None:
        try:
            import torch
        except ImportError:
            raise ArgumentError("fusegen: %s needs torch to allocate outputs, and torch is not installed; "
                                "pass the outputs with out={name: tensor}" % why) from None
        _bind(torch)
    return TorchTensor


def needs_grad(tensor):
    """Whether autograd would want a graph through `tensor` (a bound torch's tensor): fusegen
    has no backward, so such a call is refused rather than silently detached."""
    return getattr(tensor, "requires_grad", False) and grad_enabled()


def grad_error(what):
    return ArgumentError(
        "fusegen: %s requires grad and grad mode is on, but fusegen fusions have no backward (the "
        "output would be silently detached); call it under torch.no_grad() or torch.inference_mode(), "
        "or pass .detach()" % what)


def _shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def usable_torch(tensor, device):
    """Whether `tensor` is a torch tensor fusegen takes as it is: float32,
    contiguous, on CUDA device `device` (the checks torch_problem words). torch
    must be bound (torch_tensor_type() not None)."""
    return (isinstance(tensor, TorchTensor) and tensor.dtype is float32 and tensor.is_cuda
            and tensor.get_device() == device and tensor.is_contiguous())


def torch_problem(what, tensor, device):
    """Why a torch tensor cannot be passed (None if it can)."""
    if not tensor.is_cuda:
        return "%s is a tensor on %s; fusegen needs CUDA tensors (on cuda:%d)" % (what, tensor.device, device)
    if tensor.get_device() != device:
        return ("%s is on %s, but this function's runtime is on device %d (load the spec with "
                "fusegen.load(..., device=%d) or a Runtime(device=%d))"
                % (what, tensor.device, device, tensor.get_device(), tensor.get_device()))
    if tensor.dtype is not float32:
        return "%s has dtype %s; fusegen takes float32 tensors (convert with .float())" % (what, tensor.dtype)
    if not tensor.is_contiguous():
        return ("%s is not contiguous (shape %s, strides %s); fusegen takes contiguous row-major tensors "
                "(pass .contiguous())" % (what, _shape_text(tensor.shape), tuple(tensor.stride())))
    return None


def _contiguous(shape, strides, itemsize):
    """Whether byte `strides` are row-major contiguous for `shape` (dims of size 1 may have any stride)."""
    if strides is None:
        return True
    if len(strides) != len(shape):
        return False
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _interface_stream(what, stream):
    """The producer stream of a __cuda_array_interface__ (v3 `stream`): None (nothing to wait
    for) or a CUstream handle (1: the legacy default stream, 2: the per-thread default stream)."""
    if stream is None:
        return None
    try:
        handle = None if isinstance(stream, bool) else operator.index(stream)
    except TypeError:
        handle = None
    if handle == 0:
        raise ArgumentError("fusegen: %s has __cuda_array_interface__ stream 0, which the interface disallows "
                            "(None: nothing to wait for; 1: the legacy default stream; 2: the per-thread default "
                            "stream; else a CUstream handle)" % what)
    if handle is None or not 0 < handle < 1 << 64:
        raise ArgumentError("fusegen: %s has __cuda_array_interface__ stream %r; it must be None or a CUstream "
                            "handle (an int; 1: the legacy default stream, 2: the per-thread default stream)"
                            % (what, stream))
    return handle


def cuda_array(what, value, writable):
    """(shape tuple, pointer, stream) of an object exposing __cuda_array_interface__ (float32,
    contiguous); stream is the producer's (None when there is nothing to wait for)."""
    try:
        cai = value.__cuda_array_interface__
        shape = tuple(int(d) for d in cai["shape"])
        typestr = cai["typestr"]
        pointer, readonly = cai["data"]
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise ArgumentError("fusegen: %s has an unusable __cuda_array_interface__ (%s)" % (what, e)) from None
    if typestr not in ("<f4", "=f4") or (typestr == "=f4" and sys.byteorder != "little"):
        raise ArgumentError("fusegen: %s has typestr %r; fusegen takes float32 ('<f4')" % (what, typestr))
    if cai.get("mask") is not None:
        raise ArgumentError("fusegen: %s is a masked array; fusegen takes plain float32 arrays" % what)
    strides = cai.get("strides")
    if not _contiguous(shape, strides, 4):
        raise ArgumentError("fusegen: %s is not contiguous (shape %s, byte strides %s); fusegen takes "
                            "contiguous row-major arrays" % (what, _shape_text(shape), tuple(strides)))
    if writable and readonly:
        raise ArgumentError("fusegen: %s is read-only, but fusegen writes it" % what)
    return shape, int(pointer or 0), _interface_stream(what, cai.get("stream"))


def adapt(what, value, device, writable):
    """(shape, pointer, is_torch, stream) for any tensor-like `value`, or ArgumentError saying why
    not. `stream` is the __cuda_array_interface__'s producer stream to wait for, or None (always
    for torch tensors, which are taken to be ready on torch's current stream).

    The slow, general path: the call path handles torch tensors itself and
    comes here for everything else (and to word its errors)."""
    Tensor = torch_tensor_type()
    if Tensor is not None and isinstance(value, Tensor):
        problem = torch_problem(what, value, device)
        if problem:
            raise ArgumentError("fusegen: " + problem)
        if needs_grad(value):
            raise grad_error(what)
        return value.shape, value.data_ptr(), True, None
    if hasattr(value, "__cuda_array_interface__"):
        shape, pointer, stream = cuda_array(what, value, writable)
        return shape, pointer, False, stream
    if hasattr(value, "__dlpack__"):
        # DLPack producers go through torch, which checks the device for us.
        Tensor = require_torch("a DLPack argument")
        import torch.utils.dlpack
        converted = torch.utils.dlpack.from_dlpack(value)
        problem = torch_problem(what, converted, device)
        if problem:
            raise ArgumentError("fusegen: " + problem)
        return converted.shape, converted.data_ptr(), True, None
    raise ArgumentError("fusegen: %s must be a CUDA tensor (a torch.Tensor or an object with "
                        "__cuda_array_interface__), not %s" % (what, type(value).__name__))


def as_shape(what, value):
    """A shape tuple from a tensor-like or a sequence of ints (for output_shapes)."""
    if hasattr(value, "shape") and not isinstance(value, (tuple, list)):
        return tuple(int(d) for d in value.shape)
    if hasattr(value, "__cuda_array_interface__"):
        return tuple(int(d) for d in value.__cuda_array_interface__["shape"])
    try:
        return tuple(int(d) for d in value)
    except (TypeError, ValueError):
        raise ArgumentError("fusegen: %s must be a shape (a sequence of ints) or a tensor, not %s"
                            % (what, type(value).__name__)) from None
