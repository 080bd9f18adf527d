# From https://github.com/ScalingIntelligence/KernelBench at commit 423217d9fda91e0c2d67e4a43bf62f96f6d104f1,
# path KernelBench/level2/71_Conv2d_Divide_LeakyReLU.py; MIT License, Copyright (c) 2023 Anne Ouyang,
# Simon Guo, Azalia Mirhoseini, Scaling Intelligence Lab, Stanford University
# (../LICENSE). Unmodified below this header.
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a convolution, divides by a constant, and applies LeakyReLU.
    """
    def __init__(self, in_channels, out_channels, kernel_size, divisor):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.divisor = divisor

    def forward(self, x):
        x = self.conv(x)
        x = x / self.divisor
        x = torch.nn.functional.leaky_relu(x, negative_slope=0.01)
        return x

batch_size = 128
in_channels = 8
out_channels = 64
height, width = 128, 128
kernel_size = 3
divisor = 2

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, divisor]