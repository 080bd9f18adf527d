"""The `stream` of __cuda_array_interface__ (v3) on the fake driver: the call's
stream waits for the producer's pending work (an event recorded on the
producer's stream, cuStreamWaitEvent on the call's) before the launch, for
arguments and for outputs given with out=; nothing is enqueued when the
stream is None or the call's own; stream 0 is refused.

A child process loads the fake CUDA driver of the runtime tests
($FUSEGEN_FAKE_CUDA, set by ctest), which records the waits, and calls a
fusion on arrays in its "device" memory (host memory); then, with a stand-in
for torch, the mixed cases. Skipped when $FUSEGEN_FAKE_CUDA is not set."""

import unittest

import support

CHILD = r'''
import ctypes, json, sys, types
fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # found as libcuda.so.1 by the runtime
sys.path.insert(0, sys.argv[2])
import fusegen

fake.fakecuda_call_count.argtypes = [ctypes.c_char_p]
fake.fakecuda_stream_wait_at.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                         ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)]

NO_STREAM = object()

class Array:
    """A float32 array in the fake's device memory (host memory), with __cuda_array_interface__ v3."""
    def __init__(self, shape, stream=NO_STREAM):
        n = 1
        for d in shape:
            n *= d
        self._buf = (ctypes.c_float * (n + 4))()
        address = (ctypes.addressof(self._buf) + 15) // 16 * 16
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": "<f4", "data": (address, False),
                                         "strides": None, "version": 3}
        if stream is not NO_STREAM:
            self.__cuda_array_interface__["stream"] = stream

def observe(call):
    """Runs call() on a freshly reset fake: the waits ([stream, producer, kernel launches before it]),
    the kernel launches, the events made, and the error if it raised."""
    fake.fakecuda_reset()
    error = None
    try:
        call()
    except fusegen.Error as e:
        error = "%s: %s" % (type(e).__name__, e)
    waits = []
    for i in range(fake.fakecuda_stream_wait_count()):
        stream, producer, before = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
        fake.fakecuda_stream_wait_at(i, ctypes.byref(stream), ctypes.byref(producer), ctypes.byref(before))
        waits.append([stream.value, producer.value, before.value])
    return {"waits": waits, "error": error,
            "launches": fake.fakecuda_call_count(b"cuLaunchKernel") + fake.fakecuda_call_count(b"cuLaunchKernelEx"),
            "events": fake.fakecuda_call_count(b"cuEventCreate")}

S, T, U = 0x5000, 0x6000, 0x7000  # stream handles (the fake takes any)
rt = fusegen.Runtime(cache_dir=sys.argv[3], check_pointers=False)
f = rt.load_string("fusion add {\n  input a : f32[N, 16]\n  input b : f32[N, 16]\n  output y = a + b\n}\n",
                   name="add.fg").function()

def add(a=NO_STREAM, b=NO_STREAM, y=NO_STREAM, stream=None):
    """f on arrays with these interface streams, on `stream` (None: the default)."""
    arrays = {"a": Array((4, 16), a), "b": Array((4, 16), b)}
    out = {"y": Array((4, 16), y)}
    if stream is None:
        return lambda: f(out=out, **arrays)
    return lambda: f.call(arrays, out=out, stream=stream)

f(a=Array((4, 16)), b=Array((4, 16)), out={"y": Array((4, 16))})  # compiles and loads before the cases
results = {
    "no_stream_key": observe(add()),
    "none": observe(add(a=None, b=None, y=None)),
    "legacy_on_default": observe(add(a=1, b=1, y=1)),
    "other": observe(add(a=S)),
    "per_thread": observe(add(b=2)),
    "same_stream_once": observe(add(a=S, b=S, y=S)),
    "two_streams": observe(add(a=S, b=T, y=S)),
    "output": observe(add(y=T)),
    "explicit_same": observe(add(a=S, b=S, y=None, stream=S)),
    "explicit_other": observe(add(a=S, y=1, stream=T)),
    "explicit_legacy": observe(add(a=1, b=2, stream=1)),
    "zero": observe(add(b=0)),
    "zero_output": observe(add(a=S, y=0)),
    "not_a_handle": observe(add(a="stream")),
}

# torch tensors (a stand-in) are read through torch, not the interface: taken to be ready on
# torch's current stream U, which the call runs on; an interface array beside them on U needs
# no wait, one on S does.
class Tensor:
    is_cuda = True
    def __init__(self, shape, dtype=None):
        self.shape = tuple(shape)
        n = 1
        for d in shape:
            n *= d
        self._buf = (ctypes.c_float * (n + 4))()
        self._ptr = (ctypes.addressof(self._buf) + 15) // 16 * 16
        self.dtype = torch.float32 if dtype is None else dtype
        self.device = "cuda:0"
    def get_device(self):
        return 0
    def is_contiguous(self):
        return True
    def data_ptr(self):
        return self._ptr

torch = types.ModuleType("torch")
torch.float32 = object()
torch.Tensor = Tensor
torch.empty = lambda shape, dtype=None, device=None: Tensor(shape, dtype)
torch.empty_like = lambda t: Tensor(t.shape, t.dtype)
torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: U)
torch.device = lambda kind, index: "%s:%d" % (kind, index)
sys.modules["torch"] = torch
x = Tensor((4, 16))
results["torch_and_array_on_its_stream"] = observe(lambda: f(a=x, b=Array((4, 16), U)))
results["torch_and_array_elsewhere"] = observe(lambda: f(a=x, b=Array((4, 16), S)))
results["torch_output_array_elsewhere"] = observe(lambda: f(a=Array((4, 16), S), b=Array((4, 16), S),
                                                           out={"y": Tensor((4, 16))}))
results["torch_only"] = observe(lambda: f(a=x, b=x))
results["torch_only_explicit_stream"] = observe(lambda: f.call({"a": x, "b": x}, out={"y": Tensor((4, 16))},
                                                               stream=T))
print(json.dumps(results))
'''


@support.requires_library
class InterfaceStreamTest(unittest.TestCase):
    def run_child(self, fastcall):
        """The child's results, with FUSEGEN_FASTCALL set to `fastcall` ('0': the ctypes path)."""
        return support.run_fake_driver_child(self, CHILD, fastcall)

    def test_waits_on_the_fake_driver(self):
        self.check(self.run_child("0"))

    def test_waits_with_the_c_call_path(self):
        # Interface arrays are not the C path's common case: it hands them to the Python
        # path, so the waits (and everything else) are the same.
        fastcall = support.built_fastcall(self)
        by_c = self.run_child(fastcall)
        self.check(by_c)
        self.assertEqual(by_c, self.run_child("0"))

    def check(self, r):
        S, T, U = 0x5000, 0x6000, 0x7000
        expected = {  # name: the waits [call's stream (None: legacy default), producer's stream]
            "no_stream_key": [],
            "none": [],
            "legacy_on_default": [],  # 1 is the legacy default stream, which a call without a stream runs on
            "other": [[None, S]],
            "per_thread": [[None, 2]],
            "same_stream_once": [[None, S]],
            "two_streams": [[None, S], [None, T]],
            "output": [[None, T]],
            "explicit_same": [],
            "explicit_other": [[T, S], [T, 1]],
            "explicit_legacy": [[1, 2]],
            "torch_and_array_on_its_stream": [],
            "torch_and_array_elsewhere": [[U, S]],
            "torch_output_array_elsewhere": [[U, S]],
            "torch_only": [],
            "torch_only_explicit_stream": [],  # torch tensors: torch's own stream rules (docs/python.md)
        }
        for name, waits in expected.items():
            case = r[name]
            self.assertIsNone(case["error"], name)
            self.assertEqual([w[:2] for w in case["waits"]], waits, name)
            # Each wait is enqueued before the call's kernel, which is launched once.
            self.assertEqual([w[2] for w in case["waits"]], [0] * len(waits), name)
            self.assertEqual(case["launches"], 1, name)
        # One event, made for the first wait and reused by every later one.
        self.assertEqual(sum(case["events"] for case in r.values()), 1)
        for name, what in (("zero", "argument 'b'"), ("zero_output", "output 'y'")):
            self.assertEqual(r[name]["error"], "ArgumentError: fusegen: %s of add has __cuda_array_interface__ "
                             "stream 0, which the interface disallows (None: nothing to wait for; 1: the legacy "
                             "default stream; 2: the per-thread default stream; else a CUstream handle)" % what)
            self.assertEqual((r[name]["waits"], r[name]["launches"]), ([], 0), name)
        self.assertIn("argument 'a' of add has __cuda_array_interface__ stream 'stream'; it must be None or a "
                      "CUstream handle", r["not_a_handle"]["error"])
        self.assertEqual((r["not_a_handle"]["waits"], r["not_a_handle"]["launches"]), ([], 0))


if __name__ == "__main__":
    unittest.main()
