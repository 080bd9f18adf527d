"""Finds and loads libfusegen.so and declares the C API (fusegen.h) for ctypes.

Nothing here runs at import time of the package: the library is loaded on
first use, so `import fusegen` works (and its errors are clear) on a machine
where the library is missing.
"""

import ctypes
import os
import threading

from ._errors import Error, LibraryNotFoundError, error_for

C_API_VERSION = 3  # FUSEGEN_C_API_VERSION this package is written against

LIBRARY_NAME = "libfusegen.so"
PACKAGE_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", LIBRARY_NAME)

# Tensor kinds (fusegen_tensor_kind), as names.
KINDS = ("input", "param", "state", "output")
PRECISIONS = {None: 0, "default": 0, "strict": 1, "tf32": 2}


class Tensor(ctypes.Structure):
    """fusegen_tensor."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("rank", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
    ]


class RuntimeOptions(ctypes.Structure):
    """fusegen_runtime_options."""

    _fields_ = [
        ("precision", ctypes.c_int32),
        ("disk_cache", ctypes.c_int32),
        ("cache_dir", ctypes.c_char_p),
        ("check_pointers", ctypes.c_int32),
        ("autotune", ctypes.c_int32),
        ("remote_cache", ctypes.c_char_p),
        ("cache_key_file", ctypes.c_char_p),
    ]


class Stats(ctypes.Structure):
    """fusegen_stats."""

    _fields_ = [(name, ctypes.c_uint64) for name in (
        "calls", "memory_hits", "generations", "compiles", "disk_loads", "disk_writes", "disk_rejects",
        "tunings", "remote_loads", "remote_writes", "remote_rejects", "remote_waits")]


TUNING_TEXT = ("fusion", "dims", "chosen", "heuristic")
TUNING_VARIANTS = ("chosen_variants", "heuristic_variants", "report")


class Tuning(ctypes.Structure):
    """fusegen_tuning."""

    _fields_ = [(name, ctypes.c_char_p) for name in TUNING_TEXT] + [
        ("chosen_ms", ctypes.c_double), ("heuristic_ms", ctypes.c_double)] + [
        (name, ctypes.c_char_p) for name in TUNING_VARIANTS] + [("timed", ctypes.c_int32)]


class TensorInfo(ctypes.Structure):
    """fusegen_tensor_info."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("dims", ctypes.POINTER(ctypes.c_char_p)),
    ]


_p = ctypes.c_void_p
_i32 = ctypes.c_int32
_str = ctypes.c_char_p
_status = ctypes.c_int32
_TensorP = ctypes.POINTER(Tensor)

# name -> (restype, argtypes). Handles are plain void pointers.
_PROTOTYPES = {
    "fusegen_version": (_str, []),
    "fusegen_c_api_version": (_i32, []),
    "fusegen_status_name": (_str, [_i32]),
    "fusegen_last_error": (_str, []),
    "fusegen_runtime_options_init": (None, [ctypes.POINTER(RuntimeOptions)]),
    "fusegen_runtime_create": (_status, [_i32, ctypes.POINTER(RuntimeOptions), ctypes.POINTER(_p)]),
    "fusegen_runtime_destroy": (None, [_p]),
    "fusegen_runtime_stats": (_status, [_p, ctypes.POINTER(Stats)]),
    "fusegen_runtime_tuning_count": (_i32, [_p]),
    "fusegen_runtime_tuning": (_status, [_p, _i32, ctypes.POINTER(Tuning)]),
    "fusegen_runtime_cache_dir": (_str, [_p]),
    "fusegen_runtime_device": (_status, [_p, ctypes.POINTER(_str), ctypes.POINTER(_i32)]),
    "fusegen_runtime_synchronize": (_status, [_p, _p]),
    "fusegen_runtime_stream_wait": (_status, [_p, _p, _p]),
    "fusegen_program_load_file": (_status, [_p, _str, ctypes.POINTER(_p)]),
    "fusegen_program_load_string": (_status, [_p, _str, _str, ctypes.POINTER(_p)]),
    "fusegen_program_destroy": (None, [_p]),
    "fusegen_program_function_count": (_i32, [_p]),
    "fusegen_program_function_name": (_str, [_p, _i32]),
    "fusegen_program_function": (_status, [_p, _str, ctypes.POINTER(_p)]),
    "fusegen_function_destroy": (None, [_p]),
    "fusegen_function_name": (_str, [_p]),
    "fusegen_function_signature": (_str, [_p]),
    "fusegen_function_tensor_count": (_i32, [_p]),
    "fusegen_function_tensor_info": (_status, [_p, _i32, ctypes.POINTER(TensorInfo)]),
    "fusegen_function_output_shapes": (_status, [_p, _TensorP, _i32, ctypes.POINTER(ctypes.c_int64), _i32]),
    "fusegen_function_call": (_status, [_p, _TensorP, _i32, _TensorP, _i32, _p]),
    "fusegen_function_prepare": (_status, [_p, ctypes.POINTER(_str), ctypes.POINTER(ctypes.c_int64), _i32]),
    # Called by the C call path only (_fastcall.c), through their addresses.
    "fusegen_function_bind": (_status, [_p, _TensorP, _i32, _TensorP, _i32, ctypes.POINTER(_p)]),
    "fusegen_bound_call_launch": (_status, [_p, ctypes.POINTER(_p), ctypes.POINTER(_p), _p]),
    "fusegen_bound_call_destroy": (None, [_p]),
}

_lock = threading.Lock()
_lib = None


def candidates():
    """Where the library is looked for, in order, with a word on each.

    $FUSEGEN_LIBRARY comes first: it is a deliberate development override
    (e.g. a build tree's library, as ctest does), and an override that an
    installed copy could shadow would test the wrong library silently."""
    found = []
    env = os.environ.get("FUSEGEN_LIBRARY")
    if env:
        path = os.path.join(env, LIBRARY_NAME) if os.path.isdir(env) else env
        found.append((path, "$FUSEGEN_LIBRARY"))
    found.append((PACKAGE_LIBRARY, "the package"))
    return found


def _not_found_message():
    env = os.environ.get("FUSEGEN_LIBRARY")
    looked = ["%s (the package's copy, placed there by `pip install ./python`)" % PACKAGE_LIBRARY]
    if env:
        looked.insert(0, "%s ($FUSEGEN_LIBRARY)" % env)
    else:
        looked.append("$FUSEGEN_LIBRARY (not set)")
    return ("fusegen: cannot find %s; looked at:\n  %s\n"
            "Install the package with `pip install ./python` (it builds the library with CMake), "
            "or point FUSEGEN_LIBRARY at a build's runtime/libfusegen.so." % (LIBRARY_NAME, "\n  ".join(looked)))


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LibraryNotFoundError("fusegen: %s has no %s (an older or foreign library?)"
                                       % (lib._name, name)) from None
        fn.restype = restype
        fn.argtypes = argtypes
    # The call path's entry point once more, without argtypes: ctypes then
    # converts nothing, which saves about 0.7 us per call (indexing makes a
    # new function object; `lib.name` stays the checked one). Its callers pass
    # exactly (c_void_p handle, Tensor array, int, Tensor array, int,
    # c_void_p stream or None): an int stream would be passed as a C int.
    raw = lib["fusegen_function_call"]
    raw.restype = _status
    lib.function_call_unconverted = raw


def load():
    """The loaded library (ctypes.CDLL), loading it on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        for path, origin in candidates():
            if not os.path.isfile(path):
                if origin == "$FUSEGEN_LIBRARY":
                    raise LibraryNotFoundError("fusegen: FUSEGEN_LIBRARY=%s: no such file (expected the path of "
                                               "%s, e.g. <build>/runtime/%s)" % (path, LIBRARY_NAME, LIBRARY_NAME))
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise LibraryNotFoundError("fusegen: cannot load %s (from %s): %s" % (path, origin, e)) from None
            _declare(lib)
            version = lib.fusegen_c_api_version()
            if version != C_API_VERSION:
                raise LibraryNotFoundError("fusegen: %s has C API version %d; this package needs %d (rebuild or "
                                           "reinstall so that the package and library match)"
                                           % (path, version, C_API_VERSION))
            lib.path = path
            _lib = lib
            return lib
        raise LibraryNotFoundError(_not_found_message())


def last_error(lib, status):
    """The exception for a failed call (fusegen_last_error is per thread: call this right after)."""
    message = lib.fusegen_last_error()
    return error_for(status, message.decode("utf-8", "replace") if message else "")


def check(lib, status):
    if status:
        raise last_error(lib, status)


def text(value):
    """A C string from the library as str ("" for NULL)."""
    return value.decode("utf-8", "replace") if value else ""


__all__ = ["Error", "load", "check", "last_error", "text", "Tensor", "RuntimeOptions", "Stats", "TensorInfo",
           "KINDS", "PRECISIONS"]
