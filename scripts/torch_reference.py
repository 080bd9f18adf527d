#!/usr/bin/env python3
"""PyTorch on the GPU as the reference for the four KernelBench seed chains.

For each chain (62, 75, 39, 85) and shape set (v0.1: specs/kernelbench/*.fg at
KernelBench's batch sizes; small: specs/kernelbench/small/*.fg at N=128), builds
the PyTorch module with a deterministic init (torch.manual_seed), draws the
inputs with torch.rand, runs the module on CUDA in fp32 with TF32 off, and writes

    OUT/<shapes>/<chain>/inputs/<name>.npy    every spec argument (input, param,
                                              state) by its spec name, before the run
    OUT/<shapes>/<chain>/expected/<name>.npy  the outputs by their spec names, and
                                              the state (running_mean, running_var)
                                              after the run

all float32, plus OUT/manifest.tsv (shapes, chain, spec path, N; one line per
chain), which scripts/gpu-check.sh reads to run

    fusegen run SPEC --device --dims N=<N> --inputs .../inputs --expect .../expected

usage: scripts/torch_reference.py --out DIR [--shapes v0.1|small|both] [--seed S]
                                  [--chains 62,75,39,85] [--device cuda]
"""

import argparse
import ctypes
import os
import re
import struct
import sys
import time

import torch
import torch.nn as nn

# ---------------------------------------------------------------------------
# The modules, as in KernelBench level 2 (and scripts/make_golden.py), their KernelBench configurations and the spec-name -> module
# attribute maps and the spec paths live in kernelbench_models.py (shared with bench/kernelbench.py).
from kernelbench_models import ARGUMENTS, CONFIGS, SPEC_FILES, STATE, spec_path  # noqa: E402,F401

DECL = re.compile(r"^\s*(input|param|state)\s+(\w+)\s*:\s*f32\[([^\]]*)\]", re.M)
OUTPUT = re.compile(r"^\s*output\s+(\w+)\s*=", re.M)


def read_spec(path, n):
    """{argument name: concrete shape} and [output names] of the spec, with N bound to n."""
    with open(path) as f:
        text = f.read()
    arguments = {}
    for _kind, name, dims in DECL.findall(text):
        shape = []
        for d in dims.split(","):
            d = d.strip()
            shape.append(n if d == "N" else int(d))
        arguments[name] = tuple(shape)
    return arguments, OUTPUT.findall(text)


def attribute(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


def write_npy(path, shape, data):
    """An .npy file (format 1.0) of little-endian float32 `data` (bytes), C order: no NumPy needed."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (tuple(shape),)
    # Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(data)


def save(folder, name, tensor):
    """Writes `tensor` as float32 to folder/name.npy; returns its shape."""
    assert sys.byteorder == "little"
    host = tensor.detach().to("cpu", torch.float32).contiguous()
    shape = tuple(host.shape)
    write_npy(os.path.join(folder, name + ".npy"), shape, ctypes.string_at(host.data_ptr(), host.numel() * 4))
    return shape


def run_chain(out, shapes, chain, seed, device):
    n, factory, x_shape = CONFIGS[shapes][chain]
    path = spec_path(shapes, chain)
    spec_arguments, spec_outputs = read_spec(path, n)
    if spec_outputs != ["y"]:
        sys.exit(f"torch_reference: {path}: expected one output named y, found {spec_outputs}")

    # The init and the inputs on the CPU generator, so they do not depend on the GPU.
    torch.manual_seed(seed)
    model = factory()
    model.train()  # KernelBench's default; only BatchNorm1d (39) cares
    x = torch.rand(n, *x_shape)

    folder = os.path.join(out, shapes, os.path.splitext(SPEC_FILES[chain])[0])
    inputs_dir = os.path.join(folder, "inputs")
    expected_dir = os.path.join(folder, "expected")
    os.makedirs(inputs_dir, exist_ok=True)
    os.makedirs(expected_dir, exist_ok=True)

    tensors = {"x": x}
    tensors.update({name: attribute(model, dotted) for name, dotted in ARGUMENTS[chain].items()})
    if set(tensors) != set(spec_arguments):
        sys.exit(f"torch_reference: {path}: spec arguments {sorted(spec_arguments)}, module gives {sorted(tensors)}")
    # Written before the run: the state tensors are updated by it.
    for name, tensor in tensors.items():
        shape = save(inputs_dir, name, tensor)
        if shape != spec_arguments[name]:
            sys.exit(f"torch_reference: {shapes} {chain}: {name} has shape {list(shape)}, "
                     f"the spec says {list(spec_arguments[name])}")
    del tensors

    model = model.to(device)
    start = time.time()
    with torch.no_grad():
        y = model(x.to(device))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.time() - start

    y_shape = save(expected_dir, "y", y)
    summary = f"y f32{list(y_shape)} sum={y.double().sum().item():.10g}"
    for name in STATE.get(chain, []):
        state = attribute(model, ARGUMENTS[chain][name])
        save(expected_dir, name, state)
        summary += f", {name} sum={state.double().sum().item():.10g}"
    print(f"{shapes} {chain} N={n}: {summary} ({seconds:.2f} s on {device}) -> {folder}", flush=True)

    del model, x, y
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return folder, path, n


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--shapes", choices=["v0.1", "small", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chains", default="62,75,39,85", help="comma-separated subset of 62,75,39,85")
    parser.add_argument("--device", default="cuda", help="torch device (cuda; cpu only for debugging)")
    args = parser.parse_args()

    chains = [c.strip() for c in args.chains.split(",") if c.strip()]
    unknown = [c for c in chains if c not in SPEC_FILES]
    if unknown:
        parser.error(f"unknown chains {unknown} (expected some of {list(SPEC_FILES)})")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("torch_reference: CUDA is not available")

    # Full fp32, as fusegen's strict precision: no TF32 in matmuls or convolutions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    shape_sets = ["v0.1", "small"] if args.shapes == "both" else [args.shapes]
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else args.device
    print(f"torch {torch.__version__} on {device_name}, seed {args.seed}, TF32 off", flush=True)
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for shapes in shape_sets:
        for chain in chains:
            folder, path, n = run_chain(args.out, shapes, chain, args.seed, args.device)
            manifest.append(f"{shapes}\t{os.path.basename(folder)}\t{path}\t{n}\t{folder}\n")
    with open(os.path.join(args.out, "manifest.tsv"), "w") as f:
        f.writelines(manifest)


if __name__ == "__main__":
    main()
