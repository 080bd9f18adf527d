# From https://github.com/ScalingIntelligence/KernelBench at commit 423217d9fda91e0c2d67e4a43bf62f96f6d104f1,
# path KernelBench/level2/19_ConvTranspose2d_GELU_GroupNorm.py; MIT License, Copyright (c) 2023 Anne Ouyang,
# Simon Guo, Azalia Mirhoseini, Scaling Intelligence Lab, Stanford University
# (../LICENSE). Unmodified below this header.
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Model that performs a transposed convolution, applies GELU, and normalizes with GroupNorm.
    """
    def __init__(self, in_channels, out_channels, kernel_size, stride, groups, num_groups):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride)
        self.group_norm = nn.GroupNorm(num_groups=num_groups, num_channels=out_channels)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.nn.functional.gelu(x)
        x = self.group_norm(x)
        return x

batch_size   = 128  
in_channels  = 64  
out_channels = 64  
height = width = 256  
kernel_size  = 3
stride       = 1
groups = 8
num_groups = 8

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, groups, num_groups]