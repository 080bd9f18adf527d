"""The call path's fast branches for torch tensors, without torch or a GPU.

A child process loads the fake CUDA driver of the runtime tests
($FUSEGEN_FAKE_CUDA, set by ctest) and a small stand-in for the few torch
names the call path uses, then calls a fusion many ways: arguments and
outputs that fit take the fast branches (the kernels run on the fake, so
the call counts show it), and whatever does not fit still gets the general
path's messages. Skipped when $FUSEGEN_FAKE_CUDA is not set."""

import json
import os
import subprocess
import sys
import unittest

import support

CHILD = r'''
import ctypes, json, sys, types
fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # found as libcuda.so.1 by the runtime
sys.path.insert(0, sys.argv[2])

class Tensor:
    """Contiguous float32 'device' memory: host memory, as the fake driver's is."""
    is_cuda = True
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
torch.empty = lambda shape, dtype=None, device=None: Tensor(shape, dtype)
torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: streams[-1] if streams else 0)
torch.device = lambda kind, index: "%s:%d" % (kind, index)
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
results["wrong_out_shape"] = error(a=a, b=b, out={"y": Tensor((4, 15))})
results["wrong_out_dtype"] = error(a=a, b=b, out={"y": Tensor((4, 16), torch.float16)})
results["unknown_out"] = error(a=a, b=b, out={"z": out})
results["wrong_arg_shape"] = error(a=a, b=Tensor((5, 16)))
results["stats"] = rt.stats()
print(json.dumps(results))
'''


@support.requires_library
class FastPathTest(unittest.TestCase):
    def test_torch_fast_paths_on_the_fake_driver(self):
        fake = os.environ.get("FUSEGEN_FAKE_CUDA")
        if not fake:
            self.skipTest("skipped: FUSEGEN_FAKE_CUDA (the fake driver of the runtime tests) is not set")
        done = subprocess.run([sys.executable, "-c", CHILD, fake, support.PYTHON, support.CACHE_DIR],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertEqual(r["allocated_shape"], [4, 16])
        self.assertTrue(r["out_is_returned"])
        self.assertIn("output 'y' has shape [4, 15]; for these arguments it is [4, 16]", r["wrong_out_shape"])
        self.assertIn("has dtype", r["wrong_out_dtype"])
        self.assertIn("out= must give exactly the outputs y (missing y; unknown 'z')", r["unknown_out"])
        self.assertIn("dim N is bound two ways", r["wrong_arg_shape"])
        self.assertEqual(r["streams"], [(1 << 40) + 256, (1 << 40) + 256, (1 << 40) + 512, None])
        self.assertEqual(r["stats"]["calls"], 6)  # every good call launched; no bad one did
        self.assertEqual(r["stats"]["compiles"] + r["stats"]["disk_loads"], 1)


if __name__ == "__main__":
    unittest.main()
