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


    class LinearGroupNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)
            self.gn = nn.GroupNorm(2, 8)

        def forward(self, x):
            return F.leaky_relu(self.gn(self.fc(x)), 0.01) * 2.0

    class LinearBatchNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)
            self.bn = nn.BatchNorm1d(8)

        def forward(self, x):
            return torch.relu(self.bn(self.fc(x))) * 2.0

    class PointwiseConv(nn.Module):
        """A 1x1 convolution keeps a dynamic spatial dim a plain symbol (fusegen maps it); a 3x3 one
        makes it an expression (H - 2), which has no spec form: that part stays with PyTorch."""

        def __init__(self, kernel_size):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, kernel_size)

        def forward(self, x):
            return torch.relu(self.conv(x)) * 2.0


def captured(model, inputs, dynamic=None):
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
        torch.compile(copy.deepcopy(model), backend=record, dynamic=dynamic)(*inputs)
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
            dims = {}
            for a, t in zip(function.arguments, args):
                np.save(os.path.join(folder, "in", a.name + ".npy"), t.detach().numpy())
                dims.update({d: n for d, n in zip(a.dims, t.shape) if isinstance(d, str)})
            done = subprocess.run([self.cli, "run", os.path.join(folder, "spec.fg"), "--reference", "--inputs",
                                   os.path.join(folder, "in"), "--save", os.path.join(folder, "out")] +
                                  (["--dims", ",".join("%s=%d" % kv for kv in sorted(dims.items()))] if dims else []),
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

    def rewrite_and_run(self, model, inputs, dynamic=None, more_inputs=(), fallback="eager"):
        """torch.compile of a copy of `model` with the backend's partitioning, on the CPU (each
        fusion computed by the reference), against `model` itself: the outputs and the buffers
        (running statistics, num_batches_tracked) within 1e-4, for `inputs` and then each of
        `more_inputs` (other sizes: with dynamic shapes, the same compilation). fallback:
        what runs the rest of the graph (the backend's own `finish`). Returns the rewritten graph."""
        if not self.cli:
            self.skipTest(NO_CLI)
        from torch._dynamo.backends.common import aot_autograd
        import fusegen._dynamo_backend as backend_module
        rewritten = []

        def cpu_backend(gm, example_inputs):
            def inference(aten_gm, aten_inputs):
                graph = self.dynamo.partition_graph(aten_gm, aten_inputs)
                for op in set(fusegen_ops(graph)):
                    self.reference_kernel(op)
                rewritten.append(graph)
                return backend_module.finish(graph, aten_inputs, fallback)
            return aot_autograd(fw_compiler=inference)(gm, example_inputs)

        twin = copy.deepcopy(model)
        torch._dynamo.reset()
        compiled = torch.compile(twin, backend=cpu_backend, dynamic=dynamic)
        pairs = []
        for xs in [inputs] + list(more_inputs):
            with torch.no_grad():
                got = compiled(*xs)
                expected = model(*xs)
            pairs.append(("output at %s" % [list(x.shape) for x in xs], got, expected))
        pairs += [("buffer " + name, b, dict(model.named_buffers())[name]) for name, b in twin.named_buffers()]
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

    # ---- torch.library.opcheck on the backend's ops, on the CPU ----

    def test_opcheck_on_the_ops_the_backend_makes(self):
        """opcheck's schema, autograd-registration, fake-tensor and aot_dispatch checks on CPU tensors
        (each op's CPU kernel is the reference interpreter, registered by this test)."""
        from fusegen import _torch_op
        torch.manual_seed(8)
        for name, model, x in (("batch norm state", ConvBatchNormScale().train(), torch.randn(2, 3, 8, 8)),
                               ("where", SplitByWhere(), torch.randn(4, 16))):
            rewritten = self.rewrite_and_run(model, [x])
            for op in set(fusegen_ops(rewritten)):
                with self.subTest(model=name, op=op.name()):
                    function = _torch_op._registered[op.name()][0]
                    args = [torch.rand(tuple(d if isinstance(d, int) else 3 for d in a.dims)) + 0.5
                            for a in function.arguments]
                    torch.library.opcheck(op, tuple(args))

    # ---- dynamic shapes: symbolic dims ----

    def test_dynamic_dims_are_symbolic_dims_of_the_spec(self):
        torch.manual_seed(3)
        gm, inputs = captured(LinearBatchNorm().train(), [torch.randn(4, 16)], dynamic=True)
        rewritten = self.dynamo.partition_graph(gm, inputs)
        ops = fusegen_ops(rewritten)
        self.assertEqual(len(ops), 1)
        spec = self.dynamo.spec_of(ops[0])
        batch = [str(t.shape[0]) for t in inputs if isinstance(t, torch.Tensor) and t.dim() == 2
                 and not isinstance(t.shape[0], int)]
        self.assertEqual(len(batch), 1, inputs)
        self.assertRegex(spec, r"input +\w+ +: f32\[%s, 16\]" % batch[0])
        self.assertIn("linear(", spec)
        # the op's fake implementation: the output's batch dim is the input's symbol, not a number
        from torch._guards import detect_fake_mode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp
        FakeTensorProp(rewritten, detect_fake_mode(inputs)).propagate_dont_convert_inputs(*inputs)
        call = next(n for n in rewritten.graph.nodes if n.target == ops[0])
        shape = call.meta["val"].shape
        self.assertEqual([str(d) for d in shape], [batch[0], "8"])
        self.assertNotIsInstance(shape[0], int)

    def test_one_compilation_serves_every_batch_size(self):
        torch.manual_seed(4)
        rewritten = self.rewrite_and_run(LinearBatchNorm().train(), [torch.randn(4, 16)], dynamic=True,
                                         more_inputs=[[torch.randn(7, 16)], [torch.randn(2, 16)]])
        self.assertEqual(len(fusegen_ops(rewritten)), 1)

    def test_unspecialized_float_attributes_become_constants_checked_per_call(self):
        # dynamic=True passes a module's float attribute (group_norm's eps) as a 0-dim CPU
        # tensor read with .item(): fusegen takes its value as a constant, and a call where
        # it changed runs the original graph instead
        from fusegen import _dynamo_backend
        torch.manual_seed(7)
        model = LinearGroupNorm()
        seen = []

        def record(gm, example_inputs):
            seen.append((gm, list(example_inputs)))
            return gm.forward
        torch._dynamo.reset()
        x = torch.randn(4, 16)
        with torch.no_grad():
            torch.compile(model, backend=record, dynamic=True)(x)
            gm, inputs = seen[0]
            found = _dynamo_backend.specialize_scalars(gm, inputs)
            self.assertEqual([v for _, v in found], [model.gn.eps], gm.graph)
            self.assertFalse([n for n in gm.graph.nodes if n.op == "call_method" and n.target == "item"])
            torch.testing.assert_close(gm(*inputs)[0], model(x), rtol=0, atol=0)

        call = _dynamo_backend.guard_scalars(lambda *a: "fused", found, lambda: lambda *a: "fallback")
        self.assertEqual(call(*inputs), "fused")
        changed = list(inputs)
        changed[found[0][0]] = torch.tensor(1e-3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertEqual(call(*changed), "fallback")
        self.assertTrue(any("specialized" in str(w.message) for w in caught), [str(w.message) for w in caught])
        self.assertEqual(call(*inputs), "fused")

    def test_mark_dynamic_on_a_spatial_dim(self):
        torch.manual_seed(5)
        for kernel_size, fused in ((1, 1), (3, 0)):
            with self.subTest(kernel_size=kernel_size):
                model = PointwiseConv(kernel_size)
                x = torch.randn(2, 3, 12, 10)
                torch._dynamo.mark_dynamic(x, 2)
                gm, inputs = captured(model, [x])
                rewritten = self.dynamo.partition_graph(gm, inputs)
                self.assertEqual(len(fusegen_ops(rewritten)), fused, rewritten.graph)
                if fused:
                    self.assertRegex(self.dynamo.spec_of(fusegen_ops(rewritten)[0]), r"f32\[2, 3, s\d+, 10\]")
                else:  # the 3x3 convolution's output dim is H - 2: no spec form, PyTorch runs it all
                    self.assertIn("convolution.default", aten_ops(rewritten))
                y = torch.randn(2, 3, 9, 10)
                torch._dynamo.mark_dynamic(y, 2)
                self.rewrite_and_run(model, [x], more_inputs=[[y]])

    def test_a_statement_fusegen_refuses_at_symbolic_dims_names_its_node(self):
        import fusegen._dynamo_backend as backend_module
        from fusegen._fx_translate import Translator
        gm, _ = captured(LinearBatchNorm().train(), [torch.randn(4, 16)], dynamic=True)
        nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
        translator = Translator("t", lambda node: ("input", node.name, None), who="torch.compile backend")
        translator.symbols.add("s0")
        translator.statements = ["a = relu(x)", "b = a * 2.0"]
        translator.lines = {0: nodes[0], 1: nodes[1]}
        spec = "fusion t {\n  input x : f32[s0, 8]\n  a = relu(x)\n  b = a * 2.0\n  output y = b\n}\n"
        error = fusegen.SpecError("<torch.compile>:4:7: error: something about s0\n    b = a * 2.0")
        with self.assertRaises(fusegen.UnsupportedModuleError) as caught:
            backend_module._refuse_statement(translator, spec, error)
        self.assertEqual(caught.exception.node, nodes[1].name)
        self.assertIn("symbolic dims ['s0']: <torch.compile>:4:7: error: something about s0", str(caught.exception))

    # ---- fallback="inductor" ----

    def test_inductor_runs_what_fusegen_does_not(self):
        """A graph split by an op fusegen lacks: the fusions' ops (the reference on the CPU) inside
        the graph Inductor compiles, against eager."""
        torch.manual_seed(6)
        rewritten = self.rewrite_and_run(SplitByWhere(), [torch.randn(4, 16)], fallback="inductor")
        self.assertEqual(len(fusegen_ops(rewritten)), 2)
        # a fusion that updates running statistics (state arguments) inside Inductor's graph
        rewritten = self.rewrite_and_run(LinearBatchNorm().train(), [torch.randn(4, 16)], fallback="inductor")
        self.assertEqual(len(fusegen_ops(rewritten)), 1)

    def test_cpu_tensors_fall_back_to_inductor(self):
        from unittest import mock

        import torch._inductor.compile_fx as compile_fx_module
        torch.manual_seed(7)
        model = SplitByWhere()
        x = torch.randn(4, 16)
        torch._dynamo.reset()
        with mock.patch.object(compile_fx_module, "compile_fx", wraps=compile_fx_module.compile_fx) as inductor:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "not all CUDA tensors"
                compiled = torch.compile(model, backend=self.dynamo.backend(fallback="inductor"))
                with torch.no_grad():
                    got = compiled(x)
        self.assertTrue(inductor.called)
        with torch.no_grad():
            self.assertTrue(torch.allclose(got, model(x), atol=1e-5, rtol=1e-5))

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
