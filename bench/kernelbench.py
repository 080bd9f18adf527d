#!/usr/bin/env python3
"""fusegen against PyTorch eager and torch.compile on KernelBench level-2 chains.

For each chain at each shape set, in one process on one GPU. The chains: the
seeds 62, 75, 39, 85 (v0.1: specs/kernelbench/*.fg at KernelBench's sizes;
small: specs/kernelbench/small/*.fg; modules in scripts/kernelbench_models.py)
and the convolution and pool chains (--chains conv or their numbers; v0.1:
specs/kernelbench/conv/*.fg, small: conv/small/*.fg; each problem's own Model
from bench/kernelbench_problems/level2, see scripts/kernelbench_conv.py):
  1. builds the PyTorch module under torch.manual_seed, in train mode, inputs
     torch.rand as in KernelBench (a conv chain: its get_inputs());
  2. runs fusegen through the Python package with the module's own weights
     (fusegen.module_arguments) on fresh inputs, and checks every output and
     running stat with allclose (atol=rtol=1e-4 strict, 1e-2 tf32);
  3. times eager, torch.compile (default mode), fusegen strict and fusegen
     tf32 with CUDA events, L2 flushed before each run, median of --runs runs
     after warm-up (PyTorch with TF32 off);
  3b. the PyTorch frontends, with no spec written by hand (bench/kernelbench_frontends.py;
     --no-frontends skips them): fusegen.from_module(model, inputs) and
     torch.compile(model, backend="fusegen"), each on its own copy of the
     module, timed the same way and checked against eager on --sets fresh
     input sets (allclose atol=rtol=1e-4, outputs and running stats); a module
     that from_module cannot map shows "refused: <reason>";
  4. reports fusegen's cold JIT time (first call on an empty fusegen cache;
     cold only on a machine's first run, since a compile cache under ~/.nv
     outside fusegen's shortens later ones: bench/NOTES.md v25), its load time
     from the warm disk cache in a fresh process, and the host overhead per
     call of a tiny fusion next to one eager torch.add (host_overheads:
     batches begun on an idle GPU, and the back-to-back mean);
  5. prints the tables and writes them, with the GPU, driver and versions,
     to OUT_DIR/<gpu>.md and .json (<gpu>-conv.* when conv chains are in the
     run, -quick with --quick).

A chain that fails (a fusegen error, say) is a FAIL row with its message;
the run goes on. Without torch or a GPU it says so and exits 0.

usage: bench/kernelbench.py [--chains 62,75,39,85|seeds|conv|all|1,2,...] [--shapes v0.1|small|both]
                            [--runs 100] [--quick] [--out-dir bench/results]
                            [--commit SHA] [--no-compile] [--no-frontends]
fusegen comes from the installed package, else from python/ of this checkout
with FUSEGEN_LIBRARY=<build>/runtime/libfusegen.so.
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import bench_common  # beside this file (helpers shared with bench/sweep.py); the standard library only
import kernelbench_frontends as frontends  # beside this file; the standard library only
import launch_floor  # beside this file; the standard library only
from bench_common import (L2_FLUSH_BYTES, TOLERANCE, Chain, check_precision, err, library_error, log, ms, one_line,
                          pytorch_in_fp32, run_recorded, slug, time_gpu)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import kernelbench_conv as kc  # noqa: E402 - the standard library only until a chain is built

CHAINS = ("62", "75", "39", "85")  # the seed chains; the conv chains are kc.numbers()
TINY_SPEC = "fusion tiny_add {\n  input a : f32[1, 16]\n  input b : f32[1, 16]\n  output y = a + b\n}\n"

torch = None  # imported in main(), so that --help works anywhere
fusegen = None


def import_everything():
    """Imports torch and fusegen; None when all is well, else why not (a skip)."""
    global torch, fusegen
    why_not, torch_, fusegen_ = bench_common.import_torch_and_fusegen()
    if why_not is None:
        torch, fusegen = torch_, fusegen_
    return why_not


# ---------------------------------------------------------------------------
# Measuring


OVERHEAD_BATCH = 64    # calls per timed batch of the host overhead (see host_overheads)
OVERHEAD_BATCHES = 300


def host_overheads(cases, calls, synchronize):
    """{name: (median, min, back to back)} host time per call in us of each of
    `cases` ({name: fn}). Batches: OVERHEAD_BATCHES rounds, each timing one batch
    of OVERHEAD_BATCH calls of every case in turn, begun on an idle GPU (after
    `synchronize`); median and min per case. The rounds interleave the cases, so
    a host whose speed drifts (a shared machine) moves them all alike. Back to
    back: the mean of `calls` calls in a row. There tiny kernels can be launched
    faster than the GPU runs them, and then each launch waits for room in the
    stream's queue and the mean times the GPU's pace, not the host; a batch this
    small fits in the queue, so its time is the host's alone."""
    for fn in cases.values():
        for _ in range(200):
            fn()
    clock = time.perf_counter_ns
    per_call = {name: [] for name in cases}
    for _ in range(OVERHEAD_BATCHES):
        for name, fn in cases.items():
            synchronize()
            t0 = clock()
            for _ in range(OVERHEAD_BATCH):
                fn()
            per_call[name].append((clock() - t0) / OVERHEAD_BATCH / 1e3)
    result = {}
    for name, fn in cases.items():
        synchronize()
        begin = clock()
        for _ in range(calls):
            fn()
        back_to_back = (clock() - begin) / calls / 1e3
        result[name] = (statistics.median(per_call[name]), min(per_call[name]), back_to_back)
    synchronize()
    return result


# The fresh process of the disk-cache measurement: a runtime on the warm cache
# directory, the device opened and its context created first (context creation
# is not cache loading: device_info() opens the device, synchronize() makes the
# context), then prepare() loads the kernels. Prints one JSON line.
FRESH_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
import fusegen
t1 = time.perf_counter()
spec, name, precision, cache_dir, dims = sys.argv[1:6]
runtime = fusegen.Runtime(precision=precision, cache_dir=cache_dir)
f = runtime.load(spec).function(name)
t2 = time.perf_counter()
runtime.device_info()
t3 = time.perf_counter()
runtime.synchronize()
t4 = time.perf_counter()
f.prepare(**json.loads(dims))
t5 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "load_spec_ms": (t2 - t1) * 1e3, "open_device_ms": (t3 - t2) * 1e3,
                  "context_ms": (t4 - t3) * 1e3, "prepare_ms": (t5 - t4) * 1e3, "stats": runtime.stats()}))
"""


FRESH_PROCESSES = 3  # fresh processes per chain and precision; the table shows the median's load


def fresh_process_load(spec, name, precision, cache_dir, dims):
    package = os.path.dirname(os.path.dirname(os.path.abspath(fusegen.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS, spec, name, precision, cache_dir, json.dumps(dims)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                            timeout=300)
    wall = (time.perf_counter() - start) * 1e3
    if result.returncode != 0:
        raise RuntimeError("fresh process failed: " + (result.stderr.strip().splitlines() or ["?"])[-1])
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    measured["process_ms"] = wall
    return measured


def dims_of(function, arguments):
    """The symbolic dims' values (e.g. {"N": 1024}) from the argument tensors."""
    dims = {}
    for spec in function.arguments:
        for dim, size in zip(spec.dims, arguments[spec.name].shape):
            if isinstance(dim, str):
                dims[dim] = int(size)
    return dims


# ---------------------------------------------------------------------------
# One chain


def seed_chain(km, shapes, chain):
    n, factory, x_shape = km.CONFIGS[shapes][chain]
    return Chain(chain, os.path.splitext(km.SPEC_FILES[chain])[0], km.spec_path(shapes, chain), n,
                 lambda: factory().cuda().train(), lambda: {"x": torch.rand(n, *x_shape, device="cuda")},
                 km.ARGUMENTS[chain], km.STATE.get(chain, []))


def conv_chain(shapes, number):
    namespace = kc.load_problem(number, shapes)
    return Chain(number, os.path.splitext(kc.spec_file(number))[0], kc.spec_path(shapes, number),
                 namespace["batch_size"], lambda: kc.make_model(namespace, "cuda"),
                 lambda: kc.make_inputs(namespace, "cuda"), kc.argument_map(number), kc.CHAINS[number]["state"])


def make_chain(km, shapes, key):
    return seed_chain(km, shapes, key) if key in CHAINS else conv_chain(shapes, key)


def run_chain(args, chain, flush, cache_dir, row):
    spec = chain.spec
    row.update(n=chain.n, spec=os.path.relpath(spec, ROOT))
    torch.manual_seed(args.seed)
    model = chain.make_model()  # in train mode: KernelBench's default; batch norm uses batch statistics
    inputs = chain.make_inputs()
    x = list(inputs.values())
    timing = dict(runs=args.runs, warmup=args.warmup, flush=flush, max_seconds=args.max_seconds)

    row["eager_ms"], row["runs"]["eager"] = time_gpu(lambda: model(*x), **timing)
    log("  eager %.4f ms" % row["eager_ms"])

    if not args.no_compile:
        try:
            # Each chain compiles as in a fresh process (no dynamic shapes learnt from another chain).
            importlib.import_module("torch._dynamo").reset()
            compiled = torch.compile(model)
            start = time.perf_counter()
            compiled(*x)
            torch.cuda.synchronize()
            row["compile_warmup_s"] = time.perf_counter() - start
            row["compile_ms"], row["runs"]["compile"] = time_gpu(lambda: compiled(*x), **timing)
            log("  torch.compile %.4f ms (compiling took %.1f s)" % (row["compile_ms"], row["compile_warmup_s"]))
        except Exception as e:  # noqa: BLE001 - any failure is reported, the run goes on
            row["errors"].append("torch.compile: %s" % one_line(e))
        finally:
            compiled = None

    for precision in ("strict", "tf32"):
        try:
            runtime = fusegen.Runtime(precision=precision, cache_dir=cache_dir)
            f = runtime.load(spec).function()
            arguments = check_precision(row, precision, model, f, chain, args.sets)
            arguments.update(inputs)
            row["fusegen_ms"][precision], row["runs"][precision] = time_gpu(lambda: f(**arguments), **timing)
            log("  fusegen %s %.4f ms (cold first call %.0f ms), max error %.3g, %s" % (
                precision, row["fusegen_ms"][precision], row["cold_ms"][precision], row["max_error"][precision],
                "ok" if row["passed"][precision] else "MISMATCH"))
            # Several processes: one process's load can meet a slow disk or a busy host.
            loads = sorted((fresh_process_load(spec, f.name, precision, cache_dir, dims_of(f, arguments))
                            for _ in range(FRESH_PROCESSES)), key=lambda d: d["prepare_ms"])
            loaded = dict(loads[len(loads) // 2], prepare_ms_all=[d["prepare_ms"] for d in loads])
            row["disk_load"][precision] = loaded
            log("  fresh processes, warm cache: prepare %.1f ms, all %s (compiles %d, disk loads %d)" % (
                loaded["prepare_ms"], " ".join("%.1f" % t for t in loaded["prepare_ms_all"]),
                loaded["stats"]["compiles"], loaded["stats"]["disk_loads"]))
        except Exception as e:  # noqa: BLE001
            row["errors"].append("fusegen %s: %s" % (precision, one_line(e)))
            log("  fusegen %s: FAIL: %s" % (precision, one_line(e)))

    if not args.no_frontends:
        torch.manual_seed(args.seed)
        fresh = chain.make_model()  # the module as built, not the one the runs above updated
        row["frontends"] = frontends.run_frontends(fusegen, torch, fresh, x, chain.make_inputs, args.sets,
                                                   lambda fn: time_gpu(fn, **timing), torch.cuda.synchronize, log)
        for name, result in row["frontends"].items():
            if result["runs"] is not None:
                row["runs"][name] = result["runs"]


def new_row(shapes, key, name):
    return {"chain": key, "name": name, "shapes": shapes, "n": None,
            "eager_ms": None, "compile_ms": None, "compile_warmup_s": None, "fusegen_ms": {}, "runs": {},
            "cold_ms": {}, "disk_load": {}, "max_error": {}, "passed": {}, "errors": [], "frontends": None}


def verdict(row):
    """PASS when fusegen ran and matched PyTorch in both precisions, and each frontend that
    ran matched eager (a torch.compile failure is reported in the row but is not fusegen's
    failure; neither is from_module's refusal of a module it cannot map)."""
    ours = [e for e in row["errors"] if not e.startswith("torch.compile")] + frontends.failures(row)
    return "PASS" if not ours and all(row["passed"].get(p) for p in TOLERANCE) else "FAIL"


# ---------------------------------------------------------------------------
# Host overhead


def measure_overhead(calls, cache_dir):
    a = torch.rand(1, 16, device="cuda")
    b = torch.rand(1, 16, device="cuda")
    y = torch.empty(1, 16, device="cuda")
    cases = {"torch.add": lambda: torch.add(a, b)}
    for label, check_pointers in (("fusegen", True), ("fusegen check_pointers=False", False)):
        runtime = fusegen.Runtime(cache_dir=cache_dir, check_pointers=check_pointers)
        f = runtime.load_string(TINY_SPEC, name="tiny.fg").function()
        cases[label] = lambda f=f: f(a=a, b=b)
        cases[label + " out="] = lambda f=f: f(a=a, b=b, out={"y": y})
    floor = launch_floor.load(log)
    if floor:  # the least any Python call that launches a kernel costs on this host
        stream = torch.cuda.current_stream().cuda_stream
        cases["launch floor"] = lambda: floor.launch(stream)
    result = {"calls": calls, "shape": [1, 16]}
    result.update(host_overheads(cases, calls, torch.cuda.synchronize))
    for label in cases:
        log("  %-36s batches: median %.2f us, min %.2f us; back to back %.2f us per call" % ((label,) + result[label]))
    return result


# ---------------------------------------------------------------------------
# Report


def environment(args):
    return bench_common.environment(args.commit)


def ratio(base, value):
    return "-" if base is None or not value else "%.2fx" % (base / value)


def main_table(rows):
    """The time-per-call table; the frontends' columns (kernelbench_frontends.HEADERS) sit after the
    hand-written spec's times, ratios and errors."""
    fm = frontends.HEADERS
    headers = (["chain", "shapes", "N", "eager ms", "compile ms", "fusegen strict ms", "fusegen tf32 ms"] + fm[:2] +
               ["strict vs eager", "strict vs compile", "tf32 vs eager", "tf32 vs compile"] + fm[2:4] +
               ["max err strict", "max err tf32"] + fm[4:] + ["result"])
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        strict, tf32 = r["fusegen_ms"].get("strict"), r["fusegen_ms"].get("tf32")
        problems = r["errors"] + frontends.failures(r)
        result = verdict(r) + "".join("; " + e for e in problems)
        front = frontends.cells(r, ms, err, ratio)
        cells = ([r["name"], r["shapes"], r["n"] or "-", ms(r["eager_ms"]), ms(r["compile_ms"]), ms(strict), ms(tf32)]
                 + front[:2] + [ratio(r["eager_ms"], strict), ratio(r["compile_ms"], strict),
                                ratio(r["eager_ms"], tf32), ratio(r["compile_ms"], tf32)] + front[2:4]
                 + [err(r["max_error"].get("strict")), err(r["max_error"].get("tf32"))] + front[4:] + [result])
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return lines


def jit_table(rows):
    lines = ["| chain | shapes | cold first call strict ms | cold tf32 ms | fresh process: prepare strict ms | "
             "prepare tf32 ms | fresh process compiles | open device + context ms | torch.compile warm-up s | "
             "from_module first call s | backend warm-up s |",
             "|" + "---|" * 11]
    for r in rows:
        d = r["disk_load"]
        compiles = "/".join(str(d[p]["stats"]["compiles"]) for p in TOLERANCE if p in d) or "-"
        opened = "/".join("%.0f + %.0f" % (d[p]["open_device_ms"], d[p].get("context_ms", 0)) for p in TOLERANCE
                          if p in d) or "-"
        front = r.get("frontends") or {}
        warm = ["-" if (front.get(k) or {}).get("warmup_s") is None else "%.1f" % front[k]["warmup_s"]
                for k in frontends.FRONTENDS]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % ((
            r["name"], r["shapes"], ms(r["cold_ms"].get("strict")), ms(r["cold_ms"].get("tf32")),
            prepare(d.get("strict")), prepare(d.get("tf32")), compiles, opened,
            "-" if r["compile_warmup_s"] is None else "%.1f" % r["compile_warmup_s"]) + tuple(warm)))
    return lines


def prepare(load):
    """A fresh-process load's prepare time: the median and, in parentheses, the slowest."""
    if not load:
        return "-"
    slowest = max(load.get("prepare_ms_all") or [load["prepare_ms"]])
    return "%s (%s)" % (ms(load["prepare_ms"]), ms(slowest))


def runs_note(rows, args):
    short = ["%s %s %s: %d" % (r["name"], r["shapes"], k, v) for r in rows for k, v in r["runs"].items()
             if v < args.runs]
    return ("Runs below %d because a variant would have exceeded --max-seconds %g: %s." % (
        args.runs, args.max_seconds, ", ".join(short))) if short else ""


def report(info, rows, overhead, args, seconds):
    conv = [c for c in args.chains if c not in CHAINS]
    md = ["# fusegen vs PyTorch: KernelBench level-2 %s on %s" % (
              "chains" if conv else "seed chains", info["gpu"]), "",
          "fusegen %s (commit %s), %s. Produced by:" % (info["fusegen"], info["commit"], info["date"]), "",
          "    " + info["command"], "",
          "- GPU: %s (%s), driver %s" % (info["gpu"], info["arch"], info["driver"]),
          "- torch %s (CUDA %s), triton %s, Python %s" % (info["torch"], info["cuda"], info["triton"], info["python"]),
          "- method: one process; PyTorch fp32 with TF32 off; torch.compile default mode; CUDA events on the "
          "current stream; %d MB written before each timed run (L2 flush); median of %d runs after %d warm-up "
          "runs; correctness on %d fresh input sets per precision (allclose atol=rtol=1e-4 strict, 1e-2 tf32; "
          "batch-norm running stats included); speedup = PyTorch ms / fusegen ms." % (
              L2_FLUSH_BYTES >> 20, args.runs, args.warmup, args.sets),
          "- total time: %.0f s" % seconds, ""]
    if not args.no_frontends:
        md[-1:-1] = ["- frontends, no spec written by hand: `from_module` is fusegen.from_module(model, inputs), "
                     "`backend` is torch.compile(model, backend=\"fusegen\") (fusegen's fusions plus eager PyTorch "
                     "for the rest; its check cell counts the fusions in its graph), each on a copy of the freshly "
                     "built module, timed as above, checked against eager on %d fresh input sets (allclose "
                     "atol=rtol=1e-4, strict fp32, running stats included); \"refused\": from_module cannot map "
                     "the module (why)." % args.sets]
    if conv:
        md[-1:-1] = ["- conv chains: the problems' own Models from bench/kernelbench_problems/level2 (%s at commit "
                     "%s), specs under specs/kernelbench/conv" % (kc.KERNELBENCH_REPOSITORY, kc.KERNELBENCH_COMMIT)]
    note = runs_note(rows, args)
    md += ["## Time per call", ""] + main_table(rows) + ([""] + [note] if note else []) + [""]
    md += ["## JIT compile and disk cache", "",
           "Cold: the first call on an empty cache directory (code generation, NVRTC, module load, launch). "
           "Fresh process: a new Python process with a runtime on the now warm cache directory; `prepare` "
           "loads the kernels from disk (the device is opened before, and that time is shown apart); %d such "
           "processes, the median's figures, the slowest prepare in parentheses." % FRESH_PROCESSES, ""]
    md += jit_table(rows) + [""]
    if overhead:
        md += ["## Host overhead per call", "",
               "Host wall time per call on a [1, 16] tensor: the fusion `y = a + b` through the Python package, next "
               "to one eager `torch.add(a, b)` and the launch floor (bench/launch_floor.c: a C function called with the "
               "stream that only launches an empty kernel, the least any Python call that launches one can cost "
               "on this host). Batches: %d rounds of one batch of %d calls of each call in turn, each "
               "begun after a synchronize; median and min of their time per call (the host's cost). Back to back: the mean of %d calls in a "
               "row, where launches can wait for room in the stream's queue (the GPU's pace)."
               % (OVERHEAD_BATCHES, OVERHEAD_BATCH, overhead["calls"]), "",
               "| call | batches median us | batches min us | back to back us |", "|---|---|---|---|"]
        md += ["| %s | %.2f | %.2f | %.2f |" % ((k,) + tuple(v)) for k, v in overhead.items()
               if k not in ("calls", "shape")]
        md.append("")
    return "\n".join(md)


# ---------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__[__doc__.index("\n\n") + 2:],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", default=",".join(CHAINS),
                        help="comma-separated chains: seed chains 62,75,39,85 (the default), conv chains by "
                             "KernelBench number (1,2,...), 'seeds', 'conv' (all %d) or 'all'" % len(kc.numbers()))
    parser.add_argument("--shapes", choices=["v0.1", "small", "both"], default="both")
    parser.add_argument("--runs", type=int, default=100, help="timed runs per variant (median; default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs before timing (default 10)")
    parser.add_argument("--sets", type=int, default=5, help="fresh input sets for the correctness check (default 5)")
    parser.add_argument("--overhead-calls", type=int, default=10000, help="calls for the host overhead (10000)")
    parser.add_argument("--max-seconds", type=float, default=20.0,
                        help="cap on one variant's timed runs; slower variants get fewer runs, shown in the report")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 20 runs, 2 input sets, 1000 overhead calls; writes <gpu>-quick.*")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-frontends", action="store_true",
                        help="skip the PyTorch frontends' columns (fusegen.from_module and backend=\"fusegen\")")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    parser.add_argument("--commit", help="fusegen commit to record (default: git rev-parse of this checkout)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    groups = {"seeds": list(CHAINS), "conv": kc.numbers(), "all": list(CHAINS) + kc.numbers()}
    chains = []
    for c in (c.strip() for c in args.chains.split(",") if c.strip()):
        chains += [k for k in groups.get(c, [c]) if k not in chains]
    args.chains = chains
    unknown = [c for c in args.chains if c not in CHAINS and c not in kc.CHAINS]
    if unknown:
        parser.error("unknown chains %s (expected seeds %s, conv chains %s, or seeds/conv/all)" % (
            unknown, ",".join(CHAINS), ",".join(kc.numbers())))
    if args.quick:
        args.runs, args.sets, args.overhead_calls = min(args.runs, 20), min(args.sets, 2), min(args.overhead_calls,
                                                                                                1000)
    if args.runs < 1 or args.sets < 1 or args.warmup < 0:
        parser.error("--runs and --sets must be at least 1, --warmup at least 0")
    return args


def main():
    args = parse_args()
    why_not = import_everything()
    if why_not:
        log("kernelbench: skipped: %s (this harness needs PyTorch with a CUDA GPU)" % why_not)
        return 0
    if library_error(fusegen, "kernelbench"):
        return 1
    import kernelbench_models as km

    pytorch_in_fp32(torch)
    begin = time.perf_counter()
    info = environment(args)
    log("fusegen %s (%s) on %s, driver %s; torch %s, CUDA %s, triton %s" % (
        info["fusegen"], info["library"], info["gpu"], info["driver"], info["torch"], info["cuda"], info["triton"]))
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    cache_dir = tempfile.mkdtemp(prefix="fusegen-bench-cache-")  # empty: cold compiles are cold
    overhead = None
    rows = []
    with torch.no_grad():
        log("== host overhead (also loads NVRTC before the cold compile times)")
        try:
            overhead = measure_overhead(args.overhead_calls, cache_dir)
        except Exception as e:  # noqa: BLE001
            log("  FAIL: %s" % one_line(e))
        shape_sets = ["v0.1", "small"] if args.shapes == "both" else [args.shapes]
        for shapes in shape_sets:
            for key in args.chains:
                try:
                    chain = make_chain(km, shapes, key)
                except Exception as e:  # noqa: BLE001 - recorded as FAIL, the run goes on
                    rows.append(dict(new_row(shapes, key, key), errors=[one_line(e)]))
                    log("  FAIL: chain %s: %s" % (key, one_line(e)))
                    continue
                row = new_row(shapes, key, chain.name)
                log("== %s %s (%.0f s so far)" % (shapes, row["name"], time.perf_counter() - begin))
                run_recorded(row, lambda: run_chain(args, chain, flush, cache_dir, row))
                rows.append(row)
                torch.cuda.empty_cache()
    seconds = time.perf_counter() - begin
    text = report(info, rows, overhead, args, seconds)
    print("\n" + text)
    os.makedirs(args.out_dir, exist_ok=True)
    # A run with conv chains writes <gpu>-conv.*, leaving the seed chains' <gpu>.* as they are.
    conv = any(c not in CHAINS for c in args.chains)
    base = os.path.join(args.out_dir, slug(info["gpu"]) + ("-conv" if conv else "") + ("-quick" if args.quick else ""))
    with open(base + ".md", "w") as f:
        f.write(text)
    with open(base + ".json", "w") as f:
        json.dump({"environment": info, "settings": {k: v for k, v in vars(args).items() if k != "out_dir"},
                   "seconds": seconds, "chains": rows, "host_overhead": overhead}, f, indent=1)
    log("wrote %s.md and %s.json" % (base, base))
    return 0 if all(verdict(r) == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
