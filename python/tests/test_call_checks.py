"""A call's checks that run before the driver is needed, on fake device arrays.

A call that passes every check reaches the driver: without a GPU that is
NoDriverError, which shows the checks let a good call through."""

import unittest

import support
from support import FakeArray, fusegen

SPEC = """\
fusion scale_add {
  input  x : f32[N, 16]
  param  s : f32[16]
  output y = x * s + x
}

fusion norm {
  input x : f32[N, 8]
  state running_mean : f32[8]
  state running_var : f32[8]
  output y = batch_norm(x, running_mean, running_var, training=true, momentum=0.1, eps=1e-5)
}
"""


@support.requires_library
class CallChecksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runtime = fusegen.Runtime(cache_dir=support.CACHE_DIR)
        cls.program = cls.runtime.load_string(SPEC, name="checks.fg")
        cls.f = cls.program.function("scale_add")
        cls.gpu = support.has_driver(cls.runtime)

    def good(self, n=4):
        return {"x": FakeArray((n, 16)), "s": FakeArray((16,))}

    def test_missing_and_unknown_names(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, r"scale_add: missing s; the signature is scale_add\("):
            self.f(x=FakeArray((4, 16)), out={"y": FakeArray((4, 16))})
        with self.assertRaisesRegex(fusegen.ArgumentError, "unknown argument 'z'"):
            self.f(z=FakeArray((16,)), out={"y": FakeArray((4, 16))}, **self.good())
        with self.assertRaisesRegex(fusegen.ArgumentError, r"'y' is an output \(pass outputs with out="):
            self.f(x=FakeArray((4, 16)), y=FakeArray((4, 16)))

    def test_wrong_shape(self):
        arguments = self.good()
        arguments["s"] = FakeArray((15,))
        with self.assertRaises(fusegen.ArgumentError) as caught:
            self.f(out={"y": FakeArray((4, 16))}, **arguments)
        self.assertIn("s", str(caught.exception))

    def test_inconsistent_dims(self):
        with self.assertRaises(fusegen.ArgumentError):
            self.f(x=FakeArray((4, 17)), s=FakeArray((16,)), out={"y": FakeArray((4, 17))})

    def test_wrong_output_shape(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, r"output 'y' has shape \[5, 16\]; for these arguments "
                                                           r"it is \[4, 16\]"):
            self.f(out={"y": FakeArray((5, 16))}, **self.good())

    def test_out_names(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, "out= must give exactly the outputs y"):
            self.f(out={"z": FakeArray((4, 16))}, **self.good())
        with self.assertRaisesRegex(fusegen.ArgumentError, "out= must be a dict"):
            self.f(out=[FakeArray((4, 16))], **self.good())

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, r"argument 'x' of scale_add has typestr '<f8'"):
            self.f(x=FakeArray((4, 16), typestr="<f8"), s=FakeArray((16,)), out={"y": FakeArray((4, 16))})

    def test_not_contiguous(self):
        transposed = FakeArray((4, 16), strides=(4, 16))
        with self.assertRaisesRegex(fusegen.ArgumentError, "argument 'x' of scale_add is not contiguous"):
            self.f(x=transposed, s=FakeArray((16,)), out={"y": FakeArray((4, 16))})
        # Strides of dims of size 1 do not matter; explicit row-major strides are fine.
        self.reaches_driver(x=FakeArray((4, 16), strides=(64, 4)), s=FakeArray((16,), strides=(4,)),
                            out={"y": FakeArray((4, 16))})
        self.reaches_driver(x=FakeArray((1, 16), strides=(12345, 4)), s=FakeArray((16,)),
                            out={"y": FakeArray((1, 16))})

    def test_not_a_tensor(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, r"argument 'x' of scale_add must be a CUDA tensor .*not list"):
            self.f(x=[[1.0] * 16] * 4, s=FakeArray((16,)), out={"y": FakeArray((4, 16))})

    def test_misaligned_pointer(self):
        with self.assertRaises(fusegen.ArgumentError):
            self.f(x=FakeArray((4, 16), address=0x7E0000000004), s=FakeArray((16,)), out={"y": FakeArray((4, 16))})

    def test_read_only_state(self):
        norm = self.program.function("norm")
        with self.assertRaisesRegex(fusegen.ArgumentError, "argument 'running_var' of norm is read-only"):
            norm(x=FakeArray((4, 8)), running_mean=FakeArray((8,)), running_var=FakeArray((8,), readonly=True),
                 out={"y": FakeArray((4, 8))})
        with self.assertRaisesRegex(fusegen.ArgumentError, "output 'y' of norm is read-only"):
            norm(x=FakeArray((4, 8)), running_mean=FakeArray((8,)), running_var=FakeArray((8,)),
                 out={"y": FakeArray((4, 8), readonly=True)})
        self.reaches_driver(norm, x=FakeArray((4, 8), readonly=True), running_mean=FakeArray((8,)),
                            running_var=FakeArray((8,)), out={"y": FakeArray((4, 8))})

    def test_outputs_need_torch_or_out(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is installed: outputs are allocated")
        except ImportError:
            pass
        with self.assertRaisesRegex(fusegen.ArgumentError, "torch is not installed; pass the outputs with out="):
            self.f(**self.good())

    def test_bad_stream(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, "stream must be"):
            self.f.call(self.good(), out={"y": FakeArray((4, 16))}, stream="default")

    def test_interface_stream(self):
        # CUDA Array Interface v3: stream 0 is disallowed; None means nothing to wait for.
        with self.assertRaisesRegex(fusegen.ArgumentError, r"argument 'x' of scale_add has "
                                    r"__cuda_array_interface__ stream 0, which the interface disallows"):
            self.f(x=FakeArray((4, 16), stream=0), s=FakeArray((16,)), out={"y": FakeArray((4, 16))})
        with self.assertRaisesRegex(fusegen.ArgumentError, "output 'y' of scale_add has __cuda_array_interface__ "
                                                           "stream 0"):
            self.f(out={"y": FakeArray((4, 16), stream=0)}, **self.good())
        for bad in ("default", -3, 1 << 64, 1.0, True):
            with self.assertRaisesRegex(fusegen.ArgumentError, r"argument 's' of scale_add has "
                                        r"__cuda_array_interface__ stream .*; it must be None or a CUstream handle"):
                self.f(x=FakeArray((4, 16)), s=FakeArray((16,), stream=bad), out={"y": FakeArray((4, 16))})
        # None, and the legacy default stream on a call on it, need no wait; another stream needs
        # the driver for its wait (python/tests/test_streams.py checks the waits on the fake driver).
        self.reaches_driver(x=FakeArray((4, 16), stream=None), s=FakeArray((16,), stream=1),
                            out={"y": FakeArray((4, 16), stream=None)})
        self.reaches_driver(x=FakeArray((4, 16), stream=0x5000), s=FakeArray((16,)), out={"y": FakeArray((4, 16))})
        self.assertEqual(self.runtime.stats()["calls"], 0)

    def reaches_driver(self, function=None, **arguments):
        if self.gpu:
            return  # the fake pointers would be rejected by the driver's pointer checks
        function = function or self.f
        with self.assertRaises(fusegen.NoDriverError):
            function(**arguments)

    def test_good_call_reaches_driver(self):
        self.reaches_driver(out={"y": FakeArray((4, 16))}, **self.good())
        self.reaches_driver(function=None, out={"y": FakeArray((4, 16))}, **self.good())
        self.assertEqual(self.runtime.stats()["calls"], 0)

    def test_plans_are_reused(self):
        f = self.program.function("scale_add")
        for n in (4, 4, 8, 4):
            try:
                f(out={"y": FakeArray((n, 16))}, **self.good(n))
            except fusegen.Error:
                pass
        self.assertEqual(sorted(k[0][0] for k in f._plans), [4, 8])


if __name__ == "__main__":
    unittest.main()
