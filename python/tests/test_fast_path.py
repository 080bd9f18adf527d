"""The call path's fast branches for torch tensors, without torch or a GPU.

A child process loads the fake CUDA driver of the runtime tests
($FUSEGEN_FAKE_CUDA, set by ctest) and a small stand-in for the few torch
names the call path uses, then calls a fusion many ways: arguments and
outputs that fit take the fast branches (the kernels run on the fake, so
the call counts show it), and whatever does not fit still gets the general
path's messages. Skipped when $FUSEGEN_FAKE_CUDA is not set."""

import json
import re
import unittest

import support

CHILD = r'''
import ctypes, json, sys, types
fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # found as libcuda.so.1 by the runtime
sys.path.insert(0, sys.argv[2])

class Tensor:
    """Contiguous float32 'device' memory: host memory, as the fake driver's is."""
    is_cuda = True
    requires_grad = False
    def __init__(self, shape, dtype=None, device_index=0):
        self.shape = tuple(shape)
        n = 1
        for d in shape:
            n *= d
        self._buf = (ctypes.c_float * (n + 4))()
        self._ptr = (ctypes.addressof(self._buf) + 15) // 16 * 16
        self.dtype = torch.float32 if dtype is None else dtype
        self.device = "cuda:%d" % device_index
        self._device_index = device_index
    def get_device(self):
        return self._device_index
    def is_contiguous(self):
        return True
    def data_ptr(self):
        return self._ptr
    def stride(self):
        return ()

streams = []
torch = types.ModuleType("torch")
torch.float32 = object()
torch.float16 = object()
torch.Tensor = Tensor
allocated = {"empty": 0, "empty_like": 0}
def empty(shape, dtype=None, device=None):
    allocated["empty"] += 1
    return Tensor(shape, dtype)
def empty_like(t):
    allocated["empty_like"] += 1
    return Tensor(t.shape, t.dtype)
torch.empty = empty
torch.empty_like = empty_like
torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: streams[-1] if streams else 0)
torch.device = lambda kind, index: "%s:%d" % (kind, index)
grad_mode = [True]
torch.is_grad_enabled = lambda: grad_mode[0]
sys.modules["torch"] = torch

import fusegen
spec = "fusion add {\n  input a : f32[N, 16]\n  input b : f32[N, 16]\n  output y = a + b\n}\n"
rt = fusegen.Runtime(cache_dir=sys.argv[3], check_pointers=False)
f = rt.load_string(spec, name="add.fg").function()
a, b = Tensor((4, 16)), Tensor((4, 16))
results = {}
y = f(a=a, b=b)
results["allocated_shape"] = list(y.shape)
out = Tensor((4, 16))
results["out_is_returned"] = f(a=a, b=b, out={"y": out}) is out
fake.fakecuda_last_stream.restype = ctypes.c_void_p
launched_on = []
streams.append((1 << 40) + 256)  # a stream handle past 32 bits: passed as a pointer, not a C int
f(a=a, b=b)
launched_on.append(fake.fakecuda_last_stream())
f(b=b, a=a, out={"y": out})
launched_on.append(fake.fakecuda_last_stream())
streams.pop()
f.call({"a": a, "b": b}, out={"y": out}, stream=(1 << 40) + 512)
launched_on.append(fake.fakecuda_last_stream())
f(a=a, b=b)
launched_on.append(fake.fakecuda_last_stream())
results["streams"] = launched_on
def error(**kwargs):
    try:
        f(**kwargs)
    except fusegen.ArgumentError as e:
        return str(e)
    return "no error"
null = Tensor((4, 16))
null._ptr = 0  # known shapes, so the C path takes it to the library, whose error must read the same
try:
    f(a=a, b=null)
    results["null_pointer"] = "no error"
except fusegen.Error as e:
    results["null_pointer"] = "%s: %s" % (type(e).__name__, e)
two = f(a=a, b=b), f(a=a, b=b)
results["fresh_outputs"] = two[0] is not two[1]
results["wrong_out_shape"] = error(a=a, b=b, out={"y": Tensor((4, 15))})
results["wrong_out_dtype"] = error(a=a, b=b, out={"y": Tensor((4, 16), torch.float16)})
results["unknown_out"] = error(a=a, b=b, out={"z": out})
results["wrong_arg_shape"] = error(a=a, b=Tensor((5, 16)))
elsewhere = Tensor((4, 16))
elsewhere.is_cuda = False  # index 0 of another kind of device: get_device() alone would pass it
results["not_cuda"] = error(a=a, b=elsewhere)
# A fusion with an argument named out: f(out=t) passes that argument.
g = rt.load_string("fusion twice {\n  input out : f32[N, 16]\n  output y = out + out\n}\n",
                   name="twice.fg").function()
results["out_argument_shape"] = list(g(out=a).shape)
taken = g._fast.taken if g._fast else 0
results["out_argument_shape_again"] = list(g(out=a).shape)
results["out_argument_c_calls"] = g._fast.taken - taken if g._fast else None
# Shapes in turn: the C path's last plan is for one shape at a time.
c5 = Tensor((5, 16))
results["shapes_in_turn"] = [list(f(a=x, b=x).shape) for x in (c5, a, c5, a)]
results["out_for_another_shape"] = error(a=c5, b=c5, out={"y": out})
results["base"] = [c.__name__ for c in type(f).__mro__[:3]]
results["stats"] = rt.stats()
results["c_calls"] = f._fast.taken if f._fast else None
# The stand-in's dtype and shape are instance attributes and its methods Python
# functions: nothing for the C path to read directly, so it reads by name.
results["direct_types"] = len(f._fast.direct_types) if f._fast else None
results["allocated"] = allocated
# Arguments by position (declaration order), after the counts above.
taken = f._fast.taken if f._fast else 0
results["positional"] = [list(f(a, b).shape), list(f(a, b=b).shape), f(a, b, out={"y": out}) is out]
results["positional_c_calls"] = f._fast.taken - taken if f._fast else None
def call_error(*args, **kwargs):
    try:
        f(*args, **kwargs)
    except fusegen.ArgumentError as e:
        return str(e)
    return "no error"
results["positional_errors"] = [call_error(a, a=a), call_error(a, b, a)]
# A tensor that requires grad, in grad mode: refused (no backward), never detached.
needs_grad = Tensor((4, 16))
needs_grad.requires_grad = True
results["grad_refused"] = [error(a=a, b=needs_grad), call_error(a, needs_grad), error(a=a, b=b, out={"y": needs_grad})]
grad_mode[0] = False  # torch.no_grad(): taken
results["grad_off"] = list(f(a=a, b=needs_grad).shape)
print(json.dumps(results))
'''


@support.requires_library
class FastPathTest(unittest.TestCase):
    def run_child(self, fastcall):
        """The child's results, with FUSEGEN_FASTCALL set to `fastcall` ('0': the ctypes path)."""
        return support.run_fake_driver_child(self, CHILD, fastcall)

    def test_torch_fast_paths_on_the_fake_driver(self):
        self.check(self.run_child("0"))

    def test_the_c_call_path_behaves_as_the_python_one(self):
        # ctest builds the extension and names it in FUSEGEN_FASTCALL (tests/python/CMakeLists.txt).
        fastcall = support.built_fastcall(self)
        by_c, by_python = self.run_child(fastcall), self.run_child("0")
        self.check(by_c)
        # The calls that fit ran in C: all six good calls on the current stream after
        # the first (which built the plan), and the shapes in turn after the first of
        # [5, 16]; the explicit stream= call, the null pointer (refused by the
        # library) and the bad ones did not.
        self.assertEqual(by_c.pop("c_calls"), 9)
        self.assertIsNone(by_python.pop("c_calls"))
        self.assertEqual(by_c.pop("direct_types"), 0)
        self.assertIsNone(by_python.pop("direct_types"))
        # f(...) itself is the C type's call: no Python frame in the common case.
        self.assertEqual(by_c.pop("base"), ["add", "Function", "FunctionBase"])
        self.assertEqual(by_python.pop("base"), ["add", "Function", "_PythonCallBase"])
        self.assertEqual(by_c.pop("out_argument_c_calls"), 1)
        self.assertEqual(by_c.pop("positional_c_calls"), 3)  # positional calls run in C too
        self.assertIsNone(by_python.pop("positional_c_calls"))
        self.assertIsNone(by_python.pop("out_argument_c_calls"))
        # y has a's shape: C allocates it like a (torch.empty_like), Python with torch.empty.
        self.assertGreater(by_c["allocated"]["empty_like"], 0)
        self.assertEqual(by_python["allocated"]["empty_like"], 0)
        self.assertEqual(sum(by_c.pop("allocated").values()), sum(by_python.pop("allocated").values()))
        # The second child finds the first one's kernels on disk: compare launches only.
        self.assertEqual(by_c.pop("stats")["calls"], by_python.pop("stats")["calls"])
        # The same messages, but for the stand-in dtype's address in one.
        self.assertEqual(json.loads(re.sub("0x[0-9a-f]+", "0x..", json.dumps(by_c))),
                         json.loads(re.sub("0x[0-9a-f]+", "0x..", json.dumps(by_python))))

    def check(self, r):
        self.assertEqual(r["allocated_shape"], [4, 16])
        self.assertTrue(r["out_is_returned"])
        self.assertIn("output 'y' has shape [4, 15]; for these arguments it is [4, 16]", r["wrong_out_shape"])
        self.assertIn("has dtype", r["wrong_out_dtype"])
        self.assertIn("out= must give exactly the outputs y (missing y; unknown 'z')", r["unknown_out"])
        self.assertIn("dim N is bound two ways", r["wrong_arg_shape"])
        self.assertIn("argument 'b' of add is a tensor on cuda:0; fusegen needs CUDA tensors", r["not_cuda"])
        self.assertEqual(r["streams"], [(1 << 40) + 256, (1 << 40) + 256, (1 << 40) + 512, None])
        self.assertEqual(r["null_pointer"], "ArgumentError: fusion 'add': tensor 'b' is a null pointer")
        self.assertTrue(r["fresh_outputs"])
        self.assertEqual(r["out_argument_shape"], [4, 16])
        self.assertEqual(r["out_argument_shape_again"], [4, 16])
        self.assertEqual(r["shapes_in_turn"], [[5, 16], [4, 16], [5, 16], [4, 16]])
        self.assertIn("output 'y' has shape [4, 16]; for these arguments it is [5, 16]", r["out_for_another_shape"])
        self.assertEqual(r["stats"]["calls"], 14)  # every good call launched; no bad one did
        self.assertEqual(r["stats"]["compiles"] + r["stats"]["disk_loads"], 3)  # add at N=4 and N=5, twice
        self.assertEqual(r["positional"], [[4, 16], [4, 16], True])
        self.assertEqual(r["positional_errors"], [
            "fusegen: add got argument 'a' both by position and by name",
            "fusegen: add takes 2 arguments (a, b), but 3 were given positionally; outputs go in out={name: tensor}"])
        for message in r["grad_refused"]:
            self.assertIn("requires grad and grad mode is on", message)
            self.assertIn("torch.no_grad()", message)
        self.assertIn("argument 'b' of add", r["grad_refused"][0])
        self.assertIn("output 'y' of add", r["grad_refused"][2])
        self.assertEqual(r["grad_off"], [4, 16])


if __name__ == "__main__":
    unittest.main()
