"""Runtime (one device plus its kernel caches) and Program (a loaded spec)."""

import ctypes
import os
import re
import sys
import threading

from . import _library
from ._errors import ArgumentError
from ._function import Function, documented
from ._library import check, text

_STATS = ("calls", "memory_hits", "generations", "compiles", "disk_loads", "disk_writes", "disk_rejects",
          "tunings", "remote_loads", "remote_writes", "remote_rejects", "remote_waits")


def _current_cuda_device():
    """torch's current CUDA device where torch is loaded and sees one, else 0."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.current_device())
    except Exception:  # a stand-in or broken torch: the default device
        pass
    return 0


def device_index(device):
    """The CUDA device ordinal of `device`: an int >= 0, a string 'cuda' or 'cuda:N', or a
    torch.device of type cuda ('cuda' without an index: torch's current device)."""
    if isinstance(device, int) and not isinstance(device, bool):
        if device >= 0:
            return device
    elif isinstance(device, str):
        match = re.fullmatch(r"\s*cuda(?::(\d+))?\s*", device)
        if match:
            return int(match.group(1)) if match.group(1) else _current_cuda_device()
    elif type(device).__name__ == "device" and getattr(device, "type", None) == "cuda":  # torch.device
        return device.index if device.index is not None else _current_cuda_device()
    raise ArgumentError("fusegen: device must be a CUDA device: an int >= 0, 'cuda', 'cuda:N' or a "
                        "torch.device('cuda', N), not %r" % (device,))


class Runtime:
    """One CUDA device and its caches of compiled kernels.

    precision: None (each fusion's own), 'strict' or 'tf32'.
    cache_dir: the disk cache directory (None: $FUSEGEN_CACHE_DIR, then
    $XDG_CACHE_HOME/fusegen, then ~/.cache/fusegen). disk_cache=False compiles
    in memory only. check_pointers: ask the driver where every pointer lives
    before launching (safer; costs some host time per call). autotune: time
    candidate kernels on the GPU the first time each (fusion, shapes) is
    built and keep the fastest in the disk cache (None: on when
    FUSEGEN_AUTOTUNE=1 is in the environment). remote_cache: the fleet's
    Redis store, "redis://host:port[/db]" (None: $FUSEGEN_REMOTE_CACHE; "off":
    none), with cache_key_file the fleet's HMAC key (None:
    $FUSEGEN_CACHE_KEY_FILE); without a usable key there is no remote cache.
    The device is opened on first use, so this works without a GPU."""

    def __init__(self, device=0, precision=None, cache_dir=None, disk_cache=True, check_pointers=True,
                 autotune=None, remote_cache=None, cache_key_file=None):
        if precision not in _library.PRECISIONS:
            raise ArgumentError("fusegen: precision must be None, 'strict' or 'tf32', not %r" % (precision,))
        device = device_index(device)
        self._lib = lib = _library.load()
        self.device = device
        self.precision = precision
        options = _library.RuntimeOptions()
        lib.fusegen_runtime_options_init(ctypes.byref(options))
        options.precision = _library.PRECISIONS[precision]
        options.disk_cache = 1 if disk_cache else 0
        self._cache_dir_b = os.fsencode(cache_dir) if cache_dir is not None else None
        options.cache_dir = self._cache_dir_b
        options.check_pointers = 1 if check_pointers else 0
        if autotune not in (None, True, False):
            raise ArgumentError("fusegen: autotune must be None, True or False, not %r" % (autotune,))
        options.autotune = -1 if autotune is None else int(autotune)
        self._remote_cache_b = remote_cache.encode() if remote_cache is not None else None
        options.remote_cache = self._remote_cache_b
        self._cache_key_file_b = os.fsencode(cache_key_file) if cache_key_file is not None else None
        options.cache_key_file = self._cache_key_file_b
        handle = ctypes.c_void_p()
        check(lib, lib.fusegen_runtime_create(device, ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle

    def __repr__(self):
        return "<fusegen.Runtime device=%d precision=%s cache_dir=%r>" % (
            self.device, self.precision or "default", self.cache_dir)

    def __del__(self):
        try:
            self._lib.fusegen_runtime_destroy(self._handle)
        except Exception:  # never fully built, or interpreter shutdown
            pass

    def load(self, path):
        """Loads a spec file; SpecError (with file:line:col) if it has errors."""
        handle = ctypes.c_void_p()
        check(self._lib, self._lib.fusegen_program_load_file(self._handle, os.fsencode(path), ctypes.byref(handle)))
        return Program(self, handle, os.fspath(path))

    def load_string(self, text_, name="<string>"):
        """Loads a spec from text; `name` is the file name its diagnostics use."""
        handle = ctypes.c_void_p()
        check(self._lib, self._lib.fusegen_program_load_string(
            self._handle, text_.encode(), name.encode(), ctypes.byref(handle)))
        return Program(self, handle, name)

    def stats(self):
        """The cache counters as a dict (calls, memory_hits, generations, compiles, disk_loads, ...)."""
        out = _library.Stats()
        check(self._lib, self._lib.fusegen_runtime_stats(self._handle, ctypes.byref(out)))
        return {name: int(getattr(out, name)) for name in _STATS}

    def tunings(self):
        """Every autotuning this runtime did (autotune on, a (fusion, dims) without a tuned cache entry),
        in order, as dicts: fusion, dims ("T=16"), chosen (the winning candidate: "heuristic" or a forced
        GEMM block, "128x64" or "64x64:8" with split-K 8; ", fp16x3" added where it multiplies with FP16x3:
        "heuristic, fp16x3"), heuristic ("heuristic", or the forced block with
        the same kernels, "64x64:8 (heuristic)"), chosen_ms and heuristic_ms (the autotuner's own timing
        per run on scratch tensors; 0.0 when nothing was timed), chosen_variants and heuristic_variants
        (each kernel's template and variant as `fusegen plan` shows them, "; " between kernels), report
        (every candidate and its time) and timed (False: one candidate, or timing failed)."""
        out = []
        for index in range(self._lib.fusegen_runtime_tuning_count(self._handle)):
            record = _library.Tuning()
            check(self._lib, self._lib.fusegen_runtime_tuning(self._handle, index, ctypes.byref(record)))
            tuning = {name: text(getattr(record, name)) for name in _library.TUNING_TEXT + _library.TUNING_VARIANTS}
            tuning.update(chosen_ms=float(record.chosen_ms), heuristic_ms=float(record.heuristic_ms),
                          timed=bool(record.timed))
            out.append(tuning)
        return out

    @property
    def cache_dir(self):
        """The disk cache directory in use ("" when the disk cache is off)."""
        return text(self._lib.fusegen_runtime_cache_dir(self._handle))

    def device_info(self):
        """(device name, compute capability such as 90). Opens the device: NoDriverError without a GPU."""
        name = ctypes.c_char_p()
        arch = ctypes.c_int32()
        check(self._lib, self._lib.fusegen_runtime_device(self._handle, ctypes.byref(name), ctypes.byref(arch)))
        return text(name.value), int(arch.value)

    def synchronize(self, stream=None):
        """Waits for the work on `stream` (default: the legacy default stream)."""
        from ._function import _stream_handle
        check(self._lib, self._lib.fusegen_runtime_synchronize(self._handle, _stream_handle(stream)))


class Program:
    """A loaded spec: its fusions by name."""

    def __init__(self, runtime, handle, name):
        self.runtime = runtime
        self._lib = runtime._lib
        self._handle = handle
        self.name = name
        count = self._lib.fusegen_program_function_count(handle)
        self.function_names = tuple(text(self._lib.fusegen_program_function_name(handle, i))
                                    for i in range(max(0, count)))

    def __repr__(self):
        return "<fusegen.Program %s: %s>" % (self.name, ", ".join(self.function_names))

    def __del__(self):
        try:
            self._lib.fusegen_program_destroy(self._handle)
        except Exception:
            pass

    def function(self, name=None):
        """The fusion called `name` (may be left out when the spec has exactly one)."""
        if name is None:
            if len(self.function_names) != 1:
                raise ArgumentError("fusegen: %s has %d fusions (%s); name one" % (
                    self.name, len(self.function_names), ", ".join(self.function_names) or "none"))
            name = self.function_names[0]
        if name not in self.function_names:
            raise ArgumentError("fusegen: %s has no fusion named '%s'; it has: %s" % (
                self.name, name, ", ".join(self.function_names) or "none"))
        handle = ctypes.c_void_p()
        check(self._lib, self._lib.fusegen_program_function(self._handle, name.encode(), ctypes.byref(handle)))
        return documented(Function(self._lib, handle.value, self, self.runtime))


_defaults = {}
_defaults_lock = threading.Lock()


def default_runtime(device=0):
    """The runtime fusegen.load uses for `device` (an int, 'cuda:N' or a torch.device; made on
    first use, default options)."""
    device = device_index(device)
    runtime = _defaults.get(device)
    if runtime is None:
        with _defaults_lock:
            runtime = _defaults.get(device)
            if runtime is None:
                runtime = _defaults[device] = Runtime(device)
    return runtime


def load(path, device=0):
    """Loads a spec file on the default runtime of `device`."""
    return default_runtime(device).load(path)


def load_string(text_, name="<string>", device=0):
    """Loads a spec from text on the default runtime of `device`."""
    return default_runtime(device).load_string(text_, name)
