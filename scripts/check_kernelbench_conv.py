#!/usr/bin/env python3
"""Checks each KernelBench conv/pool chain's spec against the problem's own
PyTorch Model, on the CPU (no GPU needed).

For every chain of scripts/kernelbench_conv_chains.py (or --chains), at the
small shapes (specs/kernelbench/conv/small/): builds the Model from
bench/kernelbench_problems/level2/ with the small constants, in train mode
(as KernelBench runs it), under torch.manual_seed; writes its input and its
parameters and buffers, mapped onto the spec's arguments, as float32 .npy;
runs `fusegen run --reference --inputs` (the float64 reference interpreter);
and compares the output and the state (batch-norm running stats after their
update) with the Model run on the same values in float64 (allclose
atol=rtol=1e-9) and in float32 (atol=rtol=1e-4). Two sets per chain: the
Model's own initial weights, and every parameter and buffer perturbed (norm
weights of ones and biases of zeros would hide a swapped mapping). The table
counts each output's distinct values: 1 means the check proved little (a
saturated or constant output). Prints a
PASS/FAIL table; exits 1 on a FAIL, or when a committed spec (either shape
set) differs from what scripts/kernelbench_conv.py --write writes.

usage: scripts/check_kernelbench_conv.py [--fusegen PATH] [--chains 1,2,...] [--keep DIR]
                                        [--shapes small|v0.1] [--batch N]
fusegen: --fusegen, else $FUSEGEN_CLI, else build/cli/fusegen of this checkout, else on PATH.
Without torch it says so and exits 77 (ctest's skip), or 1 with FUSEGEN_REQUIRE_TORCH=1.
"""

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelbench_conv as kc  # noqa: E402

TOLERANCE = {"f64": 1e-9, "f32": 1e-4}
SKIP = 77


def find_fusegen(given):
    for candidate in [given, os.environ.get("FUSEGEN_CLI"), os.path.join(kc.ROOT, "build", "cli", "fusegen")]:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("fusegen")


def perturb(model, torch):
    """The second argument set: convolution and linear weights moved by noise of their own size; every
    other parameter drawn again, norm weights from N(1, 0.5^2) and the rest (biases, scales) from
    N(0, 0.5^2), so that a free bias cannot saturate a chain; running means random, running variances in
    [0.5, 1.5)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and name.endswith("weight"):
                p.add_(torch.randn_like(p) * p.abs().mean())
            elif name.endswith("weight"):
                p.copy_(1 + 0.5 * torch.randn_like(p))
            else:
                p.copy_(0.5 * torch.randn_like(p))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn_like(b) * 0.5)
            elif name.endswith("running_var"):
                b.copy_(torch.rand_like(b) + 0.5)


def run_set(torch, np, fusegen, shapes, number, namespace, model, inputs, work):
    """{"f64": max error, "f32": max error, "passed": bool, "shape": [...]} of one argument set."""
    chain = kc.CHAINS[number]
    arguments = kc.arguments(number, model, inputs, namespace)
    in_dir, out_dir = os.path.join(work, "inputs"), os.path.join(work, "saved")
    os.makedirs(in_dir)
    for name, value in arguments.items():
        np.save(os.path.join(in_dir, name + ".npy"), value.detach().float().contiguous().numpy())
    command = [fusegen, "run", kc.spec_path(shapes, number), "--dims", "N=%d" % namespace["batch_size"],
               "--reference", "--inputs", in_dir, "--save", out_dir]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                            timeout=600)
    if result.returncode != 0:
        raise RuntimeError("fusegen run failed (%d): %s" % (result.returncode, result.stdout.strip()[-500:]))
    ours = {"y": np.load(os.path.join(out_dir, "outputs", "y.npy"))}
    for name in chain["state"]:
        ours[name] = np.load(os.path.join(out_dir, "outputs", name + ".npy"))

    # distinct output values: a check whose output is one value (saturated, say) proves little
    distinct = len(np.unique(np.round(ours["y"], 6)))
    report = {"shape": list(ours["y"].shape), "passed": True, "distinct": distinct}
    for precision, dtype in (("f64", torch.float64), ("f32", torch.float32)):
        twin = copy.deepcopy(model).to(dtype)
        with torch.no_grad():
            y = twin(*[t.to(dtype) for t in inputs])
        expected = {"y": y}
        expected.update({name: kc.arguments(number, twin, inputs, namespace)[name] for name in chain["state"]})
        worst = 0.0
        for name, value in ours.items():
            want = expected[name].detach().to(torch.float64)
            got = torch.from_numpy(value)
            if tuple(got.shape) != tuple(want.shape):
                raise RuntimeError("%s: shape %s, PyTorch gives %s" % (name, list(got.shape), list(want.shape)))
            worst = max(worst, (got - want).abs().max().item() if got.numel() else 0.0)
            tolerance = TOLERANCE[precision]
            close = torch.allclose(got, want, atol=tolerance, rtol=tolerance)
            if got.isnan().any() or want.isnan().any():
                close = False  # no chain here should make a NaN
            report["passed"] = report["passed"] and close
        report[precision] = worst
    return report


def check_chain(torch, np, fusegen, shapes, batch, number, seed, work):
    namespace = kc.load_problem(number, shapes, batch)
    rows = []
    for variant in ("init", "perturbed"):
        torch.manual_seed(seed)
        model, inputs = kc.build(namespace, "cpu")
        if variant == "perturbed":
            perturb(model, torch)
        rows.append((variant, run_set(torch, np, fusegen, shapes, number, namespace, model, inputs,
                                      os.path.join(work, "%s-%s" % (number, variant)))))
    return namespace["batch_size"], rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__[__doc__.index("\n\n") + 2:],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fusegen", help="the fusegen command-line tool")
    parser.add_argument("--chains", help="comma-separated problem numbers (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shapes", choices=kc.SHAPES, default="small",
                        help="small (the default) or v0.1, KernelBench's shapes (slow: pick --chains and --batch 1)")
    parser.add_argument("--batch", type=int, help="batch size instead of the problem's")
    parser.add_argument("--keep", help="write the .npy files under DIR and keep them")
    args = parser.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("check_kernelbench_conv: skipped: %s (scripts/install-torch.sh installs torch and numpy)" % e)
        return 1 if os.environ.get("FUSEGEN_REQUIRE_TORCH") == "1" else SKIP
    fusegen = find_fusegen(args.fusegen)
    if not fusegen:
        print("check_kernelbench_conv: error: no fusegen tool (pass --fusegen PATH)")
        return 1
    chains = kc.numbers() if not args.chains else [c.strip() for c in args.chains.split(",") if c.strip()]
    unknown = [c for c in chains if c not in kc.CHAINS]
    if unknown:
        parser.error("unknown chains %s (the chains are %s)" % (unknown, ",".join(kc.numbers())))
    torch.set_num_threads(1)
    work = args.keep or tempfile.mkdtemp(prefix="fusegen-kernelbench-conv-")
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
    begin = time.perf_counter()
    lines = ["| chain | N | output | set | distinct values | max err vs f64 | max err vs f32 | result |",
             "|---|---|---|---|---|---|---|---|"]
    failed = []
    weak = []  # chains whose every set gave one output value
    try:
        for number in chains:
            name = os.path.splitext(kc.spec_file(number))[0]
            try:
                batch, rows = check_chain(torch, np, fusegen, args.shapes, args.batch, number, args.seed, work)
                if all(r["distinct"] <= 1 for _, r in rows):
                    weak.append(number)
                for variant, r in rows:
                    verdict = "PASS" if r["passed"] else "FAIL"
                    if not r["passed"]:
                        failed.append(number)
                    lines.append("| %s | %d | %s | %s | %d | %.1e | %.1e | %s |" % (
                        name, batch, r["shape"], variant, r["distinct"], r["f64"], r["f32"], verdict))
            except Exception as e:  # noqa: BLE001 - a FAIL row, the run goes on
                failed.append(number)
                lines.append("| %s | - | - | - | - | - | - | FAIL: %s |" % (name, str(e).replace("\n", " ")[:300]))
            print(lines[-1], flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    passed = len(chains) - len(set(failed))
    print("\n".join(["", "KernelBench conv chains, %s shapes, fusegen reference vs the problems' Models "
                     "(fusegen: %s, KernelBench %s):" % (args.shapes, fusegen, kc.KERNELBENCH_COMMIT[:12]), ""] + lines))
    print("\n%d of %d chains PASS (%d FAIL: %s) in %.0f s" % (passed, len(chains), len(set(failed)),
                                                            ",".join(sorted(set(failed), key=int)) or "none",
                                                            time.perf_counter() - begin))
    if weak:
        print("One output value in every set (a weak check): %s" % ",".join(weak))
    # The committed specs (both shape sets) are what scripts/kernelbench_conv.py --write writes.
    stale = [os.path.relpath(kc.spec_path(shapes, number), kc.ROOT) for shapes in kc.SHAPES for number in chains
             if not os.path.exists(kc.spec_path(shapes, number)) or
             open(kc.spec_path(shapes, number)).read() != kc.spec_text(number, shapes)]
    for path in stale:
        print("FAIL: %s differs from what scripts/kernelbench_conv.py --write writes" % path)
    return 1 if failed or stale else 0


if __name__ == "__main__":
    sys.exit(main())
