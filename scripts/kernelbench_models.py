"""The four KernelBench level-2 seed chains as PyTorch modules, shared by
scripts/make_golden.py (float64 golden data) and scripts/torch_reference.py
(fp32 results on the GPU). Weights come from the modules' own default init
under the caller's torch.manual_seed; free parameters (scale, bias) are
torch.randn like KernelBench."""

import os

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Model62(nn.Module):
    """Matmul -> GroupNorm -> LeakyReLU -> x + x."""

    def __init__(self, input_size, hidden_size, num_groups, eps=1e-5, negative_slope=0.01):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size, eps=eps)
        self.leaky_relu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x):
        x = self.fc(x)
        x = self.gn(x)
        x = self.leaky_relu(x)
        return x + x


class Model75(nn.Module):
    """Gemm -> GroupNorm -> min over dim 1 -> + bias ([N, 1] + [1, C, 1, 1] -> [1, C, N, 1])."""

    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.gemm(x)
        x = self.group_norm(x)
        x = torch.min(x, dim=1, keepdim=True)[0]
        return x + self.bias


class Model39(nn.Module):
    """Gemm -> scale -> BatchNorm1d (training mode: batch statistics, running stats updated)."""

    def __init__(self, in_features, out_features, scale_shape, eps=1e-5, momentum=0.1):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.scale
        return self.bn(x)


class Model85(nn.Module):
    """Conv2d -> GroupNorm -> scale -> MaxPool2d -> clamp."""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups, scale_shape, maxpool_kernel_size,
                 clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)
        # KernelBench initializes this scale to ones; randn makes the check stronger.
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.maxpool = nn.MaxPool2d(kernel_size=maxpool_kernel_size)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.conv(x)
        x = self.group_norm(x)
        x = x * self.scale
        x = self.maxpool(x)
        return torch.clamp(x, self.clamp_min, self.clamp_max)


# ---------------------------------------------------------------------------
# The chains: spec file, batch, module, input shape, and where each spec
# argument lives in the module.

SPEC_FILES = {
    "62": "62_matmul_groupnorm_leakyrelu_sum.fg",
    "75": "75_gemm_groupnorm_min_biasadd.fg",
    "39": "39_gemm_scale_batchnorm.fg",
    "85": "85_conv2d_groupnorm_scale_maxpool_clamp.fg",
}



def spec_path(shapes, chain):
    """The chain's spec: specs/kernelbench/ for the "v0.1" shapes, its small/ folder for "small"."""
    folder = os.path.join(ROOT, "specs", "kernelbench") if shapes == "v0.1" else \
        os.path.join(ROOT, "specs", "kernelbench", "small")
    return os.path.join(folder, SPEC_FILES[chain])


# shapes -> chain -> (N, module factory, input shape without N); N is KernelBench's batch.
# "v0.1" is specs/kernelbench/*.fg, "small" is specs/kernelbench/small/*.fg.
CONFIGS = {
    "v0.1": {
        "62": (1024, lambda: Model62(8192, 8192, 512), (8192,)),
        "75": (1024, lambda: Model75(8192, 8192, 512, (1, 8192, 1, 1)), (8192,)),
        "39": (16384, lambda: Model39(4096, 4096, (4096,)), (4096,)),
        "85": (128, lambda: Model85(8, 64, 3, 16, (64, 1, 1), 4, 0.0, 1.0), (8, 128, 128)),
    },
    "small": {
        "62": (128, lambda: Model62(512, 256, 8), (512,)),
        "75": (128, lambda: Model75(512, 256, 8, (1, 256, 1, 1)), (512,)),
        "39": (128, lambda: Model39(1024, 512, (512,)), (1024,)),
        "85": (128, lambda: Model85(3, 16, 3, 8, (16, 1, 1), 2, 0.0, 1.0), (3, 32, 32)),
    },
}

# chain -> spec argument name -> attribute path in the module ("x" is the input)
ARGUMENTS = {
    "62": {"w": "fc.weight", "b": "fc.bias", "gn_w": "gn.weight", "gn_b": "gn.bias"},
    "75": {"w": "gemm.weight", "b": "gemm.bias", "gn_w": "group_norm.weight", "gn_b": "group_norm.bias",
           "bias": "bias"},
    "39": {"w": "gemm.weight", "b": "gemm.bias", "scale": "scale", "bn_w": "bn.weight", "bn_b": "bn.bias",
           "running_mean": "bn.running_mean", "running_var": "bn.running_var"},
    "85": {"w": "conv.weight", "b": "conv.bias", "gn_w": "group_norm.weight", "gn_b": "group_norm.bias",
           "scale": "scale"},
}
# chain -> the spec's state arguments (updated in place by a train-mode run)
STATE = {"39": ["running_mean", "running_var"]}
