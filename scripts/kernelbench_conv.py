#!/usr/bin/env python3
"""KernelBench level-2 convolution and pooling chains: their PyTorch Models,
built from the problems' own code, and their fusegen specs.

The problems' sources travel with the repository, unmodified, under
bench/kernelbench_problems/level2/ (from ScalingIntelligence/KernelBench at
KERNELBENCH_COMMIT). load_problem() runs one, statement by statement, in a
namespace of its own: at KernelBench's shapes ("v0.1"), or at the small
shapes of scripts/kernelbench_conv_chains.py ("small"), whose constants are
put back after each statement so that constants computed from them follow.

The specs under specs/kernelbench/conv/ (and small/) are written from the
chain table and the Model built on the meta device (no memory): each input,
param and state is declared with the shape of the Model's tensor.

usage: scripts/kernelbench_conv.py --write | --check   (needs torch)
  --write  (re)writes specs/kernelbench/conv/*.fg and small/*.fg
  --check  exits 1 if a spec differs from what --write would write
"""

import argparse
import ast
import glob
import inspect
import os
import string
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernelbench_conv_chains import CHAINS  # noqa: E402

KERNELBENCH_REPOSITORY = "ScalingIntelligence/KernelBench"
KERNELBENCH_COMMIT = "423217d9fda91e0c2d67e4a43bf62f96f6d104f1"
PROBLEMS_DIR = os.path.join(ROOT, "bench", "kernelbench_problems", "level2")
SPEC_DIR = os.path.join(ROOT, "specs", "kernelbench", "conv")
SHAPES = ("v0.1", "small")


def numbers():
    """The chains' problem numbers, in numeric order."""
    return sorted(CHAINS, key=int)


def problem_path(number):
    paths = glob.glob(os.path.join(PROBLEMS_DIR, "%s_*.py" % number))
    if len(paths) != 1:
        raise FileNotFoundError("kernelbench_conv: expected one problem %s_*.py in %s, found %d"
                                % (number, PROBLEMS_DIR, len(paths)))
    return paths[0]


def title(number):
    """The problem's name after its number, e.g. 'Conv2D_ReLU_BiasAdd'."""
    return os.path.splitext(os.path.basename(problem_path(number)))[0].split("_", 1)[1]


def spec_file(number):
    return "%s_%s.fg" % (number, title(number).lower())


def spec_path(shapes, number):
    return os.path.join(SPEC_DIR if shapes == "v0.1" else os.path.join(SPEC_DIR, "small"), spec_file(number))


def load_problem(number, shapes, batch_size=None):
    """The problem's module namespace (Model, get_inputs, get_init_inputs, constants) at `shapes`
    (with another batch_size if given)."""
    if shapes not in SHAPES:
        raise ValueError("kernelbench_conv: shapes must be one of %s, not %r" % (SHAPES, shapes))
    path = problem_path(number)
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    overrides = dict(CHAINS[number]["small"]) if shapes == "small" else {}
    if batch_size is not None:
        overrides["batch_size"] = batch_size
    namespace = {"__name__": "kernelbench_level2_%s" % number, "__file__": path}
    seen = set()
    for statement in tree.body:
        exec(compile(ast.Module(body=[statement], type_ignores=[]), path, "exec"), namespace)  # noqa: S102
        for name, value in overrides.items():
            if name in namespace:
                namespace[name] = value
                seen.add(name)
    unknown = sorted(set(overrides) - seen)
    if unknown:
        raise KeyError("kernelbench_conv: problem %s has no constants %s" % (number, unknown))
    return namespace


def input_names(namespace):
    """Model.forward's argument names: the spec's inputs."""
    return [p for p in inspect.signature(namespace["Model"].forward).parameters if p != "self"]


def make_model(namespace, device="cpu"):
    """Model(*get_init_inputs()) made on `device` (torch's default-device context), in train mode as
    KernelBench runs it (batch norm: batch statistics, running stats updated)."""
    import torch
    with torch.device(device):
        model = namespace["Model"](*namespace["get_init_inputs"]())
    return model.train()


def make_inputs(namespace, device="cpu"):
    """{forward argument name: tensor} from get_inputs(), its torch.rand made on `device`."""
    import torch
    with torch.device(device):
        inputs = namespace["get_inputs"]()
    return dict(zip(input_names(namespace), inputs))


def build(namespace, device="cpu"):
    """(model, [inputs]) as KernelBench makes them."""
    return make_model(namespace, device), list(make_inputs(namespace, device).values())


def attribute(model, dotted):
    value = model
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def argument_map(number):
    """{spec name: dotted Model attribute} for fusegen.module_arguments (with function=, which views a
    tensor declared in another shape of the same elements)."""
    return {name: (where if isinstance(where, str) else where[0]) for name, where in CHAINS[number]["args"].items()}


def arguments(number, model, inputs, namespace):
    """{spec name: tensor}: the forward inputs, then the Model's tensors in the spec's declared shapes
    (views of the Model's own memory)."""
    result = dict(zip(input_names(namespace), inputs))
    for name, where in CHAINS[number]["args"].items():
        dotted, shape = (where, None) if isinstance(where, str) else where
        value = attribute(model, dotted)
        if value is None:
            raise ValueError("kernelbench_conv: problem %s: %s (%s) is None" % (number, dotted, name))
        result[name] = value if shape is None else value.view(shape)
    return result


# ---------------------------------------------------------------------------
# Spec text


def literal(value):
    """A Python value as a spec literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return '"%s"' % value
    if value is None:
        return "None"
    if isinstance(value, (tuple, list)):
        items = [literal(v) for v in value]
        return "(%s,)" % items[0] if len(items) == 1 else "(%s)" % ", ".join(items)
    raise TypeError("kernelbench_conv: no spec literal for %r" % (value,))


def _tuple(value, rank):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * rank


def module_arguments_text(module):
    """', name=value' for each argument of a convolution or pool module that differs from the op's default."""
    import torch.nn as nn
    name = type(module).__name__
    rank = int(name[-2]) if name[-1] == "d" and name[-2].isdigit() else None
    pairs = []
    if isinstance(module, nn.modules.conv._ConvNd):
        if module.padding_mode != "zeros":
            raise ValueError("kernelbench_conv: %s padding_mode %r is not expressible" % (name, module.padding_mode))
        rank = len(module.kernel_size)
        order = (("stride", 1), ("padding", 0)) + ((("output_padding", 0), ("groups", 1), ("dilation", 1))
                                                  if module.transposed else (("dilation", 1), ("groups", 1)))
        for key, default in order:
            value = getattr(module, key)
            if isinstance(value, str) or _tuple(value, rank) != _tuple(default, rank):
                pairs.append((key, value))
    elif isinstance(module, (nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd)) and rank:
        pairs.append(("kernel_size", module.kernel_size))
        if module.stride is not None and _tuple(module.stride, rank) != _tuple(module.kernel_size, rank):
            pairs.append(("stride", module.stride))
        defaults = [("padding", 0)]
        if isinstance(module, nn.modules.pooling._MaxPoolNd):
            if module.return_indices:
                raise ValueError("kernelbench_conv: %s return_indices is not expressible" % name)
            defaults += [("dilation", 1), ("ceil_mode", False)]
        else:
            defaults += [("ceil_mode", False), ("count_include_pad", True), ("divisor_override", None)]
        for key, default in defaults:
            value = getattr(module, key, default)
            same = value == default if key in ("ceil_mode", "count_include_pad", "divisor_override") else \
                _tuple(value, rank) == _tuple(default, rank)
            if not same:
                pairs.append((key, value))
    else:
        raise TypeError("kernelbench_conv: ':args' of a %s" % name)
    return "".join(", %s=%s" % (key, literal(value)) for key, value in pairs)


class _BodyFormatter(string.Formatter):
    def format_field(self, value, format_spec):
        if format_spec == "f":
            return repr(float(value))
        if format_spec == "args":
            return module_arguments_text(value)
        if format_spec:
            raise ValueError("kernelbench_conv: unknown format %r" % format_spec)
        return literal(value)


def _wrap(text, prefix="# ", width=100):
    lines, line = [], prefix
    for word in text.split():
        if len(line) + len(word) + 1 > width and line != prefix:
            lines.append(line.rstrip())
            line = prefix
        line += word + " "
    lines.append(line.rstrip())
    return lines


def spec_text(number, shapes):
    """The spec of chain `number` at `shapes`: declarations from the Model built on the meta device."""
    import torch.nn as nn
    chain = CHAINS[number]
    namespace = load_problem(number, shapes)
    model, inputs = build(namespace, device="meta")
    batch = namespace["batch_size"]
    for module in model.modules():
        if isinstance(module, nn.modules.instancenorm._InstanceNorm) and (module.affine or
                                                                           module.track_running_stats):
            raise ValueError("kernelbench_conv: problem %s: an affine or tracking instance norm" % number)
    declarations = []  # (kind, name, shape, comment)
    for name, tensor in zip(input_names(namespace), inputs):
        if tensor.shape[0] != batch:
            raise ValueError("kernelbench_conv: problem %s: input %s does not start with batch_size" % (number, name))
        declarations.append(("input", name, ["N"] + list(tensor.shape[1:]), "get_inputs()"))
    for name, tensor in arguments(number, model, inputs, namespace).items():
        if name in input_names(namespace):
            continue
        where = chain["args"][name]
        comment = where if isinstance(where, str) else "%s.view%s" % (where[0], literal(tuple(where[1])))
        kind = "state" if name in chain["state"] else "param"
        declarations.append((kind, name, list(tensor.shape), comment))
    constants = {k: v for k, v in namespace.items() if not k.startswith("__")}
    body = _BodyFormatter().vformat(chain["body"], (), dict(constants, m=model))

    which = "KernelBench's shapes" if shapes == "v0.1" else "small shapes"
    lines = ["# KernelBench level 2, problem %s: %s (%s)." % (number, title(number), which),
             "# Model: bench/kernelbench_problems/level2/%s" % os.path.basename(problem_path(number)),
             "# (%s@%s). N is its batch_size (%d); each param and state is" % (
                 KERNELBENCH_REPOSITORY, KERNELBENCH_COMMIT[:12], batch),
             "# the Model attribute named beside it."]
    if chain["note"]:
        lines += _wrap("Written differently: " + chain["note"] + ".")
    lines.append("# Written by scripts/kernelbench_conv.py --write; change the chain in kernelbench_conv_chains.py.")
    lines.append("fusion %s {" % title(number).lower())
    width = max(len(d[1]) for d in declarations)
    types = ["f32[%s]" % ", ".join(str(s) for s in d[2]) for d in declarations]
    type_width = max(len(t) for t in types)
    for (kind, name, _shape, comment), type_text in zip(declarations, types):
        lines.append("  %-6s %-*s : %-*s  # %s" % (kind, width, name, type_width, type_text, comment))
    lines += ["  " + line if line.strip() else "" for line in body.splitlines()]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__[__doc__.index("usage:"):],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true")
    action.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for shapes in SHAPES:
        for number in numbers():
            path = spec_path(shapes, number)
            text = spec_text(number, shapes)
            old = open(path).read() if os.path.exists(path) else None
            if old != text:
                stale.append(os.path.relpath(path, ROOT))
                if args.write:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write(text)
    known = {os.path.basename(spec_path("v0.1", n)) for n in numbers()}
    extra = [p for s in SHAPES for p in glob.glob(os.path.join(os.path.dirname(spec_path(s, "1")), "*.fg"))
             if os.path.basename(p) not in known]
    for path in extra:
        print("kernelbench_conv: %s is not a chain of the table" % os.path.relpath(path, ROOT))
    if args.write:
        print("kernelbench_conv: wrote %d of %d specs" % (len(stale), 2 * len(numbers())))
        return 1 if extra else 0
    for path in stale:
        print("kernelbench_conv: %s differs from what --write writes" % path)
    return 1 if stale or extra else 0


if __name__ == "__main__":
    sys.exit(main())
