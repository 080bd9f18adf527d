"""The torch.compile backend without a GPU: the runs of nodes the partitioner finds in
aot_autograd's ATen graphs, the graph it rewrites (fusegen custom ops for the runs, the
rest left to PyTorch), that graph run on the CPU with each fusion's op computed by the
float64 reference interpreter (`fusegen run --reference`, registered as the ops' CPU
kernel here) against the original graph within 1e-4, and the fallback to eager
PyTorch, with one warning, for CPU tensors.

Skipped without torch, unless FUSEGEN_REQUIRE_TORCH=1 (scripts/test.sh sets it)."""

import copy
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import support
from support import fusegen

np, torch, nn, F = support.import_optional("numpy", "torch", "torch.nn", "torch.nn.functional")
NO_TORCH, NO_CLI = support.NO_TORCH, support.NO_CLI

if support.SCRIPTS not in sys.path:
    sys.path.insert(0, support.SCRIPTS)

if torch is not None:
    class ConvBatchNormScale(nn.Module):  # KernelBench 73
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x):
            return self.bn(self.conv(x)) * 2.0

    class SplitByWhere(nn.Module):
        """A run, an op fusegen lacks (where, on a bool mask), another run."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)

        def forward(self, x):
            h = torch.relu(self.fc(x))
            h = torch.where(h > 0.1, h, -h)
            return torch.sigmoid(h) * 3.0

    class SplitByTranspose(nn.Module):
        """transpose maps only as a matmul weight: the translation refuses it here, and the
        run is split around it (the transposed tensor is copied to be contiguous)."""

        def forward(self, x):
            h = torch.relu(x) + 1.0
            h = h.transpose(1, 2)
            return (h * 2.0).sum(dim=2)


def captured(model, inputs):
    """aot_autograd's inference graph of `model` (what the backend partitions) and its inputs."""
    from torch._dynamo.backends.common import aot_autograd
    graphs = []

    def record(gm, example_inputs):
        def inference(aten_gm, aten_inputs):
            graphs.append((aten_gm, aten_inputs))
            return aten_gm.forward
        return aot_autograd(fw_compiler=inference)(gm, example_inputs)

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(copy.deepcopy(model), backend=record)(*inputs)
    return graphs[0]


def fusegen_ops(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function" and str(n.target).startswith("fusegen.")]


def aten_ops(gm):
    return [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function" and hasattr(n.target, "_schema")
            and not str(n.target).startswith("fusegen.")]


@unittest.skipUnless(torch, NO_TORCH)
@support.requires_library
class PartitionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import fusegen.dynamo
        cls.dynamo = fusegen.dynamo
        cls.cli = support.fusegen_cli()
        cls.work = tempfile.mkdtemp(prefix="fusegen-dynamo-test-")
        cls.cpu_kernels = set()

    def reference_kernel(self, op):
        """The op's CPU kernel: its spec run by `fusegen run --reference` on the arguments."""
        spec = self.dynamo.spec_of(op)
        function = fusegen.load_string(spec).function()
        folder = os.path.join(self.work, op.name().split("::")[1])
        os.makedirs(os.path.join(folder, "in"), exist_ok=True)
        with open(os.path.join(folder, "spec.fg"), "w") as f:
            f.write(spec)

        def kernel(*args):
            for a, t in zip(function.arguments, args):
                np.save(os.path.join(folder, "in", a.name + ".npy"), t.detach().numpy())
            done = subprocess.run([self.cli, "run", os.path.join(folder, "spec.fg"), "--reference", "--inputs",
                                   os.path.join(folder, "in"), "--save", os.path.join(folder, "out")],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            self.assertEqual(done.returncode, 0, done.stdout)
            load = lambda name: torch.from_numpy(np.load(os.path.join(folder, "out", "outputs", name + ".npy")))  # noqa
            for a, t in zip(function.arguments, args):
                if a.kind == "state":
                    t.copy_(load(a.name).float())
            outs = [load(o.name).float() for o in function.outputs]
            return outs[0] if len(outs) == 1 else tuple(outs)
        if op.name() not in self.cpu_kernels:
            self.cpu_kernels.add(op.name())
            library = torch.library.Library("fusegen", "FRAGMENT")
            library.impl(op.name().split("::")[1], kernel, "CPU")
            self.__class__._libraries = getattr(self.__class__, "_libraries", []) + [library]

    def rewrite_and_run(self, model, inputs):
        """torch.compile of a copy of `model` with the backend's partitioning, on the CPU (each
        fusion computed by the reference), against `model` itself: the outputs and the buffers
        (running statistics, num_batches_tracked) within 1e-4. Returns the rewritten graph."""
        if not self.cli:
            self.skipTest(NO_CLI)
        from torch._dynamo.backends.common import aot_autograd
        rewritten = []

        def cpu_backend(gm, example_inputs):
            def inference(aten_gm, aten_inputs):
                graph = self.dynamo.partition_graph(aten_gm, aten_inputs)
                for op in set(fusegen_ops(graph)):
                    self.reference_kernel(op)
                rewritten.append(graph)
                return graph.forward
            return aot_autograd(fw_compiler=inference)(gm, example_inputs)

        twin = copy.deepcopy(model)
        torch._dynamo.reset()
        with torch.no_grad():
            got = torch.compile(twin, backend=cpu_backend)(*inputs)
            expected = model(*inputs)
        pairs = [("output", got, expected)] + [("buffer " + name, b, dict(model.named_buffers())[name])
                                               for name, b in twin.named_buffers()]
        for what, g, e in pairs:
            self.assertEqual(tuple(g.shape), tuple(e.shape), what)
            if g.dtype == torch.float32:
                self.assertTrue(torch.allclose(g, e, atol=1e-4, rtol=1e-4), "%s: max error %.3g"
                                % (what, (g - e).abs().max().item()))
            else:
                self.assertTrue(torch.equal(g, e), what)
        self.assertEqual(len(rewritten), 1)
        return rewritten[0]

    def test_one_run_for_a_conv_batch_norm_chain(self):
        torch.manual_seed(0)
        model = ConvBatchNormScale().train()
        gm, _ = captured(model, [torch.randn(2, 3, 8, 8)])
        self.assertEqual(self.dynamo.fusable_runs(gm), [[
            "convolution", "_native_batch_norm_legit_functional", "getitem", "getitem_3", "getitem_4", "mul"]])
        rewritten = self.rewrite_and_run(model, [torch.randn(2, 3, 8, 8)])
        self.assertEqual(len(fusegen_ops(rewritten)), 1)
        # num_batches_tracked += 1 (an int64 add) stays with PyTorch; the running stats are copies the fusion writes
        self.assertEqual(sorted(aten_ops(rewritten)), ["add.Tensor", "clone.default", "clone.default"])
        spec = self.dynamo.spec_of(fusegen_ops(rewritten)[0])
        self.assertIn("batch_norm(convolution, arg4_1, arg5_1", spec)
        self.assertIn("state  arg4_1", spec)

    def test_an_unsupported_op_splits_the_graph_into_two_runs(self):
        torch.manual_seed(1)
        model = SplitByWhere()
        gm, _ = captured(model, [torch.randn(4, 16)])
        runs = self.dynamo.fusable_runs(gm)
        self.assertEqual(runs, [["t", "addmm", "relu", "neg"], ["sigmoid", "mul"]])
        rewritten = self.rewrite_and_run(model, [torch.randn(4, 16)])
        self.assertEqual(len(fusegen_ops(rewritten)), 2)
        self.assertEqual(sorted(aten_ops(rewritten)), ["gt.Scalar", "where.self"])

    def test_a_node_the_translation_refuses_is_left_out_of_the_run(self):
        torch.manual_seed(2)
        model = SplitByTranspose()
        gm, _ = captured(model, [torch.randn(2, 3, 4)])
        self.assertEqual(self.dynamo.fusable_runs(gm), [["relu", "add", "transpose", "mul", "sum_1"]])
        rewritten = self.rewrite_and_run(model, [torch.randn(2, 3, 4)])
        self.assertEqual(len(fusegen_ops(rewritten)), 2)
        self.assertIn("transpose.int", aten_ops(rewritten))
        self.assertIn("clone.default", aten_ops(rewritten))  # the transposed view, made contiguous

    def test_kernelbench_graphs_run_as_one_fusion(self):
        import check_from_module
        for number in ("11", "38", "55", "89"):
            with self.subTest(problem=number):
                model, inputs = check_from_module.build(number)
                rewritten = self.rewrite_and_run(model, inputs)
                self.assertEqual(len(fusegen_ops(rewritten)), 1)

    def test_cpu_tensors_run_eagerly_with_one_warning(self):
        import fusegen._dynamo_backend as backend_module
        backend_module._warned.discard("cpu")
        torch._dynamo.reset()
        model = ConvBatchNormScale().eval()
        x = torch.randn(2, 3, 8, 8)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = torch.compile(model, backend="fusegen")
            with torch.no_grad():
                y = compiled(x)
                compiled(torch.randn(3, 3, 8, 8))  # a recompile: no second warning
        messages = [str(w.message) for w in caught if "fusegen" in str(w.message)]
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("not all CUDA tensors", messages[0])
        with torch.no_grad():
            self.assertTrue(torch.allclose(y, model(x)))

    def test_backend_options_are_checked(self):
        with self.assertRaisesRegex(ValueError, "fallback must be 'eager' or 'inductor'"):
            self.dynamo.backend(fallback="aot_eager")
        with self.assertRaisesRegex(ValueError, "precision must be"):
            self.dynamo.backend(precision="fp16")
        self.assertIs(fusegen.register_backend(), self.dynamo.fusegen_backend)  # registering again replaces it


if __name__ == "__main__":
    unittest.main()
