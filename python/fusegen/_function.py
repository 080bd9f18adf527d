"""A fusion as a Python callable: `y = f(x=x, w=w, ...)`.

The call path is kept lean (issue 6 measures host overhead per call): the
argument order is fixed once per function, and per tuple of argument shapes a
`_Plan` keeps the ctypes arrays (names, shapes, ranks) and the output shapes,
so a repeated call only checks each tensor, fills data pointers and calls C.
Where the package was built with its C extension (_fastcall.c), that common
case for torch tensors runs in C, and everything else comes back here.
"""

import collections
import ctypes
import importlib.machinery
import importlib.util
import inspect
import os
import threading

from . import _tensors
from ._errors import ArgumentError
from ._library import KINDS, Tensor, TensorInfo, check, last_error, text

TensorSpec = collections.namedtuple("TensorSpec", "name kind dims")
TensorSpec.__doc__ = """One tensor of a signature: name, kind ('input', 'param', 'state' or 'output')
and dims (ints for constant dims, strings for symbols such as 'N')."""

_VoidP = ctypes.c_void_p
_MAX_PLANS = 256  # shape tuples kept per function; a workload with more starts over


class _Plan:
    """The ctypes side of one call shape: everything but the data pointers."""

    __slots__ = ("args", "arg_slots", "outs", "out_slots", "out_shapes", "keep", "fast", "bound")

    def __init__(self, args, outs, arg_shapes, out_shapes, keep):
        self.args = args
        self.arg_slots = list(args)  # structs that share args' memory: `slot.data = p` writes into it
        self.outs = outs
        self.out_slots = list(outs)
        self.out_shapes = out_shapes
        self.keep = keep  # shape arrays the structs point to
        # What the C call path (_fastcall.c) reads: the arrays' addresses, the output
        # shapes, and per output an argument of its shape or -1 (the C path allocates
        # such an output with torch.empty_like, which costs about half of torch.empty).
        shapes = [tuple(s) for s in arg_shapes]
        outputs = tuple(tuple(s) for s in out_shapes)
        like = tuple(shapes.index(s) if s in shapes else -1 for s in outputs)
        self.fast = (ctypes.addressof(args), ctypes.addressof(outs), outputs, like)
        self.bound = None  # the C call path's bound call for these shapes (a capsule that owns it)


_fastcall = None  # the module, False where it cannot be loaded; see _load_fastcall


def _load_fastcall():
    """fusegen._fastcall (the call path's torch branch in C, built with the package), or
    False where it was not built. FUSEGEN_FASTCALL=<file> loads it from a file (the
    build tree's tests do); FUSEGEN_FASTCALL=0 leaves it off (for comparisons)."""
    global _fastcall
    if _fastcall is None:
        where = os.environ.get("FUSEGEN_FASTCALL", "")
        if where == "0":
            _fastcall = False
        elif where:  # asked for by path: failing to load it is an error, not a fallback
            loader = importlib.machinery.ExtensionFileLoader("fusegen._fastcall", where)
            spec = importlib.util.spec_from_file_location("fusegen._fastcall", where, loader=loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            _fastcall = module
        else:
            try:
                from . import _fastcall as module
                _fastcall = module
            except ImportError:
                _fastcall = False
    return _fastcall


_torch_reader = None  # fusegen._torchread's reader, False where unusable; see _load_torch_reader


def _load_torch_reader():
    """The tensor reader of fusegen._torchread (built with the package where torch was
    importable) where it was built against the torch loaded now, else False: a
    module built against another torch is not used (its C++ ABI may differ)."""
    global _torch_reader
    if _torch_reader is None:
        _torch_reader = False
        try:
            from . import _torchread
        except ImportError:  # not built, or torch's libraries changed under it
            return False
        if _tensors.torch_version is not None and _torchread.torch_version == _tensors.torch_version:
            _torch_reader = _torchread.reader
    return _torch_reader


class _PythonCallBase:
    """Function's base without the C extension: its call is _python_call."""

    __slots__ = ()

    def __call__(self, *args, **keywords):
        return self._python_call(*args, **keywords)


def _call_base():
    """The base class of Function: the C extension's FunctionBase, whose call runs
    the common case without a Python frame, or _PythonCallBase without it."""
    module = _load_fastcall()
    return module.FunctionBase if module else _PythonCallBase


def _declined(tensors, out):
    """The fast run of a Function without the C call path."""
    return NotImplemented


def _raise_status(lib, status):
    raise last_error(lib, status)


def _stream_handle(stream):
    """A CUstream handle (int) from an int, a torch.cuda.Stream or a CuPy stream."""
    if stream is None or isinstance(stream, int):
        return stream or None
    for attribute in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value or None
    raise ArgumentError("fusegen: stream must be an int handle or a stream object with .cuda_stream "
                        "(torch) or .ptr (CuPy), not %s" % type(stream).__name__)


class Function(_call_base()):
    """One fusion of a loaded spec. Call it with its arguments by name:
    `f(x=x, w=w)` or `f(x=x, w=w, out={'y': y})` (see _python_call)."""

    def __init__(self, lib, handle, program, runtime):
        self._lib = lib
        self._handle = ctypes.c_void_p(handle)
        self._program = program  # keeps the Python objects alive in a natural order
        self.runtime = runtime
        self._device = runtime.device
        self.name = text(lib.fusegen_function_name(self._handle))
        self.signature = text(lib.fusegen_function_signature(self._handle))
        specs = []
        info = TensorInfo()
        for i in range(lib.fusegen_function_tensor_count(self._handle)):
            check(lib, lib.fusegen_function_tensor_info(self._handle, i, ctypes.byref(info)))
            dims = tuple(int(d) if d.lstrip("-").isdigit() else d
                         for d in (text(info.dims[k]) for k in range(info.rank)))
            specs.append(TensorSpec(text(info.name), KINDS[info.kind] if 0 <= info.kind < 4 else "?", dims))
        self.arguments = tuple(s for s in specs if s.kind != "output")
        self.outputs = tuple(s for s in specs if s.kind == "output")
        self.argument_names = tuple(s.name for s in self.arguments)
        self.output_names = tuple(s.name for s in self.outputs)
        self._names_b = [n.encode() for n in self.argument_names]  # kept alive: the structs point at them
        self._out_names_b = [n.encode() for n in self.output_names]
        self._state = frozenset(s.name for s in self.arguments if s.kind == "state")
        self._n_args = len(self.arguments)
        self._n_outs = len(self.outputs)
        self._out_capacity = sum(len(s.dims) for s in self.outputs)
        self._out_is_arg = "out" in self.argument_names  # then f(out=...) is that argument
        self._plans = {}
        self._c_call = lib.function_call_unconverted  # see _library._declare: arguments typed here
        self._torch_device = None
        self._fast = None  # the C call path (a _fastcall.Caller), False without it; see _make_fast
        # (tensors, out) -> result or NotImplemented: the Caller's `run` once made,
        # _declined without one; None until decided (not a bound method of self: no cycle).
        self._fast_run = None

    def __repr__(self):
        return "<fusegen.Function %s>" % self.signature

    def __del__(self):
        try:
            self._lib.fusegen_function_destroy(self._handle)
        except Exception:  # interpreter shutdown
            pass

    # ---- the call path ----

    def _python_call(self, *args, **tensors):
        """f(*args, **tensors, out=out): runs the fusion; returns the output (or a
        tuple of outputs in order).

        Arguments in declaration order and/or by name; `out={name: tensor}`
        gives the outputs (required without torch). With torch tensors it runs
        on torch's current stream. f(...) comes here where the C call path
        (FunctionBase) did not take the call (it takes keywords only), or
        where it is not built."""
        out = None if self._out_is_arg else tensors.pop("out", None)
        if args:  # the C path takes keywords only: it has not tried this call yet
            self._bind_positional(args, tensors)
            result = (self._fast_run or self._first_fast_run)(tensors, out)
        elif self._fast_run is None:  # the first call: makes the C path and tries it
            result = self._first_fast_run(tensors, out)
        else:
            result = NotImplemented
        if result is not NotImplemented:
            return result
        return self._call(tensors, out, None)

    def _bind_positional(self, args, tensors):
        """Adds positional `args` to `tensors` by declaration order (as Python binds them)."""
        if len(args) > self._n_args:
            raise ArgumentError("fusegen: %s takes %d arguments (%s), but %d were given positionally; "
                                "outputs go in out={name: tensor}" % (
                                    self.name, self._n_args, ", ".join(self.argument_names), len(args)))
        for name, value in zip(self.argument_names, args):
            if name in tensors:
                raise ArgumentError("fusegen: %s got argument '%s' both by position and by name" % (self.name, name))
            tensors[name] = value

    def call(self, tensors, out=None, stream=None):
        """Like f(**tensors, out=out), with an explicit `stream` (an int handle or a
        torch/CuPy stream; by default torch's current stream when torch tensors are
        involved, else the legacy default stream)."""
        if stream is None:
            result = (self._fast_run or self._first_fast_run)(tensors, out)
            if result is not NotImplemented:
                return result
        return self._call(tensors, out, stream)

    def _first_fast_run(self, tensors, out):
        """Until the C call path is made: makes it (once torch is loaded) and runs it."""
        fast = self._make_fast()
        if fast is None:
            return NotImplemented  # torch is not loaded: asked again next call
        self._fast_run = fast.run if fast else _declined
        if fast:
            self._caller = fast  # FunctionBase's call takes f(...) from now on
        return self._fast_run(tensors, out)

    def _call(self, tensors, out, stream):
        """The general path: every case, every check and message."""
        if len(tensors) != self._n_args:
            raise self._names_error(tensors)
        have_torch = (_tensors.TorchTensor or _tensors.torch_tensor_type()) is not None
        device = self._device
        shapes = []
        pointers = []
        use_torch = False
        producers = ()  # __cuda_array_interface__ streams whose pending work the call waits for
        try:
            for name in self.argument_names:
                t = tensors[name]
                if have_torch and _tensors.usable_torch(t, device) and not _tensors.needs_grad(t):
                    shapes.append(t.shape)
                    pointers.append(t.data_ptr())
                    use_torch = True
                else:  # everything else, and every error message
                    shape, pointer, is_torch, producer = _tensors.adapt(
                        "argument '%s' of %s" % (name, self.name), t, device, name in self._state)
                    shapes.append(shape)
                    pointers.append(pointer)
                    use_torch = use_torch or is_torch
                    if producer is not None:
                        producers += (producer,)
        except KeyError:
            raise self._names_error(tensors) from None
        key = tuple(shapes)
        plan = self._plans.pop(key, None)  # taken out while in use: another thread builds its own
        if plan is None:
            plan = self._plan(key)
        try:
            for slot, pointer in zip(plan.arg_slots, pointers):
                slot.data = pointer
            if out is None:
                if _tensors.TorchTensor is None:
                    _tensors.require_torch("calling %s without out=" % self.name)
                empty = _tensors.empty
                torch_device = self._torch_device or self._make_torch_device()
                if self._n_outs == 1:  # the common case, without the loops
                    result = empty(plan.out_shapes[0], dtype=_tensors.float32, device=torch_device)
                    plan.out_slots[0].data = result.data_ptr()
                    results = (result,)
                else:
                    results = [empty(s, dtype=_tensors.float32, device=torch_device) for s in plan.out_shapes]
                    for slot, r in zip(plan.out_slots, results):
                        slot.data = r.data_ptr()
                use_torch = True
            else:
                results, producers = self._given_outputs(out, plan, producers)
                use_torch = use_torch or _tensors.TorchTensor is not None and \
                    isinstance(results[0] if results else None, _tensors.TorchTensor)
            if stream is None:
                handle = _tensors.raw_stream(device) if use_torch else None
            else:
                handle = _stream_handle(stream)
            if producers:
                self._wait_for(producers, handle)
            # No argtypes on _c_call: a non-null stream must be a c_void_p.
            status = self._c_call(self._handle, plan.args, self._n_args, plan.outs, self._n_outs,
                                  _VoidP(handle) if handle else None)
            if status:
                raise last_error(self._lib, status)
        finally:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return results[0] if self._n_outs == 1 else tuple(results)

    def _make_fast(self):
        """The C call path for torch tensors once torch is loaded; False without the
        extension (decided once), None while torch is not loaded (asked again)."""
        if _tensors.torch_tensor_type() is None:
            return None
        module = _load_fastcall()
        if not module:
            self._fast = False
            return False
        self._fast = module.Caller(
            bound_calls=tuple(ctypes.cast(getattr(self._lib, name), ctypes.c_void_p).value for name in (
                "fusegen_function_bind", "fusegen_bound_call_launch", "fusegen_bound_call_destroy")),
            function=self._handle.value,
            names=self.argument_names, out_names=self.output_names, plans=self._plans, device=self._device,
            tensor_type=_tensors.TorchTensor, float32=_tensors.float32, raw_stream=_tensors.raw_stream,
            empty=_tensors.empty, empty_like=_tensors.empty_like,
            torch_device=self._torch_device or self._make_torch_device(),
            raise_status=lambda status, lib=self._lib: _raise_status(lib, status),
            subclass=_tensors.Parameter,  # module weights: read as directly as torch.Tensor
            reader=_load_torch_reader() or None, grad_enabled=_tensors.grad_enabled)
        return self._fast

    def _make_torch_device(self):
        import torch
        self._torch_device = torch.device("cuda", self._device)
        return self._torch_device

    def _names_error(self, tensors):
        given = set(tensors)
        wanted = set(self.argument_names)
        parts = []
        missing = [n for n in self.argument_names if n not in given]
        if missing:
            parts.append("missing %s" % ", ".join(missing))
        for name in sorted(given - wanted):
            if name in self.output_names:
                parts.append("'%s' is an output (pass outputs with out={'%s': tensor})" % (name, name))
            else:
                parts.append("unknown argument '%s'" % name)
        return ArgumentError("fusegen: %s: %s; the signature is %s" % (self.name, "; ".join(parts), self.signature))

    def _wait_for(self, producers, handle):
        """Makes the call's stream (`handle`; None or 0 is the legacy default stream) wait for the
        work pending on each producer stream of a __cuda_array_interface__ (CUDA Array Interface
        v3), once per stream and not for the call's own: an event recorded there, waited for here."""
        waited = {handle or 1}  # 1: the legacy default stream, as null is
        for producer in producers:
            if producer not in waited:
                waited.add(producer)
                check(self._lib, self._lib.fusegen_runtime_stream_wait(self.runtime._handle, handle or None,
                                                                       producer))

    def _given_outputs(self, out, plan, producers):
        """Checks the caller's outputs against the plan's shapes and fills their pointers: (the
        outputs in order, `producers` and the outputs' __cuda_array_interface__ streams)."""
        if _tensors.TorchTensor is not None and type(out) is dict and len(out) == self._n_outs:
            # The common case, torch tensors that fit, without building sets or messages.
            device = self._device
            results = []
            for name, expected, slot in zip(self.output_names, plan.out_shapes, plan.out_slots):
                t = out.get(name)
                if not (_tensors.usable_torch(t, device) and t.shape == expected and not _tensors.needs_grad(t)):
                    break  # the general path below checks again and words the error
                slot.data = t.data_ptr()
                results.append(t)
            else:
                return results, producers
        if not isinstance(out, dict):
            raise ArgumentError("fusegen: %s: out= must be a dict {output name: tensor}" % self.name)
        unknown = sorted(set(out) - set(self.output_names))
        missing = [n for n in self.output_names if n not in out]
        if unknown or missing:
            raise ArgumentError("fusegen: %s: out= must give exactly the outputs %s (%s)" % (
                self.name, ", ".join(self.output_names),
                "; ".join((["missing " + ", ".join(missing)] if missing else []) +
                          ["unknown '%s'" % n for n in unknown])))
        results = []
        for name, expected, slot in zip(self.output_names, plan.out_shapes, plan.out_slots):
            value = out[name]
            shape, pointer, _, producer = _tensors.adapt("output '%s' of %s" % (name, self.name), value,
                                                         self._device, True)
            if tuple(shape) != expected:
                raise ArgumentError("fusegen: %s: output '%s' has shape %s; for these arguments it is %s" % (
                    self.name, name, list(shape), list(expected)))
            slot.data = pointer
            results.append(value)
            if producer is not None:
                producers += (producer,)
        return results, producers

    def _tensor_array(self, names_b, shapes):
        arrays = [(ctypes.c_int64 * len(s))(*s) for s in shapes]
        structs = (Tensor * len(shapes))()
        for struct, name, shape, dims in zip(structs, names_b, shapes, arrays):
            struct.name = name
            struct.shape = dims
            struct.rank = len(shape)
            struct.dtype = 0  # FUSEGEN_FLOAT32
        return structs, arrays

    def _output_shapes(self, key):
        """Output shapes (tuples, in order) for argument shapes `key`, from the C library."""
        args, keep = self._tensor_array(self._names_b, key)
        buffer = (ctypes.c_int64 * max(1, self._out_capacity))()
        check(self._lib, self._lib.fusegen_function_output_shapes(
            self._handle, args, self._n_args, buffer, self._out_capacity))
        shapes = []
        at = 0
        for spec in self.outputs:
            shapes.append(tuple(buffer[at:at + len(spec.dims)]))
            at += len(spec.dims)
        return args, keep, shapes

    def _plan(self, key):
        args, keep, out_shapes = self._output_shapes(key)
        outs, out_keep = self._tensor_array(self._out_names_b, out_shapes)
        return _Plan(args, outs, key, out_shapes, (keep, out_keep))

    # ---- PyTorch ----

    def torch_op(self, namespace="fusegen", name=None):
        """This fusion as a torch.library custom op, torch.ops.<namespace>.<name> (name: the
        fusion's by default), with a fake implementation and its state tensors declared
        mutable: torch.compile(fullgraph=True), torch.export and CUDA graphs see through it.
        Call it with the arguments in declaration order: op(x, w, b). See docs/python.md."""
        from . import _torch_op
        return _torch_op.register(self, namespace, name)

    # ---- without a launch ----

    def output_shapes(self, **shapes):
        """{output name: shape} for arguments given as shapes (sequences of ints) or tensors."""
        if set(shapes) != set(self.argument_names):
            raise self._names_error(shapes)
        key = tuple(_tensors.as_shape("argument '%s' of %s" % (n, self.name), shapes[n])
                    for n in self.argument_names)
        return dict(zip(self.output_names, self._output_shapes(key)[2]))

    def prepare(self, **dims):
        """Compiles and loads the kernels for these dim values (e.g. N=1024) without launching."""
        names = (ctypes.c_char_p * max(1, len(dims)))(*[n.encode() for n in dims])
        values = (ctypes.c_int64 * max(1, len(dims)))(*[int(v) for v in dims.values()])
        check(self._lib, self._lib.fusegen_function_prepare(self._handle, names, values, len(dims)))


_documented = {}  # (fusion name, signature text) -> its Function subclass
_documented_lock = threading.Lock()


def _python_signature(f):
    """The inspect.Signature of calling `f`: its arguments in declaration order
    (positional or by name, annotated with their spec types), then out=; None
    where a spec name is not a Python identifier."""
    def annotation(spec):
        return "f32[%s]" % ", ".join(str(d) for d in spec.dims)
    try:
        params = [inspect.Parameter(s.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation(s))
                  for s in f.arguments]
        if not f._out_is_arg:
            params.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    except ValueError:
        return None
    outputs = ", ".join("%s: %s" % (s.name, annotation(s)) for s in f.outputs)
    return inspect.Signature(params, return_annotation=outputs if f._n_outs == 1 else "(%s)" % outputs)


def _doc(f):
    kinds = "; ".join("%s: %s%s" % (s.name, s.kind, " (written in place)" if s.kind == "state" else "")
                      for s in f.arguments)
    return ("%s\n\nA fusion (fusegen.Function). Call it with its arguments in this order and/or by name; "
            "out={name: tensor} gives the outputs (else they are allocated). Returns %s.\n\nArguments: %s."
            % (f.signature, "the output" if f._n_outs == 1 else "a tuple of the outputs in order", kinds))


def documented(f):
    """`f` as an instance of a subclass of Function of its own fusion, whose
    __signature__ and docstring are the fusion's: what inspect.signature(f)
    and help(f) show (help documents an instance's class)."""
    key = (f.name, f.signature)
    cls = _documented.get(key)
    if cls is None:
        with _documented_lock:
            cls = _documented.get(key)
            if cls is None:
                name = f.name if f.name.isidentifier() else "fusion"
                cls = _documented[key] = type(name, (Function,), {
                    "__doc__": _doc(f), "__signature__": _python_signature(f), "__module__": "fusegen"})
    f.__class__ = cls
    return f
