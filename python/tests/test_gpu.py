"""The four KernelBench seed chains on torch CUDA tensors against the PyTorch modules
(scripts/kernelbench_models.py) with the modules' own weights; needs torch with CUDA."""

import sys
import unittest

import support
from support import fusegen

torch = support.torch_with_cuda()
NO_GPU = "skipped: no GPU (torch with CUDA is not available)"

# Batch per shape set and chain: "small" near KernelBench's, "v0.1" reduced (the full sizes are
# for bench/kernelbench.py; the weights stay full size).
BATCH = {"small": {"62": 64, "75": 64, "39": 64, "85": 8},
         "v0.1": {"62": 16, "75": 16, "39": 16, "85": 2}}


def models():
    if support.SCRIPTS not in sys.path:
        sys.path.insert(0, support.SCRIPTS)
    import kernelbench_models
    return kernelbench_models


def close(test, name, actual, expected, tolerance):
    test.assertEqual(tuple(actual.shape), tuple(expected.shape), name)
    if not torch.allclose(actual, expected, atol=tolerance, rtol=tolerance):
        error = (actual - expected).abs().max().item()
        test.fail("%s: max abs error %.3g exceeds atol=rtol=%g" % (name, error, tolerance))


@unittest.skipUnless(torch, NO_GPU)
@support.requires_library
class ChainsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.torch_fp32_strict(torch)
        cls.strict = fusegen.Runtime(precision="strict", cache_dir=support.CACHE_DIR)
        cls.tf32 = fusegen.Runtime(precision="tf32", cache_dir=support.CACHE_DIR)

    def check_chain(self, shapes, chain, runtime, tolerance, sets=2):
        km = models()
        _n, factory, x_shape = km.CONFIGS[shapes][chain]
        n = BATCH[shapes][chain]
        torch.manual_seed(0)
        model = factory().cuda().train()
        f = runtime.load(support.spec(shapes, chain)).function()
        state = km.STATE.get(chain, [])
        for _ in range(sets):
            x = torch.rand(n, *x_shape, device="cuda")
            arguments = fusegen.module_arguments(model, km.ARGUMENTS[chain], function=f, x=x)
            before = {name: arguments[name].clone() for name in state}
            with torch.no_grad():  # the module's parameters require grad; fusions have no backward
                y = f(**arguments)  # updates the module's running stats in place
            after = {name: arguments[name].clone() for name in state}
            for name in state:  # back to the state before, for PyTorch's own update
                arguments[name].copy_(before[name])
            with torch.no_grad():
                expected = model(x)
            torch.cuda.synchronize()
            close(self, "%s %s y" % (shapes, chain), y, expected, tolerance)
            for name in state:
                close(self, "%s %s %s" % (shapes, chain, name), after[name], arguments[name], tolerance)

    def test_small_strict(self):
        for chain in ("62", "75", "39", "85"):
            with self.subTest(chain=chain):
                self.check_chain("small", chain, self.strict, 1e-4)

    def test_v01_strict(self):
        for chain in ("62", "75", "39", "85"):
            with self.subTest(chain=chain):
                self.check_chain("v0.1", chain, self.strict, 1e-4)

    def test_small_tf32(self):
        for chain in ("62", "75", "39", "85"):
            with self.subTest(chain=chain):
                self.check_chain("small", chain, self.tf32, 1e-2, sets=1)


@unittest.skipUnless(torch, NO_GPU)
@support.requires_library
class TorchCallTest(unittest.TestCase):
    SPEC = """
fusion scale_add {
  input  x : f32[N, 16]
  param  s : f32[16]
  output y = x * s + x
}
fusion two {
  input  a : f32[M, 4]
  output p = a + a
  output q = a * a
}
"""

    @classmethod
    def setUpClass(cls):
        cls.runtime = fusegen.Runtime(cache_dir=support.CACHE_DIR)
        cls.program = cls.runtime.load_string(cls.SPEC, name="torch.fg")
        cls.f = cls.program.function("scale_add")

    def test_call_and_out(self):
        x = torch.rand(8, 16, device="cuda")
        s = torch.nn.Parameter(torch.rand(16, device="cuda"))  # parameters are tensors too
        with self.assertRaisesRegex(fusegen.ArgumentError, "argument 's' of scale_add requires grad"):
            self.f(x=x, s=s)  # grad mode on: refused, never silently detached
        s.requires_grad_(False)
        y = self.f(x=x, s=s)
        self.assertEqual(y.dtype, torch.float32)
        self.assertEqual(y.device, x.device)
        close(self, "y", y, x * s.detach() + x, 1e-6)
        out = torch.full((8, 16), float("nan"), device="cuda")
        self.assertIs(self.f(x=x, s=s, out={"y": out}), out)
        close(self, "out", out, y, 0)
        p, q = self.program.function("two")(a=x[:, :4].contiguous())
        close(self, "p", p, 2 * x[:, :4], 1e-6)
        close(self, "q", q, x[:, :4] * x[:, :4], 1e-6)

    def test_shapes_in_turn(self):
        # The C path keeps its last plan and each plan's bound call: shapes in
        # turn, with new tensors each time, allocated and with out=, two outputs.
        f, two = self.program.function("scale_add"), self.program.function("two")
        s = torch.rand(16, device="cuda")
        for n in (3, 8, 3, 8, 5, 3):
            x = torch.rand(n, 16, device="cuda")
            close(self, "y at N=%d" % n, f(x=x, s=s), x * s + x, 1e-6)
            out = torch.full((n, 16), float("nan"), device="cuda")
            self.assertIs(f(x=x, s=s, out={"y": out}), out)
            close(self, "out at N=%d" % n, out, x * s + x, 1e-6)
            a = x[:, :4].contiguous()
            p, q = two(a=a)
            close(self, "p at M=%d" % n, p, a + a, 1e-6)
            close(self, "q at M=%d" % n, q, a * a, 1e-6)
        if f._fast:
            self.assertGreater(f._fast.taken, 6)  # all but each shape's first call ran in C

    def test_current_stream(self):
        stream = torch.cuda.Stream()
        x = torch.rand(1 << 12, 16, device="cuda")
        s = torch.rand(16, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            y = self.f(x=x, s=s)
            expected = x * s + x
        stream.synchronize()
        close(self, "y", y, expected, 1e-6)

    def test_threads_share_plans(self):
        # Calls with the same shapes share one plan (its ctypes arrays): from
        # several threads at once, every call must still launch with its own
        # pointers. Each call gets its own output (out= and allocated), so a
        # call that took another thread's pointers would show in the end.
        import threading
        s = torch.rand(16, device="cuda")
        xs = [torch.full((4, 16), float(t + 1), device="cuda") for t in range(8)]
        outs = [[torch.empty(4, 16, device="cuda") for _ in range(100)] for _ in xs]
        allocated = [[] for _ in xs]
        errors = []

        def work(t):
            try:
                for i, y in enumerate(outs[t]):
                    self.f(x=xs[t], s=s, out={"y": y})
                    if i % 4 == 0:
                        allocated[t].append(self.f(x=xs[t], s=s))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(len(xs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        torch.cuda.synchronize()
        self.assertEqual(errors, [])
        for t, x in enumerate(xs):
            expected = x * s + x
            for y in outs[t] + allocated[t]:
                close(self, "thread %d" % t, y, expected, 1e-6)

    def test_tensor_subclasses(self):
        # torch.Tensor and nn.Parameter are read through torch.Tensor's own
        # accessors, looked up once; a subclass that overrides one is read by
        # name, so its override is what the call sees. The Python call path
        # (FUSEGEN_FASTCALL=0) reads every tensor by name.
        f = self.program.function("scale_add")
        x = torch.rand(8, 16, device="cuda")
        s = torch.nn.Parameter(torch.rand(16, device="cuda"), requires_grad=False)  # (grad: refused)
        close(self, "parameter", f(x=x, s=s), x * s.detach() + x, 1e-6)
        fast = f._fast or None  # the C call path, where it is built and on
        if fast:
            self.assertEqual(fast.direct_types, (torch.Tensor, torch.nn.Parameter))
        reads = []

        class Watched(torch.Tensor):
            def data_ptr(self):
                reads.append(1)
                return super().data_ptr()

        taken = fast.taken if fast else None
        watched = x.as_subclass(Watched)
        y = f(x=watched, s=s)
        if fast:
            self.assertEqual(fast.taken, taken + 1)  # the C path took it
        self.assertEqual(len(reads), 1)
        close(self, "subclass", y.as_subclass(torch.Tensor), x * s.detach() + x, 1e-6)

    def test_torch_reader(self):
        # Where the package was built against this torch (python/cmake/
        # TorchReader.cmake builds fusegen._torchread where torch is
        # importable), the C path reads
        # torch.Tensor and nn.Parameter through torch's C++ API.
        import importlib
        try:
            torchread = importlib.import_module(fusegen.__name__ + "._torchread")
        except ImportError:
            self.skipTest("skipped: fusegen._torchread was not built (no torch when the package was built)")
        self.assertEqual(torchread.torch_version, torch.__version__)
        f = self.program.function("scale_add")
        x = torch.rand(8, 16, device="cuda")
        s = torch.nn.Parameter(torch.rand(16, device="cuda"))
        close(self, "first call", f(x=x, s=s), x * s.detach() + x, 1e-6)
        if not f._fast:
            self.skipTest("skipped: the C call path is off (FUSEGEN_FASTCALL=0)")
        self.assertTrue(f._fast.reads_with_torch)
        taken = f._fast.taken
        out = torch.full((8, 16), float("nan"), device="cuda")
        self.assertIs(f(x=x, s=s, out={"y": out}), out)
        close(self, "out=", out, x * s.detach() + x, 1e-6)
        view = torch.rand(16, 16, device="cuda")[8:]  # contiguous, at an offset into its storage
        y = f(x=view, s=s)  # allocated through torch's C++ API too
        close(self, "a view", y, view * s.detach() + view, 1e-6)
        self.assertIs(type(y), torch.Tensor)
        self.assertTrue(y.is_contiguous())
        self.assertFalse(y.requires_grad)
        self.assertEqual(f._fast.taken, taken + 2)
        # What it does not take still gets the Python path's words.
        with self.assertRaisesRegex(fusegen.ArgumentError, "is not contiguous"):
            f(x=torch.rand(16, 8, device="cuda").t(), s=s)

    def test_rejected_tensors(self):
        s = torch.rand(16, device="cuda")
        cases = [(torch.rand(8, 16), "is a tensor on cpu"),
                 (torch.rand(8, 16, device="cuda", dtype=torch.float64), "has dtype torch.float64"),
                 (torch.rand(16, 8, device="cuda").t(), "is not contiguous")]
        for x, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(fusegen.ArgumentError, "argument 'x' of scale_add " + message):
                    self.f(x=x, s=s)
        with self.assertRaises(fusegen.ArgumentError):
            self.f(x=torch.rand(8, 15, device="cuda"), s=s)

    def test_prepare_and_stats(self):
        runtime = fusegen.Runtime(cache_dir=support.CACHE_DIR)
        f = runtime.load_string(self.SPEC, name="torch.fg").function("scale_add")
        f.prepare(N=32)
        before = runtime.stats()
        f(x=torch.rand(32, 16, device="cuda"), s=torch.rand(16, device="cuda"))
        after = runtime.stats()
        self.assertEqual(after["calls"], before["calls"] + 1)
        self.assertEqual(after["compiles"], before["compiles"])


class InterfaceArray:
    """A torch tensor seen only through __cuda_array_interface__ v3, with the producer
    stream `stream` (the CuPy and Numba kind of argument)."""

    def __init__(self, tensor, stream):
        self.tensor = tensor  # keeps the memory alive
        self.__cuda_array_interface__ = dict(tensor.__cuda_array_interface__, version=3, stream=stream)


@unittest.skipUnless(torch, NO_GPU)
@support.requires_library
class InterfaceStreamTest(unittest.TestCase):
    """The call waits for the work pending on an interface array's stream. The producer's
    work is held back (torch.cuda._sleep) on a torch side stream, which does not synchronize
    with the call's stream by itself: without the wait the call would read or write the
    arrays before the producer is done."""

    SPEC = "fusion add {\n  input a : f32[N, 16]\n  input b : f32[N, 16]\n  output y = a + b\n}\n"
    ROWS = 1 << 16

    @classmethod
    def setUpClass(cls):
        cls.f = fusegen.Runtime(cache_dir=support.CACHE_DIR).load_string(cls.SPEC, name="add.fg").function()

    def run_after_producer(self, produce, call):
        """Runs produce() on a side stream after about 50 ms of spinning, then call(producer's
        handle) at once; returns when both are done."""
        torch.cuda.synchronize()
        producer = torch.cuda.Stream()
        with torch.cuda.stream(producer):
            torch.cuda._sleep(100_000_000)  # cycles: tens of ms, far longer than the call takes to launch
            produce()
        call(producer.cuda_stream)
        torch.cuda.synchronize()

    def test_inputs_and_outputs_wait_for_their_producer(self):
        a, b, y = (torch.zeros(self.ROWS, 16, device="cuda") for _ in range(3))
        self.f(a=a, b=b, out={"y": y})  # compiled and loaded before the timed part
        consumer = torch.cuda.Stream()
        for on in (None, consumer):  # the legacy default stream, and a stream of the call's own
            with self.subTest(stream="legacy default" if on is None else "given"):
                # An input the producer writes: the call must read the new values.
                a.zero_(), b.fill_(1.0), y.zero_()
                self.run_after_producer(lambda: a.fill_(2.0), lambda producer: self.f.call(
                    {"a": InterfaceArray(a, producer), "b": InterfaceArray(b, None)},
                    out={"y": InterfaceArray(y, None)}, stream=on))
                self.assertTrue(bool((y == 3.0).all()), "y = a + b read a before its producer wrote it")
                # An output the producer writes: the call's result must come after it.
                a.fill_(2.0)
                self.run_after_producer(lambda: y.fill_(-1.0), lambda producer: self.f.call(
                    {"a": InterfaceArray(a, 1 if on is None else None), "b": InterfaceArray(b, None)},
                    out={"y": InterfaceArray(y, producer)}, stream=on))
                self.assertTrue(bool((y == 3.0).all()), "the producer's write of y came after the call's")


if __name__ == "__main__":
    unittest.main()
