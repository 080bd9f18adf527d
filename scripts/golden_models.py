"""Golden cases of whole models for scripts/make_golden.py: the four KernelBench level 2
seed chains at their small shapes (modules from kernelbench_models.py, their own default
init). The spec texts are also committed as specs/kernelbench/small/<fusion>.fg; keep
them identical.

make_golden.py calls add_cases(its module) once its Case helpers exist."""

from kernelbench_models import Model39, Model62, Model75, Model85

SPEC_62 = """\
# KernelBench level 2, problem 62: Matmul_GroupNorm_LeakyReLU_Sum.
# Small shapes; the golden data binds N = 128 (KernelBench's batch size).
fusion matmul_groupnorm_leakyrelu_sum {
  input x : f32[N, 512]
  param fc_weight : f32[256, 512]
  param fc_bias : f32[256]
  param gn_weight : f32[256]
  param gn_bias : f32[256]
  h = linear(x, fc_weight, fc_bias)
  h = group_norm(h, 8, gn_weight, gn_bias, eps=1e-5)
  h = leaky_relu(h, negative_slope=0.01)
  output y = h + h
}
"""

SPEC_75 = """\
# KernelBench level 2, problem 75: Gemm_GroupNorm_Min_BiasAdd.
# Small shapes; the golden data binds N = 128 (KernelBench's batch size).
# min over dim 1 gives [N, 1]; adding bias [1, 256, 1, 1] broadcasts to [1, 256, N, 1].
fusion gemm_groupnorm_min_biasadd {
  input x : f32[N, 512]
  param gemm_weight : f32[256, 512]
  param gemm_bias : f32[256]
  param gn_weight : f32[256]
  param gn_bias : f32[256]
  param bias : f32[1, 256, 1, 1]
  h = linear(x, gemm_weight, gemm_bias)
  h = group_norm(h, 8, gn_weight, gn_bias, eps=1e-5)
  h = min(h, 1, keepdim=true)
  output y = h + bias
}
"""

SPEC_39 = """\
# KernelBench level 2, problem 39: Gemm_Scale_BatchNorm.
# Small shapes; the golden data binds N = 128 (KernelBench's batch size).
# BatchNorm1d in training mode: the running stats are state, updated in place.
fusion gemm_scale_batchnorm {
  input x : f32[N, 1024]
  param gemm_weight : f32[512, 1024]
  param gemm_bias : f32[512]
  param scale : f32[512]
  param bn_weight : f32[512]
  param bn_bias : f32[512]
  state running_mean : f32[512]
  state running_var : f32[512]
  h = linear(x, gemm_weight, gemm_bias)
  h = h * scale
  output y = batch_norm(h, running_mean, running_var, bn_weight, bn_bias, training=true, momentum=0.1, eps=1e-5)
}
"""

SPEC_85 = """\
# KernelBench level 2, problem 85: Conv2d_GroupNorm_Scale_MaxPool_Clamp.
# Small shapes; the golden data binds N = 32 (KernelBench uses 128; smaller keeps the repo small).
fusion conv2d_groupnorm_scale_maxpool_clamp {
  input x : f32[N, 3, 32, 32]
  param conv_weight : f32[16, 3, 3, 3]
  param conv_bias : f32[16]
  param gn_weight : f32[16]
  param gn_bias : f32[16]
  param scale : f32[16, 1, 1]
  h = conv2d(x, conv_weight, conv_bias)
  h = group_norm(h, 8, gn_weight, gn_bias, eps=1e-5)
  h = h * scale
  h = max_pool2d(h, kernel_size=2)
  output y = clamp(h, 0.0, 1.0)
}
"""


def add_cases(g):
    """Appends this file's cases to g.CASES, using g's helpers (case, randn, module)."""
    case, randn, module = g.case, g.randn, g.module

    @case("matmul_groupnorm_leakyrelu_sum")
    def _(c):
        model = module(Model62(512, 256, 8))
        c.spec_text = SPEC_62
        x = c.input("x", randn(128, 512), dims="N, 512")  # KernelBench's get_inputs uses randn
        c.param("fc_weight", model.fc.weight)
        c.param("fc_bias", model.fc.bias)
        c.param("gn_weight", model.gn.weight)
        c.param("gn_bias", model.gn.bias)
        c.expected["y"] = model(x)

    @case("gemm_groupnorm_min_biasadd")
    def _(c):
        model = module(Model75(512, 256, 8, (1, 256, 1, 1)))
        c.spec_text = SPEC_75
        x = c.input("x", randn(128, 512), dims="N, 512")
        c.param("gemm_weight", model.gemm.weight)
        c.param("gemm_bias", model.gemm.bias)
        c.param("gn_weight", model.group_norm.weight)
        c.param("gn_bias", model.group_norm.bias)
        c.param("bias", model.bias)
        c.expected["y"] = model(x)

    @case("gemm_scale_batchnorm")
    def _(c):
        model = module(Model39(1024, 512, (512,)))
        model.train()
        c.spec_text = SPEC_39
        x = c.input("x", randn(128, 1024), dims="N, 1024")
        c.param("gemm_weight", model.gemm.weight)
        c.param("gemm_bias", model.gemm.bias)
        c.param("scale", model.scale)
        c.param("bn_weight", model.bn.weight)
        c.param("bn_bias", model.bn.bias)
        c.state("running_mean", model.bn.running_mean)
        c.state("running_var", model.bn.running_var)
        c.expected["y"] = model(x)

    @case("conv2d_groupnorm_scale_maxpool_clamp")
    def _(c):
        model = module(Model85(3, 16, 3, 8, (16, 1, 1), 2, 0.0, 1.0))
        c.spec_text = SPEC_85
        x = c.input("x", randn(32, 3, 32, 32), dims="N, 3, 32, 32")
        c.param("conv_weight", model.conv.weight)
        c.param("conv_bias", model.conv.bias)
        c.param("gn_weight", model.group_norm.weight)
        c.param("gn_bias", model.group_norm.bias)
        c.param("scale", model.scale)
        c.expected["y"] = model(x)
