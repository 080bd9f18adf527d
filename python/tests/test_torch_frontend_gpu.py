"""fusegen.from_module and torch.compile(backend="fusegen") on a GPU: KernelBench-style
modules with their own weights, against eager PyTorch (fp32, no TF32) within 1e-4,
running statistics included; the backend's graph shows fusegen ops for the supported
parts; fallback="inductor" runs the unsupported middle of a graph with Inductor;
dynamic batch sizes run through one fusion with a symbolic dim; torch.library.opcheck
passes on every op the backend made for these problems. Needs torch with CUDA;
without a GPU every test prints "skipped: no GPU"."""

import copy
import sys
import unittest

import support
from support import fusegen

torch = support.torch_with_cuda()
NO_GPU = "skipped: no GPU (torch with CUDA is not available)"
TOLERANCE = 1e-4

if support.SCRIPTS not in sys.path:
    sys.path.insert(0, support.SCRIPTS)

# Small shapes (scripts/check_from_module.py's) of a sample of the 65 problems: linear, 2-d and 3-d
# (transposed) convolutions, batch norm in training mode, group norm, softmax over a merged view,
# 1-d pools over an unsqueezed linear output, a viewed parameter.
PROBLEMS = ("11", "19", "38", "55", "73", "85", "89", "98")


def close(test, what, got, want):
    test.assertEqual(tuple(got.shape), tuple(want.shape), what)
    if got.dtype.is_floating_point:
        error = (got - want).abs().max().item() if got.numel() else 0.0
        test.assertTrue(torch.allclose(got, want, atol=TOLERANCE, rtol=TOLERANCE),
                        "%s: max abs error %.3g exceeds %g" % (what, error, TOLERANCE))
    else:
        test.assertTrue(torch.equal(got, want), what)


def new_graphs(dynamo, seen):
    """The graphs the backend made since `seen` (a copy of compiled_graphs, which keeps only the last 16)."""
    return [g for g in dynamo.compiled_graphs if not any(g is s for s in seen)]


def problem(number):
    import check_from_module
    model, inputs = check_from_module.build(number)
    return model.cuda(), [t.cuda() for t in inputs]


@unittest.skipUnless(torch, NO_GPU)
@support.requires_library
class TorchFrontendGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.torch_fp32_strict(torch)
        import fusegen.dynamo
        cls.dynamo = fusegen.dynamo

    def compare(self, run, model, inputs):
        """run(twin, inputs) against model(*inputs): the output and every buffer."""
        twin = copy.deepcopy(model)
        with torch.no_grad():
            got = run(twin, inputs)
            want = model(*inputs)
        got = got if isinstance(got, (tuple, list)) else [got]
        want = want if isinstance(want, (tuple, list)) else [want]
        for i, (g, w) in enumerate(zip(got, want)):
            close(self, "output %d" % i, g, w)
        buffers = dict(model.named_buffers())
        for name, b in twin.named_buffers():
            close(self, "buffer " + name, b, buffers[name])

    def test_from_module_matches_the_modules(self):
        for number in PROBLEMS:
            with self.subTest(problem=number):
                model, inputs = problem(number)
                self.compare(lambda twin, xs: fusegen.from_module(twin, xs)(*xs), model, inputs)

    def test_backend_matches_eager_and_fuses(self):
        for number in PROBLEMS:
            with self.subTest(problem=number):
                model, inputs = problem(number)
                torch._dynamo.reset()
                seen = list(self.dynamo.compiled_graphs)
                self.compare(lambda twin, xs: torch.compile(twin, backend="fusegen")(*xs), model, inputs)
                graphs = new_graphs(self.dynamo, seen)
                self.assertTrue(graphs, "the backend compiled no graph")
                ops = [n.target for n in graphs[-1].graph.nodes if str(n.target).startswith("fusegen.")]
                self.assertEqual(len(ops), 1, graphs[-1].graph)

    def test_backend_leaves_unsupported_ops_to_pytorch(self):
        class SplitByWhere(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(64, 32)

            def forward(self, x):
                h = torch.relu(self.fc(x))
                h = torch.where(h > 0.1, h, -h)
                return torch.sigmoid(h) * 3.0

        torch.manual_seed(0)
        model = SplitByWhere().cuda()
        torch._dynamo.reset()
        self.compare(lambda twin, xs: torch.compile(twin, backend="fusegen")(*xs), model,
                     [torch.randn(16, 64, device="cuda")])
        graph = self.dynamo.compiled_graphs[-1].graph
        self.assertEqual(len([n for n in graph.nodes if str(n.target).startswith("fusegen.")]), 2)
        self.assertIn("aten.where.self", [str(n.target) for n in graph.nodes])

    def test_inductor_fallback_runs_the_unsupported_middle(self):
        class WhereInTheMiddle(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(64, 32)
                self.bn = torch.nn.BatchNorm1d(32)

            def forward(self, x):
                h = torch.relu(self.bn(self.fc(x)))
                h = torch.where(h > 0.1, h, -h)  # no fusegen op: Inductor compiles it
                return torch.sigmoid(h) * 3.0

        torch.manual_seed(1)
        model = WhereInTheMiddle().cuda().train()
        torch._dynamo.reset()
        backend = self.dynamo.backend(fallback="inductor")
        self.compare(lambda twin, xs: torch.compile(twin, backend=backend)(*xs), model,
                     [torch.randn(16, 64, device="cuda")])
        graph = self.dynamo.compiled_graphs[-1].graph
        self.assertEqual(len([n for n in graph.nodes if str(n.target).startswith("fusegen.")]), 2, graph)
        self.assertIn("aten.where.self", [str(n.target) for n in graph.nodes])

    def test_dynamic_batch_runs_one_fusion_with_a_symbolic_dim(self):
        class LinearGroupNorm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(64, 32)
                self.gn = torch.nn.GroupNorm(4, 32)

            def forward(self, x):
                return torch.nn.functional.leaky_relu(self.gn(self.fc(x)), 0.01) * 2.0

        torch.manual_seed(2)
        model = LinearGroupNorm().cuda()
        for how in ("dynamic=True", "mark_dynamic"):
            with self.subTest(how=how):
                torch._dynamo.reset()
                seen = list(self.dynamo.compiled_graphs)
                compiled = torch.compile(model, backend="fusegen", dynamic=True if how == "dynamic=True" else None)
                for n in (8, 24, 40):
                    x = torch.randn(n, 64, device="cuda")
                    if how == "mark_dynamic":
                        torch._dynamo.mark_dynamic(x, 0)
                    with torch.no_grad():
                        close(self, "N=%d" % n, compiled(x), model(x))
                graphs = new_graphs(self.dynamo, seen)
                self.assertEqual(len(graphs), 1, "one compilation serves every batch size")
                ops = [n.target for n in graphs[0].graph.nodes if str(n.target).startswith("fusegen.")]
                self.assertEqual(len(ops), 1, graphs[0].graph)
                self.assertRegex(self.dynamo.spec_of(ops[0]), r"f32\[s\d+, 64\]")

    def test_opcheck_on_the_backends_ops(self):
        from fusegen import _torch_op
        for number in PROBLEMS:
            with self.subTest(problem=number):
                model, inputs = problem(number)
                torch._dynamo.reset()
                seen = list(self.dynamo.compiled_graphs)
                with torch.no_grad():
                    torch.compile(copy.deepcopy(model), backend="fusegen")(*inputs)
                ops = {n.target for g in new_graphs(self.dynamo, seen) for n in g.graph.nodes
                       if str(n.target).startswith("fusegen.")}
                self.assertTrue(ops)
                for op in ops:
                    function = _torch_op._registered[op.name()][0]
                    torch.manual_seed(0)
                    args = [torch.rand(tuple(d if isinstance(d, int) else 4 for d in a.dims), device="cuda") + 0.5
                            for a in function.arguments]  # + 0.5: running variances are positive
                    torch.library.opcheck(op, tuple(args))

    def test_from_module_with_dynamic_shapes(self):
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU()).cuda().train()
        twin = copy.deepcopy(model)
        fusion = fusegen.from_module(twin, [torch.randn(16, 64, device="cuda")],
                                     dynamic_shapes=({0: torch.export.Dim("batch", min=2)},))
        for n in (16, 5, 33):
            x = torch.randn(n, 64, device="cuda")
            with torch.no_grad():
                close(self, "N=%d" % n, fusion(x), model(x))
            for (name, b), want in zip(twin.named_buffers(), model.buffers()):
                close(self, "buffer %s after N=%d" % (name, n), b, want)

    def test_backend_falls_back_when_grad_is_needed(self):
        import warnings

        import fusegen._dynamo_backend as backend_module
        model, inputs = problem("85")
        torch._dynamo.reset()
        backend_module._warned.discard("grad")  # it warns once per process
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = torch.compile(model, backend="fusegen")(*inputs)  # grad mode, parameters require grad
        self.assertTrue(y.requires_grad)  # eager PyTorch ran it: a backward is possible
        self.assertTrue(any("needs grad" in str(w.message) for w in caught), [str(w.message) for w in caught])


if __name__ == "__main__":
    unittest.main()
