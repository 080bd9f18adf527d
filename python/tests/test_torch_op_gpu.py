"""The custom op (Function.torch_op) on a GPU, for the four seed fusions
(specs/kernelbench/small; opcheck also at KernelBench's own sizes, specs/kernelbench/*.fg):
torch.library.opcheck, torch.compile(fullgraph=True)
and CUDA graph capture against the fusion called directly ("eager"), within 1e-4;
positional calls and the refusal of inputs that require grad on the real call path.
Needs torch with CUDA: "skipped: no GPU" otherwise."""

import unittest

import support
from support import fusegen

torch = support.torch_with_cuda()
NO_GPU = "skipped: no GPU (torch with CUDA is not available)"
CHAINS = ("39", "62", "75", "85")
TOLERANCE = 1e-4


def example_args(f, n=4):
    torch.manual_seed(0)
    args = []
    for spec in f.arguments:
        shape = tuple(n if isinstance(d, str) else d for d in spec.dims)
        t = torch.rand(shape, device="cuda")
        args.append(t + 0.5 if spec.name == "running_var" else t)  # a variance is positive
    return args


def clones(args):
    return [a.clone() for a in args]


@unittest.skipUnless(torch, NO_GPU)
@support.requires_library
class TorchOpGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.torch_fp32_strict(torch)
        cls.runtime = fusegen.Runtime(precision="strict", cache_dir=support.CACHE_DIR)
        cls.functions = {c: cls.runtime.load(support.spec("small", c)).function() for c in CHAINS}
        cls.ops = {c: f.torch_op(namespace="fusegen_gpu_test") for c, f in cls.functions.items()}

    def assert_close(self, actual, expected, what):
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE, msg=what)

    def test_opcheck(self):
        for chain, op in self.ops.items():
            with self.subTest(chain=chain):
                torch.library.opcheck(op, tuple(example_args(self.functions[chain])))

    def test_opcheck_at_kernelbench_sizes(self):
        """Every seed fusion at KernelBench's own sizes (specs/kernelbench/*.fg), N=4 and N=64."""
        for chain in CHAINS:
            f = self.runtime.load(support.spec("v0.1", chain)).function()
            op = f.torch_op(namespace="fusegen_gpu_test_v01")
            for n in (4, 64):
                with self.subTest(chain=chain, n=n):
                    torch.library.opcheck(op, tuple(example_args(f, n)))

    def test_op_and_positional_calls_match_keyword_calls(self):
        for chain, f in self.functions.items():
            with self.subTest(chain=chain):
                args = example_args(f)
                a, b, c = clones(args), clones(args), clones(args)
                expected = f(**dict(zip(f.argument_names, a)))
                self.assert_close(f(*b), expected, "f(*args)")
                self.assert_close(self.ops[chain](*c), expected, "op(*args)")
                for x, y in zip(a, c):
                    self.assert_close(y, x, "state after the op")

    def test_torch_compile_fullgraph(self):
        for chain, f in self.functions.items():
            op = self.ops[chain]
            with self.subTest(chain=chain):
                torch._dynamo.reset()
                compiled = torch.compile(lambda *args: op(*args) * 2.0, fullgraph=True)
                for n in (4, 6):
                    args = example_args(f, n)
                    eager_args, compiled_args = clones(args), clones(args)
                    expected = f(*eager_args) * 2.0
                    self.assert_close(compiled(*compiled_args), expected, "compiled, N=%d" % n)
                    for x, y in zip(eager_args, compiled_args):
                        self.assert_close(y, x, "state after the compiled op")

    def test_cuda_graph_capture(self):
        for chain, f in self.functions.items():
            op = self.ops[chain]
            with self.subTest(chain=chain):
                static = example_args(f)
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    op(*clones(static))  # warm-up: compiles and loads the kernels
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                # Captured on the warm-up's stream: fusegen keeps a workspace per
                # stream, allocated at the first call there (no allocation in a capture).
                with torch.cuda.graph(graph, stream=stream):  # records the launches, runs nothing
                    captured = op(*static)
                fresh = example_args(f)
                fresh[0] = torch.rand_like(fresh[0])  # new input, same shape
                for s, a in zip(static, fresh):
                    s.copy_(a)
                graph.replay()
                torch.cuda.synchronize()
                eager = clones(fresh)
                self.assert_close(captured, f(*eager), "replayed graph")
                for x, y in zip(eager, static):
                    self.assert_close(y, x, "state after the replay")

    def test_requires_grad_is_refused_on_the_call_path(self):
        f = self.functions["62"]
        args = example_args(f)
        args[1].requires_grad_(True)
        with self.assertRaisesRegex(fusegen.ArgumentError, "argument 'w' of matmul_groupnorm_leakyrelu_sum "
                                    "requires grad"):
            f(*args)
        with self.assertRaisesRegex(fusegen.ArgumentError, "requires grad"):
            f(**dict(zip(f.argument_names, args)))
        with self.assertRaisesRegex(fusegen.ArgumentError, "requires grad"):
            self.ops["62"](*args)
        with torch.no_grad():
            y = f(*args)
            self.assertFalse(y.requires_grad)
            self.assert_close(self.ops["62"](*args), y, "op under no_grad")

    def test_devices_given_as_torch_devices(self):
        runtime = fusegen.Runtime(device=torch.device("cuda", 0), cache_dir=support.CACHE_DIR)
        self.assertEqual(runtime.device, 0)
        self.assertEqual(fusegen.default_runtime("cuda:0"), fusegen.default_runtime(0))


if __name__ == "__main__":
    unittest.main()
