"""Golden cases of issue 24 for scripts/make_golden.py: conv1d/3d, conv_transpose1d/2d/3d,
padding "same"/"valid", 1-d/3-d pools with ceil_mode, dilation, count_include_pad and
divisor_override, adaptive max pools, and norms/softmax/reductions on 3-D and 5-D tensors.

make_golden.py calls add_cases(its module) once its Case helpers exist."""


def add_cases(g):
    """Appends this file's cases to g.CASES, using g's helpers (simple, case, randn, module)."""
    F, nn, torch = g.F, g.nn, g.torch
    simple, case, randn, module, CASES = g.simple, g.case, g.randn, g.module, g.CASES

    # Convolutions over 1 and 3 spatial dims, padding="same"/"valid", transposed
    # convolutions (weight [C_in, C_out/groups, k...]).

    CONV_MODULES = {
        "conv1d": nn.Conv1d,
        "conv2d": nn.Conv2d,
        "conv3d": nn.Conv3d,
        "conv_transpose1d": nn.ConvTranspose1d,
        "conv_transpose2d": nn.ConvTranspose2d,
        "conv_transpose3d": nn.ConvTranspose3d,
    }


    def nd_conv_case(name, op, in_ch, out_ch, kernel, size, call, bias=True, batch=2, dims=None, **conv_args):
        """A case of `op` whose weights come from the matching nn module's default init.
        `call` is the spec text; batch=None gives an unbatched input."""

        def build(c):
            conv = module(CONV_MODULES[op](in_ch, out_ch, kernel, bias=bias, **conv_args))
            shape = (in_ch, *size) if batch is None else (batch, in_ch, *size)
            x = c.input("x", randn(*shape), dims=dims)
            w = c.param("weight", conv.weight)
            b = c.param("bias", conv.bias) if bias else None
            c.output("y", call, getattr(F, op)(x, w, b, **conv_args))

        CASES.append((name, build))


    nd_conv_case("conv1d_bias", "conv1d", 3, 4, 3, (9,), "conv1d(x, weight, bias)")
    nd_conv_case(
        "conv1d_stride_padding_dilation",
        "conv1d",
        2,
        5,
        4,
        (13,),
        "conv1d(x, weight, bias, stride=2, padding=3, dilation=2)",
        stride=2,
        padding=3,
        dilation=2,
    )
    nd_conv_case("conv1d_groups_no_bias", "conv1d", 4, 6, 3, (7,), "conv1d(x, weight, groups=2)", bias=False, groups=2)
    nd_conv_case("conv1d_same_even_kernel", "conv1d", 2, 3, 4, (8,), 'conv1d(x, weight, bias, padding="same")', padding="same")
    nd_conv_case(
        "conv1d_same_symbolic",
        "conv1d",
        2,
        3,
        3,
        (10,),
        'conv1d(x, weight, bias, padding="same", dilation=2)',
        dims="N, 2, L",
        padding="same",
        dilation=2,
    )
    nd_conv_case("conv1d_valid_unbatched", "conv1d", 3, 2, 3, (6,), 'conv1d(x, weight, bias, padding="valid")', batch=None, padding="valid")
    nd_conv_case("conv2d_same_even_kernel", "conv2d", 2, 3, (2, 3), (5, 6), 'conv2d(x, weight, bias, padding="same")', padding="same")
    nd_conv_case("conv3d_bias", "conv3d", 2, 3, 3, (4, 5, 6), "conv3d(x, weight, bias)")
    nd_conv_case(
        "conv3d_stride_padding_groups",
        "conv3d",
        4,
        4,
        (2, 3, 3),
        (5, 6, 7),
        "conv3d(x, weight, bias, stride=(1, 2, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)",
        stride=(1, 2, 2),
        padding=(1, 0, 1),
        dilation=(1, 2, 1),
        groups=2,
    )
    nd_conv_case("conv3d_same_unbatched", "conv3d", 2, 2, 2, (3, 4, 5), 'conv3d(x, weight, padding="same")', bias=False, batch=None, padding="same")
    nd_conv_case("conv_transpose1d_bias", "conv_transpose1d", 3, 4, 3, (7,), "conv_transpose1d(x, weight, bias)")
    nd_conv_case(
        "conv_transpose1d_stride_output_padding",
        "conv_transpose1d",
        4,
        6,
        3,
        (5,),
        "conv_transpose1d(x, weight, bias, stride=3, padding=1, output_padding=2, groups=2)",
        stride=3,
        padding=1,
        output_padding=2,
        groups=2,
    )
    nd_conv_case(
        "conv_transpose2d_stride_padding_dilation",
        "conv_transpose2d",
        2,
        3,
        (3, 2),
        (4, 5),
        "conv_transpose2d(x, weight, bias, stride=(2, 1), padding=(1, 0), output_padding=(1, 0), dilation=(1, 2))",
        stride=(2, 1),
        padding=(1, 0),
        output_padding=(1, 0),
        dilation=(1, 2),
    )
    nd_conv_case("conv_transpose2d_unbatched_no_bias", "conv_transpose2d", 3, 2, 2, (3, 3), "conv_transpose2d(x, weight, stride=2)", bias=False, batch=None, stride=2)
    nd_conv_case(
        "conv_transpose3d_groups",
        "conv_transpose3d",
        4,
        2,
        (2, 2, 3),
        (3, 4, 3),
        "conv_transpose3d(x, weight, bias, stride=2, padding=(0, 1, 1), groups=2, dilation=(2, 1, 1))",
        stride=2,
        padding=(0, 1, 1),
        groups=2,
        dilation=(2, 1, 1),
    )

    # Pools over 1 and 3 spatial dims; ceil_mode, dilation, count_include_pad and
    # divisor_override; adaptive max pools.

    simple("max_pool1d_default_stride", "max_pool1d(x, 2)", lambda x: F.max_pool1d(x, 2), x=lambda: randn(2, 3, 9))
    simple(
        "max_pool1d_ceil_dilation",
        "max_pool1d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=true)",
        lambda x: F.max_pool1d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=True),
        x=lambda: randn(2, 3, 12),
    )
    simple(
        "max_pool2d_ceil_dilation",
        "max_pool2d(x, (2, 3), (2, 1), (1, 1), (1, 2), true)",
        lambda x: F.max_pool2d(x, (2, 3), (2, 1), (1, 1), (1, 2), True),
        x=lambda: randn(2, 3, 7, 8),
    )
    simple(
        "max_pool3d_stride_padding",
        "max_pool3d(x, kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))",
        lambda x: F.max_pool3d(x, kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)),
        x=lambda: randn(2, 2, 4, 7, 6),
    )
    simple(
        "max_pool3d_unbatched_ceil",
        "max_pool3d(x, 2, ceil_mode=true)",
        lambda x: F.max_pool3d(x, 2, ceil_mode=True),
        x=lambda: randn(2, 5, 5, 3),
    )
    simple(
        "avg_pool1d_exclude_pad",
        "avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=false)",
        lambda x: F.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=False),
        x=lambda: randn(2, 3, 10),
    )
    simple("avg_pool1d_ceil", "avg_pool1d(x, 3, 2, 1, true)", lambda x: F.avg_pool1d(x, 3, 2, 1, True), x=lambda: randn(2, 3, 8))


    @case("max_pool1d_same_symbolic")
    def _(c):
        c.describe("stride 1 with padding covering the window keeps the symbolic length L.")
        x = c.input("x", randn(2, 3, 7), dims="N, 3, L")
        c.output("y", "max_pool1d(x, 3, stride=1, padding=1)", F.max_pool1d(x, 3, stride=1, padding=1))
    simple(
        "avg_pool2d_ceil_exclude_pad",
        "avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true, count_include_pad=false)",
        lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        x=lambda: randn(2, 3, 8, 9),
    )
    simple(
        "avg_pool2d_divisor_override",
        "avg_pool2d(x, 2, padding=1, divisor_override=3)",
        lambda x: F.avg_pool2d(x, 2, padding=1, divisor_override=3),
        x=lambda: randn(2, 3, 5, 6),
    )
    simple(
        "avg_pool3d_ceil_include_pad",
        "avg_pool3d(x, (2, 3, 2), stride=2, padding=(1, 1, 0), ceil_mode=true)",
        lambda x: F.avg_pool3d(x, (2, 3, 2), stride=2, padding=(1, 1, 0), ceil_mode=True),
        x=lambda: randn(2, 2, 5, 6, 7),
    )
    simple("adaptive_avg_pool1d_uneven", "adaptive_avg_pool1d(x, 4)", lambda x: F.adaptive_avg_pool1d(x, 4), x=lambda: randn(2, 3, 10))
    simple(
        "adaptive_avg_pool3d_uneven",
        "adaptive_avg_pool3d(x, (2, 3, 4))",
        lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)),
        x=lambda: randn(2, 2, 5, 7, 6),
    )
    simple("adaptive_max_pool1d_uneven", "adaptive_max_pool1d(x, 3)", lambda x: F.adaptive_max_pool1d(x, 3), x=lambda: randn(2, 3, 8))
    simple(
        "adaptive_max_pool2d_uneven",
        "adaptive_max_pool2d(x, output_size=(3, 5))",
        lambda x: F.adaptive_max_pool2d(x, output_size=(3, 5)),
        x=lambda: randn(2, 3, 8, 7),
    )
    simple(
        "adaptive_max_pool3d_global_unbatched",
        "adaptive_max_pool3d(x, 1)",
        lambda x: F.adaptive_max_pool3d(x, 1),
        x=lambda: randn(3, 4, 5, 6),
    )

    # Norms, softmax, reductions and pointwise ops on 3-D (NCL) and 5-D (NCDHW) tensors.

    simple("group_norm_ncl", "group_norm(x, 2)", lambda x: F.group_norm(x, 2), x=lambda: randn(2, 4, 9))
    simple("group_norm_ncdhw", "group_norm(x, 2)", lambda x: F.group_norm(x, 2), x=lambda: randn(2, 4, 3, 4, 5))
    simple("instance_norm_ncdhw", "instance_norm(x)", lambda x: F.instance_norm(x), x=lambda: randn(2, 3, 3, 4, 2))
    simple("softmax_ncdhw_channels", "softmax(x, dim=1)", lambda x: F.softmax(x, dim=1), x=lambda: randn(2, 3, 2, 3, 4))
    simple("sum_ncdhw_spatial", "sum(x, dim=(2, 3, 4))", lambda x: torch.sum(x, dim=(2, 3, 4)), x=lambda: randn(2, 3, 2, 3, 4))
    simple("mean_ncl_keepdim", "mean(x, dim=-1, keepdim=true)", lambda x: torch.mean(x, dim=-1, keepdim=True), x=lambda: randn(2, 3, 7))
    simple("relu_add_ncdhw", "relu(x) + y", lambda x, y: F.relu(x) + y, x=lambda: randn(2, 3, 2, 3, 4), y=lambda: randn(3, 1, 1, 1))
