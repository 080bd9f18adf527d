"""fusegen.from_module without a GPU: the spec it writes for modules, checked with
`fusegen check` and run on the float64 reference interpreter (`fusegen run
--reference`) with the module's own weights and inputs, against the module's own
output (and running statistics) within 1e-4; and its refusals, which name the op
and the module's source line. Also a sample of the KernelBench level-2 problems
(scripts/check_from_module.py runs all 65).

Skipped without torch, unless FUSEGEN_REQUIRE_TORCH=1 (scripts/test.sh sets it):
then a missing torch fails. Needs the fusegen tool (FUSEGEN_CLI, set by ctest)."""

import os
import sys
import tempfile
import unittest

import support
from support import fusegen

torch, nn, F = support.import_optional("torch", "torch.nn", "torch.nn.functional")
NO_TORCH, NO_CLI = support.NO_TORCH, support.NO_CLI

if support.SCRIPTS not in sys.path:
    sys.path.insert(0, support.SCRIPTS)

if torch is not None:
    class LinearGroupNormLeakyReluSum(nn.Module):  # KernelBench 62
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(32, 16)
            self.gn = nn.GroupNorm(4, 16)

        def forward(self, x):
            x = F.leaky_relu(self.gn(self.fc(x)), 0.01)
            return x + x

    class ConvBatchNormReluMaxPool(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, stride=(1, 2))
            self.bn = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(2)

        def forward(self, x):
            return self.pool(torch.relu(self.bn(self.conv(x))))

    class ConvTranspose3dChain(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
            self.bn = nn.BatchNorm3d(6)
            self.scale = nn.Parameter(torch.randn(6))

        def forward(self, x):
            h = F.hardswish(self.bn(self.up(x)))
            h = h * self.scale.view(1, -1, 1, 1, 1)
            return F.adaptive_avg_pool3d(h, 1).mean(dim=(2, 3, 4))

    class LinearSoftmax(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(24, 10)

        def forward(self, x):  # a 3-d input: linear over the last dim
            return torch.log_softmax(self.fc(x), dim=-1), torch.softmax(self.fc(x), dim=1)

    class MatmulByWeight(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(12, 5))  # x @ w: no transpose, fusegen's matmul

        def forward(self, x):
            return torch.sigmoid(x @ self.w).sum(dim=1, keepdim=True) - 1.5

    class Transposes(nn.Module):
        def forward(self, x):
            return torch.relu(x.transpose(1, 2))

    class Where(nn.Module):
        def forward(self, x):
            return torch.where(x > 0, x, 0.1 * x)


@unittest.skipUnless(torch, NO_TORCH)
@support.requires_library
class FromModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cli = support.fusegen_cli()
        cls.work = tempfile.mkdtemp(prefix="fusegen-from-module-test-")
        import check_from_module
        cls.checker = check_from_module

    def check(self, model, inputs, label):
        if not self.cli:
            self.skipTest(NO_CLI)
        report = self.checker.check_module(model, inputs, self.cli, os.path.join(self.work, label))
        self.assertTrue(report["passed"], "%s: max error %.3g vs float64, %.3g vs float32\n%s" % (
            label, report["f64"], report["f32"], report["spec"]))
        return report["spec"]

    # ---- specs checked against the modules ----

    def test_linear_group_norm_leaky_relu_sum(self):
        torch.manual_seed(0)
        model = LinearGroupNormLeakyReluSum()
        spec = self.check(model, [torch.randn(6, 32)], "62")
        self.assertIn("linear(x, fc_weight, fc_bias)", spec)
        self.assertIn("group_norm(linear, num_groups=4, weight=gn_weight, bias=gn_bias, eps=1e-05)", spec)
        self.assertIn("leaky_relu(group_norm, negative_slope=0.01)", spec)

    def test_conv_batch_norm_training_updates_running_stats(self):
        torch.manual_seed(1)
        model = ConvBatchNormReluMaxPool().train()
        spec = self.check(model, [torch.randn(2, 3, 9, 12)], "conv-bn")
        self.assertIn("state  bn_running_mean", spec)
        self.assertIn("stride=(1, 2), padding=(1, 1)", spec)
        self.assertIn("training=true, momentum=0.1", spec)
        self.assertIn("max_pool2d(relu, kernel_size=(2, 2), stride=(2, 2)", spec)
        names = fusegen.from_module(model, [torch.randn(2, 3, 9, 12)]).names
        self.assertEqual(names["bn_running_var"], "bn.running_var")

    def test_conv_batch_norm_eval_reads_running_stats(self):
        torch.manual_seed(2)
        model = ConvBatchNormReluMaxPool()
        with torch.no_grad():
            model.bn.running_mean.uniform_(-1, 1)
            model.bn.running_var.uniform_(0.5, 2)
        spec = self.check(model.eval(), [torch.randn(2, 3, 8, 8)], "conv-bn-eval")
        self.assertNotIn("state", spec)
        self.assertIn("training=false", spec)

    def test_conv_transpose3d_groups_and_a_viewed_parameter(self):
        torch.manual_seed(3)
        spec = self.check(ConvTranspose3dChain().train(), [torch.randn(2, 4, 3, 4, 5)], "convt3d")
        self.assertIn("conv_transpose3d(x, up_weight, up_bias, stride=(2, 2, 2), padding=(1, 1, 1), "
                      "output_padding=(1, 1, 1), groups=2", spec)
        self.assertIn("param  scale_view", spec)  # scale.view(1, -1, 1, 1, 1), declared in that shape

    def test_linear_on_3d_input_and_two_outputs(self):
        torch.manual_seed(4)
        spec = self.check(LinearSoftmax(), [torch.randn(3, 5, 24)], "linear-softmax")
        self.assertIn("log_softmax(linear, dim=2)", spec)
        self.assertIn("output y0", spec)
        self.assertIn("output y1", spec)

    def test_matmul_by_an_untransposed_weight(self):
        torch.manual_seed(5)
        spec = self.check(MatmulByWeight(), [torch.randn(7, 12)], "matmul")
        self.assertIn("matmul(x, w)", spec)

    def test_kernelbench_sample(self):
        # Transposed 2-d/3-d convolutions, batch norm in training mode, softmax over a merged view,
        # max_pool1d over an unsqueezed linear output, a squeezed global pool, a viewed parameter.
        for number in ("11", "38", "55", "67", "73", "85", "89"):
            with self.subTest(problem=number):
                model, inputs = self.checker.build(number)
                self.check(model, inputs, "kb" + number)

    # ---- refusals ----

    def test_refusal_names_the_op_and_the_source_line(self):
        model, inputs = self.checker.build("83")  # nn.Dropout in training mode
        with self.assertRaises(fusegen.UnsupportedModuleError) as caught:
            fusegen.from_module(model, inputs)
        message = str(caught.exception)
        self.assertIn("aten.native_dropout.default", message)
        self.assertIn("83_Conv3d_GroupNorm_Min_Clamp_Dropout.py:23: x = self.dropout(x)", message)
        self.assertIn("dropout in training mode", message)
        self.assertEqual(caught.exception.op, "aten.native_dropout.default")
        self.assertTrue(caught.exception.source.endswith("x = self.dropout(x)"))
        self.assertIsInstance(caught.exception, fusegen.Error)
        # in eval mode the dropout is the identity: gone from the graph, and the problem maps
        spec = fusegen.from_module(model.eval(), inputs).spec
        self.assertNotIn("dropout", spec)
        self.assertIn("output y = clamp", spec)

    def test_refuses_a_transpose_of_an_activation(self):
        with self.assertRaisesRegex(fusegen.UnsupportedModuleError,
                                    r"aten.transpose.int\) at .*test_from_module.py:\d+: return torch.relu\(x.transpose"
                                    r"\(1, 2\)\): transpose of a \[2, 3, 4\] tensor: fusegen has no transpose"):
            fusegen.from_module(Transposes(), [torch.randn(2, 3, 4)])

    def test_refuses_ops_without_a_fusegen_op(self):
        with self.assertRaisesRegex(fusegen.UnsupportedModuleError,
                                    r"node 'gt' \(aten.gt.Scalar\) at .*test_from_module.py:\d+: "
                                    r"return torch.where\(x > 0, x, 0.1 \* x\): aten.gt.Scalar has no fusegen op"):
            fusegen.from_module(Where(), [torch.randn(4, 4)])

    def test_refuses_other_dtypes(self):
        class Counts(nn.Module):
            def forward(self, x):
                return (x * 2).sum(dim=0).long()

        with self.assertRaisesRegex(fusegen.UnsupportedModuleError,
                                    r"_to_copy.*long\(\): a cast to torch.int64; fusegen computes float32"):
            fusegen.from_module(Counts(), [torch.randn(3, 2)])

    def test_refuses_a_module_that_torch_export_cannot_capture(self):
        with self.assertRaisesRegex(fusegen.UnsupportedModuleError,
                                    "torch.export could not capture LinearSoftmax.forward: TypeError"):
            fusegen.from_module(LinearSoftmax(), [torch.randn(3, 24), torch.randn(3, 24)])  # one input too many

    def test_calls_need_cuda_tensors(self):
        model = LinearGroupNormLeakyReluSum()
        fusion = fusegen.from_module(model, [torch.randn(6, 32)])
        self.assertEqual(fusion.inputs, ["x"])
        self.assertEqual(fusion.function.argument_names[0], "x")
        with torch.no_grad(), self.assertRaisesRegex(fusegen.ArgumentError, "not .*CUDA|cpu|CPU"):
            fusion(torch.randn(6, 32))
        with self.assertRaisesRegex(fusegen.UnsupportedModuleError, "takes the 1 inputs"):
            fusion()


    def test_dynamic_shapes_become_symbolic_dims(self):
        torch.manual_seed(1)
        model = LinearGroupNormLeakyReluSum()
        fusion = fusegen.from_module(model, [torch.randn(6, 32)],
                                     dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2)}})
        self.assertRegex(fusion.spec, r"input +x +: f32\[s\d+, 32\]")
        symbol = fusion.function.arguments[0].dims[0]
        self.assertIsInstance(symbol, str)
        self.assertEqual(fusion.function.outputs[0].dims, (symbol, 16))
        for n in (3, 11):  # one fusion, any batch: the arguments and the output view take the call's size
            self.assertEqual(tuple(fusion.arguments(torch.randn(n, 32))["x"].shape), (n, 32))
            self.assertEqual(fusion._sizes(fusion._outputs[0][1], fusion._symbols([torch.randn(n, 32)])), (n, 16))

    def test_dynamic_spatial_dims_of_a_convolution_are_refused(self):
        model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
        with self.assertRaisesRegex(fusegen.UnsupportedModuleError, "expression of symbolic dims"):
            fusegen.from_module(model, [torch.randn(2, 3, 10, 10)],
                                dynamic_shapes=({2: torch.export.Dim("h", min=4)},))


if __name__ == "__main__":
    unittest.main()
