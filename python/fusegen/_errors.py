"""fusegen's exception classes, one per status of the C API (fusegen.h).

Every exception raised for a user error is a subclass of `Error`, carries
fusegen's own message, and keeps the C status in `.status`.
"""


class Error(Exception):
    """Base class of every fusegen error. `status` is the C API status (0 when
    the error was found on the Python side without a C call)."""

    status = 0

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class SpecError(Error):
    """The spec has errors (the message has file:line:col), or a fusion cannot
    be specialized at the dims of a call."""

    status = 1


class ArgumentError(Error):
    """A call's tensors, names, shapes, dtypes, devices or pointers do not fit
    the fusion, or a name (function, module attribute) does not exist."""

    status = 2


class CompileError(Error):
    """Code generation or NVRTC failed (the message has the NVRTC log)."""

    status = 3


class NoDriverError(Error):
    """There is no CUDA driver here, or no device with that ordinal."""

    status = 4


class DriverError(Error):
    """A CUDA driver call failed; the message names the call."""

    status = 5


class IoError(Error, OSError):
    """A spec file (or the cache directory) could not be read or used."""

    status = 6


class InternalError(Error):
    """An unexpected failure inside fusegen (a bug; please report it)."""

    status = 8


class UnsupportedModuleError(Error):
    """fusegen.from_module or the torch.compile backend met a node that fusegen cannot
    express. The message names the first such node: its op and, where the graph
    recorded it, the module's source line. `op`, `source` and `node` hold them."""

    def __init__(self, message, op=None, source=None, node=None):
        super().__init__(message)
        self.op = op
        self.source = source
        self.node = node


class LibraryNotFoundError(Error, ImportError):
    """libfusegen.so could not be found or loaded."""


# C status -> class. FUSEGEN_ERROR_INVALID (7, misuse of the C API, e.g. a
# closed handle) has no class of its own: it means a bug on this side.
_BY_STATUS = {
    1: SpecError,
    2: ArgumentError,
    3: CompileError,
    4: NoDriverError,
    5: DriverError,
    6: IoError,
    8: InternalError,
}


def error_for(status, message):
    """The exception for a failed C call."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message or "fusegen: status %d" % status, status)
