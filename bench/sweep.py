#!/usr/bin/env python3
"""A shape sweep: fusegen against PyTorch eager and torch.compile over families of shapes users run.

Families (--families; each a spec under bench/sweep/, with symbolic dims
where the shapes vary, next to the same computation as a PyTorch module here):
  swiglu       LLaMA-style SwiGLU feed-forward y = down(silu(gate(x)) * up(x)),
               Linear without bias, d 4096, hidden 11008; tokens T = 1, 16, 32,
               64, 512, 4096 (bench/sweep/swiglu_ffn.fg)
  mlp          pre-norm MLP block y = x + fc2(gelu(fc1(layer_norm(x)))), Linear
               with bias, d 2048, hidden 8192; T = 1, 32, 64, 512, 8192
               (bench/sweep/prenorm_mlp.fg)
  rows         softmax, log_softmax and layer_norm (with weight and bias) over the
               last dim of [4096, 32000], [1024, 128256], [8, 32000],
               [16384, 1024], [65536, 256] (bench/sweep/*_rows.fg; layer_norm's
               normalized_shape is a constant, so it has one fusion per row length)
  resnet       ResNet basic block: conv3x3 64->64 pad 1 (no bias), BatchNorm2d in
               training mode (batch statistics, running stats updated), ReLU,
               conv3x3, BatchNorm2d, + x, ReLU; N = 64 and 8 at 56x56
               (bench/sweep/resnet_basic_block.fg)
  kernelbench  the four KernelBench level-2 seed chains at v0.1
               (specs/kernelbench/*.fg, built by bench/kernelbench.py's chain builder)
--quick runs fewer points: swiglu T = 16, 4096; mlp T = 64, 8192; rows
[4096, 32000] and [16384, 1024]; resnet N = 64; kernelbench 62 and 85.
Every op used is in docs/ops.md; nothing of the issue had to be left out.

For each point, in one process on one GPU, PyTorch in fp32 with TF32 off:
  1. builds the module under torch.manual_seed (its own default init; norm
     weights, biases and running stats drawn at random, since ones and zeros
     would hide a swapped argument), in train mode, and checks fusegen strict
     against it on --sets fresh input sets: allclose atol=rtol=1e-4 on the
     output and every running stat (tf32 is checked the same way at 1e-2);
  2. times eager, torch.compile (default mode, dynamo reset per point, so each
     shape compiles as in a fresh process; --no-compile skips it), fusegen
     strict and fusegen tf32: CUDA events, L2 flushed before each run, median
     of --runs runs after warm-up (bench/bench_common.py, as kernelbench.py);
  3. the roofline: bytes = every input, weight and running stat read once plus
     the output and the running stats written once; FLOPs = 2 per multiply-add
     of the contractions (linear, conv; pointwise and normalization work is not
     counted); bound = max(bytes / memory bandwidth, FLOPs / rate), the rate
     fp32 for eager, compile and strict and tf32 for fusegen tf32 (CEILINGS
     below); fraction of roofline = bound / measured time;
  4. counts the GPU kernels per call of each system with torch.profiler
     (after the timing, TEARDOWN_CUPTI=1 unless set, so that CUPTI does not
     stay attached for the next points);
  5. writes OUT_DIR/<gpu>-sweep.md (a table per family), .json and .svg (the
     fraction of roofline per point and system), -sweep-quick.* with --quick.

--autotune (issue 30) adds, per point, fusegen strict and tf32 with the
runtime's autotuning on (docs/jit-api.md "Autotuning": the heuristic's
kernels and each GEMM block forced, unsplit and split-K, timed, the fastest
kept), each precision in a runtime of its own; every fusegen runtime, the
heuristic's too, then has a fresh cache directory, so no cached kernels are
reused (a runtime takes a cached autotuned entry even with autotuning off).
The tuned kernels are checked like the others (1e-4 strict, 1e-2 tf32) and
timed the same way; Runtime.tunings() says which candidate won (`heuristic`
or a forced block such as `128x64` or `64x64:8`, split-K 8) and each
kernel's variant for the winner and the heuristic. Each family gets a
table of strict / tf32 against strict tuned / tf32 tuned, the winners and a
flag ("strict: heuristic +23%") where the heuristic's time is more than 10% above
the tuned one; the section "Heuristic against autotuning" (and the JSON's
"heuristic_vs_autotuning") lists every flagged point with both times and
both variants, or "none". Written to <gpu>-sweep-autotune[-quick].*.

A point that fails (a fusegen error, a mismatch) is a FAIL row with its
message and the run goes on; the exit status is then 1. Without torch or a
GPU it says so and exits 0.

Without a GPU, --check runs `fusegen check` on every point's spec at its dims
and the float64 reference interpreter (`fusegen run --reference`) at tiny dims
against the PyTorch modules on the CPU (ctest bench_sweep_specs).

fusegen comes from the installed package, else from python/ of this checkout
with FUSEGEN_LIBRARY=<build>/runtime/libfusegen.so.
"""

import argparse
import copy
import functools
import glob
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)
import bench_common as bc  # noqa: E402 - beside this file; the standard library only
from bench_common import log, ms, one_line  # noqa: E402
from sweep_report import (FAMILIES, SYSTEM_LABELS, SYSTEMS, TUNED, roofline, svg_chart,  # noqa: E402,F401
                          verdict, write_outputs)

ROOT = bc.ROOT
SPECS = os.path.join(BENCH, "sweep")


KERNELBENCH_QUICK = ("62", "85")

torch = None  # imported in main(), so that --help and --check work anywhere
fusegen = None
DEVICE = "cuda"


# ---------------------------------------------------------------------------
# The PyTorch modules (defined on first use: torch is imported late)

_MODULES = {}


def modules():
    if _MODULES:
        return _MODULES
    import torch as torch_
    import torch.nn as nn
    import torch.nn.functional as F

    class SwiGLU(nn.Module):
        def __init__(self, d, hidden, device=None):
            super().__init__()
            self.gate = nn.Linear(d, hidden, bias=False, device=device)
            self.up = nn.Linear(d, hidden, bias=False, device=device)
            self.down = nn.Linear(hidden, d, bias=False, device=device)

        def forward(self, x):
            return self.down(F.silu(self.gate(x)) * self.up(x))

    class PreNormMLP(nn.Module):
        def __init__(self, d, hidden, device=None):
            super().__init__()
            self.norm = nn.LayerNorm(d, eps=1e-5, device=device)
            self.fc1 = nn.Linear(d, hidden, device=device)
            self.fc2 = nn.Linear(hidden, d, device=device)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(self.norm(x))))

    class Softmax(nn.Module):
        def forward(self, x):
            return F.softmax(x, dim=-1)

    class LogSoftmax(nn.Module):
        def forward(self, x):
            return F.log_softmax(x, dim=-1)

    class BasicBlock(nn.Module):
        """torchvision's BasicBlock at stride 1 without downsample."""

        def __init__(self, planes, device=None):
            super().__init__()
            self.conv1 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False, device=device)
            self.bn1 = nn.BatchNorm2d(planes, eps=1e-5, momentum=0.1, device=device)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False, device=device)
            self.bn2 = nn.BatchNorm2d(planes, eps=1e-5, momentum=0.1, device=device)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + x)

    _MODULES.update(torch=torch_, SwiGLU=SwiGLU, PreNormMLP=PreNormMLP, softmax=Softmax, log_softmax=LogSoftmax,
                    LayerNorm=nn.LayerNorm, BasicBlock=BasicBlock)
    return _MODULES


def randomize_norms(model):
    """Norm weights from N(1, 0.1^2), norm biases from N(0, 0.1^2), running means N(0, 0.1^2) and running
    variances U(0.5, 1.5): the defaults (ones and zeros) would hide a swapped argument."""
    t = modules()["torch"]
    with t.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, (t.nn.LayerNorm, t.nn.BatchNorm2d)):
                module.weight.copy_(1 + 0.1 * t.randn_like(module.weight))
                module.bias.copy_(0.1 * t.randn_like(module.bias))
            if isinstance(module, t.nn.BatchNorm2d):
                module.running_mean.copy_(0.1 * t.randn_like(module.running_mean))
                module.running_var.copy_(0.5 + t.rand_like(module.running_var))
    return model


# ---------------------------------------------------------------------------
# The points


class Point:
    """One shape of one family: its spec and fusion, dims, where each spec argument lives in the module
    (names), the state arguments, the FLOPs (None: counted with torch's FlopCounterMode), whether --quick
    runs it, and the tiny dims of the CPU reference check (None: not checked there)."""

    def __init__(self, family, label, spec, fusion, dims, names, flops, model, inputs, state=(), quick=False,
                 tiny=None, chain=None):
        self.family, self.label, self.spec, self.fusion, self.dims = family, label, spec, fusion, dims
        self.names, self.flops, self.state, self.quick, self.tiny = names, flops, list(state), quick, tiny
        self._model, self._inputs, self._chain = model, inputs, chain

    def chain(self, device, dims=None):
        """A bench_common.Chain (module and input factories) on `device` at `dims` (default: the point's)."""
        if self._chain:
            return self._chain()
        dims = dict(self.dims if dims is None else dims)
        return bc.Chain(self.label, self.fusion, self.spec, None,
                        lambda: randomize_norms(self._model(device, dims)).train(),
                        lambda: self._inputs(device, dims), self.names, self.state, fusion=self.fusion)


def randn(device, *shape):
    t = modules()["torch"]
    return t.randn(*shape, device=device)


def swiglu_points():
    d, hidden = 4096, 11008
    for t in (1, 16, 32, 64, 512, 4096):
        yield Point("swiglu", "T=%d" % t, os.path.join(SPECS, "swiglu_ffn.fg"), "swiglu_ffn", {"T": t},
                    {"w_gate": "gate.weight", "w_up": "up.weight", "w_down": "down.weight"},
                    flops=2 * 3 * t * d * hidden,
                    model=lambda device, dims: modules()["SwiGLU"](d, hidden, device=device),
                    inputs=lambda device, dims: {"x": randn(device, dims["T"], d)},
                    quick=t in (16, 4096), tiny={"T": 3} if t == 1 else None)


def mlp_points():
    d, hidden = 2048, 8192
    for t in (1, 32, 64, 512, 8192):
        yield Point("mlp", "T=%d" % t, os.path.join(SPECS, "prenorm_mlp.fg"), "prenorm_mlp", {"T": t},
                    {"ln_w": "norm.weight", "ln_b": "norm.bias", "fc1_w": "fc1.weight", "fc1_b": "fc1.bias",
                     "fc2_w": "fc2.weight", "fc2_b": "fc2.bias"},
                    flops=2 * 2 * t * d * hidden,
                    model=lambda device, dims: modules()["PreNormMLP"](d, hidden, device=device),
                    inputs=lambda device, dims: {"x": randn(device, dims["T"], d)},
                    quick=t in (64, 8192), tiny={"T": 3} if t == 1 else None)


ROW_SHAPES = ((4096, 32000), (1024, 128256), (8, 32000), (16384, 1024), (65536, 256))
ROW_QUICK = ((4096, 32000), (16384, 1024))


def row_points():
    checked = set()  # fusions given tiny dims: each is checked once on the reference
    for op in ("softmax", "log_softmax", "layer_norm"):
        for rows, cols in ROW_SHAPES:
            if op == "layer_norm":  # one fusion per row length: normalized_shape is a constant
                fusion, dims, names = "layer_norm_%d" % cols, {"R": rows}, {"w": "weight", "b": "bias"}
                tiny = None if fusion in checked else {"R": 3}

                def model(device, dims, cols=cols):
                    return modules()["LayerNorm"](cols, eps=1e-5, device=device)
            else:  # both dims symbolic: one fusion for every shape, checked once at tiny dims
                fusion, dims, names = "%s_rows" % op, {"R": rows, "C": cols}, {}
                tiny = None if fusion in checked else {"R": 3, "C": 37}

                def model(device, dims, op=op):
                    return modules()[op]()

            def inputs(device, dims, cols=cols):
                return {"x": randn(device, dims["R"], dims.get("C", cols))}
            checked.add(fusion)
            spec = os.path.join(SPECS, "%s_rows.fg" % op)
            yield Point("rows", "%s [%d, %d]" % (op, rows, cols), spec, fusion, dims, names, flops=0, model=model,
                        inputs=inputs, quick=(rows, cols) in ROW_QUICK, tiny=tiny)


def resnet_points():
    c = 64
    for n in (64, 8):
        yield Point("resnet", "N=%d 64x56x56" % n, os.path.join(SPECS, "resnet_basic_block.fg"), "resnet_basic_block",
                    {"N": n, "H": 56, "W": 56},
                    {"conv1_w": "conv1.weight", "bn1_w": "bn1.weight", "bn1_b": "bn1.bias",
                     "bn1_rm": "bn1.running_mean", "bn1_rv": "bn1.running_var",
                     "conv2_w": "conv2.weight", "bn2_w": "bn2.weight", "bn2_b": "bn2.bias",
                     "bn2_rm": "bn2.running_mean", "bn2_rv": "bn2.running_var"},
                    flops=2 * 2 * n * c * c * 9 * 56 * 56,
                    model=lambda device, dims: modules()["BasicBlock"](c, device=device),
                    inputs=lambda device, dims: {"x": randn(device, dims["N"], c, dims["H"], dims["W"])},
                    state=["bn1_rm", "bn1_rv", "bn2_rm", "bn2_rv"], quick=n == 64,
                    tiny={"N": 2, "H": 5, "W": 5} if n == 64 else None)


def kernelbench_points():
    """The seed chains at v0.1 through bench/kernelbench.py's seed_chain (the standard library only until a
    point is built: then kernelbench_models and torch)."""
    kb = importlib.import_module("kernelbench")
    for key in kb.CHAINS:
        spec, = glob.glob(os.path.join(ROOT, "specs", "kernelbench", key + "_*.fg"))

        def chain(key=key):
            kb.import_everything()  # its module-level torch, which its chain factories use
            return kb.seed_chain(importlib.import_module("kernelbench_models"), "v0.1", key)
        yield Point("kernelbench", os.path.splitext(os.path.basename(spec))[0], spec, None, {}, None, flops=None,
                    model=None, inputs=None, quick=key in KERNELBENCH_QUICK, chain=chain)


def all_points():
    return [p for make in (swiglu_points, mlp_points, row_points, resnet_points, kernelbench_points) for p in make()]


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def count_flops(model, x):
    """FLOPs of the module's contractions from torch.utils.flop_counter (2 per multiply-add)."""
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter:
        model(*x)
    return int(counter.get_total_flops())


def count_launches(fn, calls=3):
    """(kernels, other GPU operations such as memsets and copies) per call of fn, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = other = 0
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        if e.name.startswith(("Memset", "Memcpy", "memset", "memcpy")):
            other += 1
        else:
            kernels += 1
    return kernels / calls, other / calls


# ---------------------------------------------------------------------------
# One point on the GPU


def new_row(point, autotune=False):
    row = {"family": point.family, "point": point.label, "spec": os.path.relpath(point.spec, ROOT),
           "fusion": point.fusion, "dims": dict(point.dims), "flops": point.flops, "bytes": None,
           "ms": {}, "runs": {}, "bound_ms": {}, "fraction": {}, "launches": {}, "other_gpu_ops": {},
           "cold_ms": {}, "max_error": {}, "passed": {}, "compile_warmup_s": None,
           "errors": [], "notes": []}
    if autotune:
        row["tuning"] = {}  # precision: what the autotuner chose (tuning_record)
    return row


class Programs:
    """One runtime per precision (and, with --autotune, one more per precision with autotuning on) for the
    whole sweep, each spec loaded once per runtime. With --autotune every runtime has a fresh cache
    directory of its own: the heuristic's would otherwise take any autotuned entry a cache holds (the
    runtime prefers it, autotuning on or off), and the tuned one the heuristic's kernels."""

    def __init__(self, autotune=False):
        self.runtimes = {}
        self.programs = {}
        self.cache_root = tempfile.mkdtemp(prefix="fusegen-sweep-autotune-") if autotune else None

    def runtime(self, precision, tuned=False):
        key = (precision, tuned)
        if key not in self.runtimes:
            if self.cache_root is None:
                self.runtimes[key] = fusegen.Runtime(precision=precision)
            else:
                cache = os.path.join(self.cache_root, "%s-%s" % (precision, "tuned" if tuned else "heuristic"))
                self.runtimes[key] = fusegen.Runtime(precision=precision, cache_dir=cache, autotune=tuned)
        return self.runtimes[key]

    def function(self, precision, spec, fusion, tuned=False):
        key = (precision, tuned, spec)
        if key not in self.programs:
            self.programs[key] = self.runtime(precision, tuned).load(spec)
        return self.programs[key].function(fusion)

    def close(self):
        """Drops the runtimes and removes the fresh cache directories."""
        self.programs.clear()
        self.runtimes.clear()
        if self.cache_root:
            shutil.rmtree(self.cache_root, ignore_errors=True)


def tuning_record(tunings):
    """What the autotuner chose at one point, from the runtime's new tunings (Runtime.tunings(): one per
    (fusion, dims) it tuned); a RuntimeError unless there is exactly one."""
    if len(tunings) != 1:
        raise RuntimeError("expected the runtime to autotune this point once, it tuned %d times%s" % (
            len(tunings), "".join("; %s at %s" % (t["fusion"], t["dims"]) for t in tunings)))
    t = tunings[0]
    return {"chosen": t["chosen"], "heuristic": t["heuristic"], "chosen_ms": t["chosen_ms"],
            "heuristic_ms": t["heuristic_ms"], "chosen_variants": t["chosen_variants"],
            "heuristic_variants": t["heuristic_variants"], "report": t["report"], "timed": t["timed"]}


def run_point(args, point, flush, programs, row):
    torch.manual_seed(args.seed)
    chain = point.chain(DEVICE)
    model = chain.make_model()
    inputs = chain.make_inputs()
    x = list(inputs.values())
    timing = dict(runs=args.runs, warmup=args.warmup, flush=flush, max_seconds=args.max_seconds)
    if row["flops"] is None:
        row["flops"] = count_flops(model, x)
    # The fewest bytes: inputs, weights and state read once, the output and the state written once.
    y = model(*x)
    read = fusegen.module_arguments(model, chain.names, **inputs)
    row["bytes"] = nbytes(read.values()) + nbytes(y if isinstance(y, tuple) else (y,)) + nbytes(
        read[name] for name in chain.state)
    y = read = None
    calls = {}  # system: fn, profiled after all the timing

    calls["eager"] = lambda: model(*x)
    row["ms"]["eager"], row["runs"]["eager"] = bc.time_gpu(calls["eager"], **timing)
    log("  eager %s ms" % ms(row["ms"]["eager"]))

    if not args.no_compile:
        try:
            importlib.import_module("torch._dynamo").reset()  # each point compiles as in a fresh process
            compiled = torch.compile(model)
            start = time.perf_counter()
            compiled(*x)
            torch.cuda.synchronize()
            row["compile_warmup_s"] = time.perf_counter() - start
            calls["compile"] = lambda: compiled(*x)
            row["ms"]["compile"], row["runs"]["compile"] = bc.time_gpu(calls["compile"], **timing)
            log("  torch.compile %s ms (compiling took %.1f s)" % (ms(row["ms"]["compile"]), row["compile_warmup_s"]))
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            row["errors"].append("torch.compile: %s" % one_line(e))
            log("  torch.compile: FAIL: %s" % one_line(e))

    for precision in ("strict", "tf32"):
        try:
            f = programs.function(precision, chain.spec, point.fusion)
            arguments = bc.check_precision(row, precision, model, f, chain, args.sets)
            arguments.update(inputs)
            calls[precision] = functools.partial(f, **arguments)
            row["ms"][precision], row["runs"][precision] = bc.time_gpu(calls[precision], **timing)
            log("  fusegen %s %s ms (first call %.0f ms), max error %.3g, %s" % (
                precision, ms(row["ms"][precision]), row["cold_ms"][precision], row["max_error"][precision],
                "ok" if row["passed"][precision] else "MISMATCH"))
        except Exception as e:  # noqa: BLE001 - a FAIL row, the run goes on
            row["errors"].append("fusegen %s: %s" % (precision, one_line(e)))
            log("  fusegen %s: FAIL: %s" % (precision, one_line(e)))
    if args.autotune:
        run_tuned(args, chain, model, inputs, timing, programs, row)
    # check_precision's "cold" first call: cold only on an empty cache (this runtime uses the default one;
    # with --autotune a fresh one, and the tuned runtimes' first calls include the tuning)
    row["first_call_ms"] = row.pop("cold_ms")

    failures = {}  # message: systems
    for system, fn in calls.items():
        try:
            row["launches"][system], other = count_launches(fn)
            if other:
                row["other_gpu_ops"][system] = other
        except Exception as e:  # noqa: BLE001 - a note; the timings stand
            failures.setdefault(one_line(e), []).append(system)
    row["notes"] += ["profiler (%s): %s" % (", ".join(systems), message) for message, systems in failures.items()]
    log("  kernels per call: %s" % ", ".join("%s %g" % (s, n) for s, n in row["launches"].items()))
    roofline(row)


def run_tuned(args, chain, model, inputs, timing, programs, row):
    """--autotune: fusegen strict and tf32 with autotuning on, checked and timed as the heuristic's
    kernels are; row["tuning"][precision] says which candidate won (not profiled: the kernels per call
    are the heuristic's unless the winner splits K)."""
    for precision, system in TUNED.items():
        try:
            runtime = programs.runtime(precision, tuned=True)
            before = len(runtime.tunings())
            f = programs.function(precision, chain.spec, row["fusion"], tuned=True)
            arguments = bc.check_precision(row, precision, model, f, chain, args.sets, key=system)
            arguments.update(inputs)
            row["tuning"][precision] = tuning_record(runtime.tunings()[before:])
            row["ms"][system], row["runs"][system] = bc.time_gpu(functools.partial(f, **arguments), **timing)
            tuning = row["tuning"][precision]
            log("  fusegen %s tuned %s ms (first call %.0f ms), max error %.3g, %s; chose %s (%s)" % (
                precision, ms(row["ms"][system]), row["cold_ms"][system], row["max_error"][system],
                "ok" if row["passed"][system] else "MISMATCH", tuning["chosen"], tuning["report"]))
        except Exception as e:  # noqa: BLE001 - a FAIL row, the run goes on
            row["errors"].append("fusegen %s tuned: %s" % (precision, one_line(e)))
            log("  fusegen %s tuned: FAIL: %s" % (precision, one_line(e)))


# ---------------------------------------------------------------------------
# --check: the specs and the modules without a GPU


def find_fusegen(given):
    for candidate in [given, os.environ.get("FUSEGEN_CLI"), os.path.join(ROOT, "build", "cli", "fusegen")]:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("fusegen")


def dims_text(dims):
    return ",".join("%s=%d" % kv for kv in dims.items())


def check_reference(cli, point, work, np):
    """The fusion on the float64 reference interpreter at the point's tiny dims against its module in
    float64 on the CPU: (max error, passed) over the output and the running stats."""
    t = modules()["torch"]
    t.manual_seed(0)
    chain = point.chain("cpu", point.tiny)
    model = chain.make_model()
    inputs = chain.make_inputs()
    arguments = {name: functools.reduce(getattr, dotted.split("."), model) for name, dotted in point.names.items()}
    arguments.update(inputs)
    in_dir, out_dir = os.path.join(work, "inputs"), os.path.join(work, "saved")
    os.makedirs(in_dir)
    for name, value in arguments.items():
        np.save(os.path.join(in_dir, name + ".npy"), value.detach().float().contiguous().numpy())
    command = [cli, "run", point.spec, "--fusion", point.fusion, "--dims", dims_text(point.tiny), "--reference",
               "--inputs", in_dir, "--save", out_dir]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                            timeout=600)
    if result.returncode != 0:
        raise RuntimeError("fusegen run failed (%d): %s" % (result.returncode, result.stdout.strip()[-500:]))
    twin = copy.deepcopy(model).double()
    with t.no_grad():
        expected = {"y": twin(*[v.double() for v in inputs.values()])}
    for name in point.state:
        expected[name] = functools.reduce(getattr, point.names[name].split("."), twin)
    worst, passed = 0.0, True
    for name, want in expected.items():
        got = t.from_numpy(np.load(os.path.join(out_dir, "outputs", name + ".npy")))
        want = want.detach()
        if tuple(got.shape) != tuple(want.shape):
            raise RuntimeError("%s: shape %s, PyTorch gives %s" % (name, list(got.shape), list(want.shape)))
        worst = max(worst, (got - want).abs().max().item())
        passed = passed and t.allclose(got, want, atol=1e-9, rtol=1e-9) and not got.isnan().any().item()
    return worst, passed


def check(args, points):
    """`fusegen check` on every point's spec at its dims, then the reference at tiny dims against the modules."""
    cli = find_fusegen(args.fusegen)
    if not cli:
        log("sweep --check: error: no fusegen tool (pass --fusegen PATH or set FUSEGEN_CLI)")
        return 1
    failed = []
    begin = time.perf_counter()
    done = set()
    for p in points:
        if p.family == "kernelbench":
            continue  # specs/kernelbench has its own tests
        key = (p.spec, dims_text(p.dims))
        if key in done:
            continue
        done.add(key)
        command = [cli, "check", p.spec, "--dims", dims_text(p.dims)]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                timeout=300)
        ok = result.returncode == 0
        log("%s fusegen check %s --dims %s" % ("PASS" if ok else "FAIL", os.path.relpath(p.spec, ROOT),
                                               dims_text(p.dims)))
        if not ok:
            failed.append(p.label)
            log(result.stdout.strip())
    try:
        import numpy as np
        modules()
    except ImportError as e:
        log("sweep --check: the reference comparison is skipped: %s (scripts/install-torch.sh installs torch and "
            "numpy)" % e)
        if os.environ.get("FUSEGEN_REQUIRE_TORCH") == "1":
            return 1
        return 1 if failed else 0
    modules()["torch"].set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    work = tempfile.mkdtemp(prefix="fusegen-sweep-check-")
    try:
        for i, p in enumerate(p for p in points if p.tiny and p.family != "kernelbench"):
            try:
                worst, passed = check_reference(cli, p, os.path.join(work, str(i)), np)
            except Exception as e:  # noqa: BLE001 - a FAIL line, the check goes on
                worst, passed = None, False
                log("  %s" % one_line(e))
            log("%s reference %s %s at %s vs the PyTorch module in float64 (max err %s)" % (
                "PASS" if passed else "FAIL", os.path.relpath(p.spec, ROOT), p.fusion, dims_text(p.tiny),
                bc.err(worst)))
            if not passed:
                failed.append(p.label)
            shutil.rmtree(os.path.join(work, str(i)), ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log("sweep --check: %s in %.0f s" % ("FAIL: " + ", ".join(failed) if failed else "all passed",
                                         time.perf_counter() - begin))
    return 1 if failed else 0


# ---------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__[__doc__.index("\n\n") + 2:],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default="all",
                        help="comma-separated families: %s, or all (the default)" % ", ".join(FAMILIES))
    parser.add_argument("--runs", type=int, default=100, help="timed runs per variant (median; default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs before timing (default 10)")
    parser.add_argument("--sets", type=int, default=3, help="fresh input sets for the correctness check (default 3)")
    parser.add_argument("--max-seconds", type=float, default=10.0,
                        help="cap on one variant's timed runs; slower variants get fewer runs, shown in the report")
    parser.add_argument("--quick", action="store_true",
                        help="fewer points (see below), 20 runs, 3 warm-up runs, 2 input sets, --max-seconds 2; "
                             "writes <gpu>-sweep-quick.*")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--autotune", action="store_true",
                        help="also run fusegen strict and tf32 with autotuning on (fresh caches) and report where "
                             "the heuristic is more than 10%% slower than the tuned kernels")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    parser.add_argument("--commit", help="fusegen commit to record (default: git rev-parse of this checkout)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--from-json", metavar="FILE",
                        help="no GPU: write the .md and .svg again from a saved .json (beside it)")
    parser.add_argument("--check", action="store_true",
                        help="no GPU: fusegen check on the specs and the reference against the modules, then exit")
    parser.add_argument("--fusegen", help="the fusegen command-line tool for --check (default: $FUSEGEN_CLI, "
                                          "build/cli/fusegen, PATH)")
    args = parser.parse_args(argv)
    families = []
    for name in (n.strip() for n in args.families.split(",") if n.strip()):
        families += [f for f in (list(FAMILIES) if name == "all" else [name]) if f not in families]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        parser.error("unknown families %s (expected %s or all)" % (unknown, ", ".join(FAMILIES)))
    args.families = families
    if args.quick:
        args.runs, args.warmup, args.sets = min(args.runs, 20), min(args.warmup, 3), min(args.sets, 2)
        args.max_seconds = min(args.max_seconds, 2.0)
    if args.runs < 1 or args.sets < 1 or args.warmup < 0:
        parser.error("--runs and --sets must be at least 1, --warmup at least 0")
    return args


def selected_points(args):
    return [p for p in all_points() if p.family in args.families and (p.quick or not args.quick or args.check)]


def rerender(path):
    """The report and the plot of a saved run, from its JSON (the same text a run writes)."""
    with open(path) as f:
        saved = json.load(f)
    settings = argparse.Namespace(**saved["settings"])
    base = path[:-len(".json")] if path.endswith(".json") else path
    write_outputs(base, saved["environment"], saved["points"], settings, saved["seconds"])
    log("wrote %s.md, .json and .svg" % base)
    return 0


def main(argv=None):
    global torch, fusegen
    args = parse_args(argv)
    points = selected_points(args)
    if args.check:
        return check(args, points)
    if args.from_json:
        return rerender(args.from_json)
    # CUPTI detached after each profile (torch.profiler counts the kernels), so that it does not slow the
    # launches of the points after; read by the profiler when it starts.
    os.environ.setdefault("TEARDOWN_CUPTI", "1")
    why_not, torch, fusegen = bc.import_torch_and_fusegen()
    if why_not:
        log("sweep: skipped: %s (this benchmark needs PyTorch with a CUDA GPU)" % why_not)
        return 0
    if bc.library_error(fusegen, "sweep"):
        return 1
    if args.autotune and not hasattr(fusegen.Runtime, "tunings"):
        log("sweep: error: --autotune needs Runtime.tunings(), which this fusegen package (%s) lacks; use the "
            "package and library of this checkout" % os.path.dirname(fusegen.__file__))
        return 1
    bc.pytorch_in_fp32(torch)
    begin = time.perf_counter()
    info = bc.environment(args.commit)
    log("fusegen %s (%s) on %s, driver %s; torch %s, CUDA %s, triton %s; %d points" % (
        info["fusegen"], info["library"], info["gpu"], info["driver"], info["torch"], info["cuda"], info["triton"],
        len(points)))
    flush = torch.empty(bc.L2_FLUSH_BYTES // 4, dtype=torch.float32, device=DEVICE)
    programs = Programs(args.autotune)
    rows = []
    os.makedirs(args.out_dir, exist_ok=True)
    base = os.path.join(args.out_dir, bc.slug(info["gpu"]) + "-sweep" + ("-autotune" if args.autotune else "") +
                        ("-quick" if args.quick else ""))
    try:
        with torch.no_grad():
            for point in points:
                row = new_row(point, args.autotune)
                log("== %s %s (%.0f s so far)" % (point.family, point.label, time.perf_counter() - begin))
                bc.run_recorded(row, lambda: run_point(args, point, flush, programs, row))
                rows.append(row)
                torch.cuda.empty_cache()
                # After every point, so that a run cut short still leaves its table.
                write_outputs(base, info, rows, args, time.perf_counter() - begin)
    finally:
        programs.close()
    seconds = time.perf_counter() - begin
    text = write_outputs(base, info, rows, args, seconds)
    print("\n" + text)
    log("wrote %s.md, .json and .svg" % base)
    return 0 if all(verdict(r) == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
