"""fusegen for Python: call fused CUDA kernels generated from a spec on torch tensors.

    import fusegen
    f = fusegen.load("spec.fg").function("name")
    y = f(x=x, w=w, b=b)

See docs/python.md. The C library (libfusegen.so) is loaded on first use, from
$FUSEGEN_LIBRARY if set, else from the package (placed there by
`pip install ./python`); torch is imported only when needed.
"""

from ._errors import (ArgumentError, CompileError, DriverError, Error, InternalError, IoError,
                      LibraryNotFoundError, NoDriverError, SpecError, UnsupportedModuleError)
from ._from_module import ModuleFusion, from_module
from ._function import Function, TensorSpec
from ._modules import module_arguments
from ._runtime import Program, Runtime, default_runtime, load, load_string

__version__ = "0.1.0"


def torch_op(function, namespace="fusegen", name=None):
    """`function` (a fusegen.Function) as a torch.library custom op; see Function.torch_op."""
    return function.torch_op(namespace, name)


def register_backend(name="fusegen", precision=None, fallback="eager"):
    """Registers the torch.compile backend under `name` (see fusegen.dynamo); returns it."""
    from . import _dynamo_backend
    return _dynamo_backend.register(name, precision=precision, fallback=fallback)


def library_version():
    """The version of the loaded C library (loads it)."""
    from . import _library
    return _library.text(_library.load().fusegen_version())


def library_path():
    """The path of the loaded C library (loads it)."""
    from . import _library
    return _library.load().path


__all__ = [
    "ArgumentError", "CompileError", "DriverError", "Error", "Function", "InternalError", "IoError",
    "LibraryNotFoundError", "ModuleFusion", "NoDriverError", "Program", "Runtime", "SpecError", "TensorSpec",
    "UnsupportedModuleError", "default_runtime", "from_module", "library_path", "library_version", "load",
    "load_string", "module_arguments", "register_backend", "torch_op",
]
