"""fusegen in PyTorch without a GPU: calls bound as Python binds them, the signature,
devices, the refusal of inputs that require grad, and the custom op (Function.torch_op)
under fake tensors, torch.export, torch.compile and torch.library.opcheck.

The op's real kernel is CUDA only; to run the op on the CPU here, the tests register a
CPU kernel of their own for spec 39 (Gemm -> scale -> BatchNorm1d training, which
writes its running stats), written with torch operations. That checks what fusegen
registers (schema, fake implementation, autograd kernel) with PyTorch's own tools.
Skipped without torch, unless FUSEGEN_REQUIRE_TORCH=1 (scripts/test.sh sets it): then
a missing torch fails."""

import inspect
import pydoc
import unittest
import warnings

import support
from support import fusegen

torch, F, _subclasses = support.import_optional("torch", "torch.nn.functional", "torch._subclasses")
FakeTensorMode = _subclasses.FakeTensorMode if _subclasses else None
NO_TORCH = support.NO_TORCH


def example_args(f, n=8, device="cpu", maker=None):
    """Tensors of each argument's spec shape with N=n (random, so the reference can run)."""
    maker = maker or (lambda shape: torch.rand(shape, device=device))
    return [maker(tuple(n if d == "N" else d for d in spec.dims)) for spec in f.arguments]


def reference_39(x, w, b, scale, bn_w, bn_b, running_mean, running_var):
    """Spec 39 with torch operations (the CPU kernel of the tests)."""
    h = F.linear(x, w, b) * scale
    return F.batch_norm(h, running_mean, running_var, bn_w, bn_b, training=True, momentum=0.1, eps=1e-5)


@unittest.skipUnless(torch, NO_TORCH)
@support.requires_library
class TorchOpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runtime = fusegen.Runtime(cache_dir=support.CACHE_DIR)
        cls.f39 = cls.runtime.load(support.spec("small", "39")).function()
        cls.f62 = cls.runtime.load(support.spec("small", "62")).function()
        cls.op39 = cls.f39.torch_op(namespace="fusegen_test")
        # The CPU kernel of the tests (the op's own is CUDA only).
        torch.library.impl("fusegen_test::gemm_scale_batchnorm", "CPU", lib=_library())(reference_39)

    # ---- the custom op ----

    def test_schema_declares_the_state_tensors_as_written(self):
        self.assertEqual(str(self.op39._schema), (
            "fusegen_test::gemm_scale_batchnorm(Tensor x, Tensor w, Tensor b, Tensor scale, Tensor bn_w, "
            "Tensor bn_b, Tensor(a0!) running_mean, Tensor(a1!) running_var) -> Tensor"))
        self.assertIs(torch.ops.fusegen_test.gemm_scale_batchnorm.default, self.op39)

    def test_registering_again_gives_the_same_op_and_names_clash_clearly(self):
        self.assertIs(self.f39.torch_op(namespace="fusegen_test"), self.op39)
        other = self.runtime.load(support.spec("small", "39")).function()
        with self.assertRaisesRegex(fusegen.ArgumentError, "already the op of another fusegen.Function"):
            other.torch_op(namespace="fusegen_test")
        with self.assertRaisesRegex(fusegen.ArgumentError, "name must be a Python identifier"):
            other.torch_op(name="not a name")
        renamed = fusegen.torch_op(other, namespace="fusegen_test", name="bn39_again")
        self.assertEqual(renamed.name(), "fusegen_test::bn39_again")

    def test_fake_tensors_get_output_shapes_without_data_pointers(self):
        op62 = self.f62.torch_op(namespace="fusegen_test")
        original = torch.Tensor.data_ptr

        def no_data_ptr(t):
            raise AssertionError("data_ptr() read under FakeTensorMode")
        torch.Tensor.data_ptr = no_data_ptr
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with FakeTensorMode():
                    for f, op in ((self.f39, self.op39), (self.f62, op62)):
                        y = op(*example_args(f, n=64, maker=lambda s: torch.empty(s, device="cuda")))
                        self.assertEqual((tuple(y.shape), y.dtype, str(y.device)),
                                         ((64, 512 if f is self.f39 else 256), torch.float32, "cuda:0"))
                    bad = example_args(self.f62, n=64, maker=lambda s: torch.empty(s, device="cuda"))
                    bad[1] = torch.empty(256, 511, device="cuda")
                    with self.assertRaisesRegex(fusegen.ArgumentError, "w"):
                        op62(*bad)
                    bad[1] = torch.empty(256, 512, device="cuda", dtype=torch.float64)
                    with self.assertRaisesRegex(fusegen.ArgumentError, "has dtype torch.float64"):
                        op62(*bad)
        finally:
            torch.Tensor.data_ptr = original

    def test_inputs_that_require_grad_are_refused_in_grad_mode(self):
        args = example_args(self.f39)
        args[1].requires_grad_(True)
        with self.assertRaisesRegex(fusegen.ArgumentError, "argument 'w' of gemm_scale_batchnorm requires grad"
                                    ".*torch.no_grad\\(\\)"):
            self.op39(*args)
        with torch.no_grad():
            y = self.op39(*args)
        self.assertFalse(y.requires_grad)

    def test_the_op_runs_and_writes_its_state(self):
        args = example_args(self.f39)
        mean = args[6].clone()
        self.op39(*args)
        self.assertFalse(torch.equal(mean, args[6]))

    def test_opcheck(self):
        for n in (8, 16):
            torch.library.opcheck(self.op39, tuple(example_args(self.f39, n=n)))

    def test_torch_export_records_the_op(self):
        class Model(torch.nn.Module):
            def forward(self, x, w, b, scale, bn_w, bn_b, running_mean, running_var):
                return torch.relu(torch.ops.fusegen_test.gemm_scale_batchnorm(
                    x, w, b, scale, bn_w, bn_b, running_mean, running_var))

        args = tuple(example_args(self.f39, n=8))
        n = torch.export.Dim("n", min=2)
        exported = torch.export.export(Model(), args, dynamic_shapes=({0: n},) + (None,) * 7)
        self.assertIn("fusegen_test.gemm_scale_batchnorm", str(exported.graph))
        fresh = tuple(example_args(self.f39, n=12))
        torch.testing.assert_close(exported.module()(*[a.clone() for a in fresh]),
                                   torch.relu(reference_39(*[a.clone() for a in fresh])))

    def test_torch_compile_fullgraph_static_and_dynamic(self):
        def model(*args):
            return self.op39(*args) * 2 + 1

        for dynamic in (False, True):
            torch._dynamo.reset()
            compiled = torch.compile(model, fullgraph=True, dynamic=dynamic, backend="aot_eager")
            for n in (8, 12):
                args = example_args(self.f39, n=n)
                expected_args = [a.clone() for a in args]
                torch.testing.assert_close(compiled(*args), reference_39(*expected_args) * 2 + 1)
                torch.testing.assert_close(args[6], expected_args[6])  # the state was written, once

    # ---- calls as PyTorch users expect ----

    def test_signature_and_help(self):
        sig = inspect.signature(self.f62)
        self.assertEqual(list(sig.parameters), ["x", "w", "b", "gn_w", "gn_b", "out"])
        self.assertEqual(sig.parameters["x"].annotation, "f32[N, 512]")
        self.assertEqual(sig.parameters["out"].kind, inspect.Parameter.KEYWORD_ONLY)
        text = pydoc.render_doc(self.f62, renderer=pydoc.plaintext)
        self.assertIn("matmul_groupnorm_leakyrelu_sum(x: 'f32[N, 512]', w: 'f32[256, 512]'", text)
        self.assertIn("running_mean: state (written in place)", pydoc.render_doc(self.f39, renderer=pydoc.plaintext))
        self.assertIsInstance(self.f62, fusegen.Function)

    def test_positional_and_keyword_binding(self):
        args = example_args(self.f62)  # CPU tensors: bound first, then refused by name
        for call in (lambda: self.f62(*args), lambda: self.f62(args[0], w=args[1], b=args[2], gn_w=args[3],
                                                                  gn_b=args[4]),
                     lambda: self.f62(**dict(zip(self.f62.argument_names, args)))):
            with self.assertRaisesRegex(fusegen.ArgumentError, "argument 'x' of matmul_groupnorm_leakyrelu_sum is "
                                        "a tensor on cpu; fusegen needs CUDA tensors"):
                call()
        with self.assertRaisesRegex(fusegen.ArgumentError, "got argument 'x' both by position and by name"):
            self.f62(args[0], x=args[0])
        with self.assertRaisesRegex(fusegen.ArgumentError, "takes 5 arguments .* but 6 were given positionally"):
            self.f62(*args, args[0])
        with self.assertRaisesRegex(fusegen.ArgumentError, "missing w, b, gn_w, gn_b"):
            self.f62(args[0])  # not out= any more

    def test_grad_mode_decides_what_the_call_refuses(self):
        # The call itself (test_fast_path.py runs it on the fake driver) refuses what needs_grad says.
        from fusegen import _tensors
        _tensors.torch_tensor_type()
        t = torch.empty(4, device="meta", requires_grad=True)
        self.assertTrue(_tensors.needs_grad(t))
        self.assertFalse(_tensors.needs_grad(t.detach()))
        with torch.no_grad():
            self.assertFalse(_tensors.needs_grad(t))
        with torch.inference_mode():
            self.assertFalse(_tensors.needs_grad(t))

    def test_devices_as_int_string_or_torch_device(self):
        from fusegen._runtime import device_index
        for given, index in ((0, 0), (3, 3), ("cuda:2", 2), ("cuda", 0), (torch.device("cuda", 1), 1),
                             (torch.device("cuda:4"), 4), (torch.device("cuda"), 0)):
            self.assertEqual(device_index(given), index, given)
        for bad in (-1, True, "cpu", "cuda:x", torch.device("cpu"), 1.0, None):
            with self.assertRaisesRegex(fusegen.ArgumentError, "device must be a CUDA device"):
                device_index(bad)
        self.assertEqual(fusegen.Runtime(device="cuda:1", cache_dir=support.CACHE_DIR).device, 1)
        self.assertEqual(fusegen.Runtime(device=torch.device("cuda", 2), cache_dir=support.CACHE_DIR).device, 2)


def _library():
    """A library fragment of the tests' own for their CPU kernel (kept alive: it owns the kernel)."""
    global _test_library
    _test_library = torch.library.Library("fusegen_test", "FRAGMENT")
    return _test_library


if __name__ == "__main__":
    unittest.main()
