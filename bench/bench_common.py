"""Helpers shared by the GPU benchmarks bench/kernelbench.py and bench/sweep.py.

Only the standard library at import time: torch and fusegen are imported by
import_torch_and_fusegen() (so that --help works anywhere), and the helpers
that use them import them again inside (the modules already loaded).
"""

import datetime
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOLERANCE = {"strict": 1e-4, "tf32": 1e-2}  # allclose atol=rtol against PyTorch fp32 (TF32 off)
L2_FLUSH_BYTES = 256 << 20  # written before each timed run: well over twice any L2 (H100: 50 MB)
MIN_RUNS = 10               # the fewest timed runs when --max-seconds caps a slow variant


def log(message):
    print(message, flush=True)


def one_line(error):
    text = str(error).strip() or type(error).__name__
    lines = text.splitlines()
    return lines[0] + (" (...)" if len(lines) > 1 else "")


def import_torch_and_fusegen():
    """(why not, torch, fusegen): why not is None when torch sees a CUDA GPU and
    fusegen imported (the installed package, else python/ of this checkout, which
    finds its library through FUSEGEN_LIBRARY); otherwise the reason for a skip."""
    try:
        import torch
    except ImportError:
        return "torch is not installed", None, None
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch", None, None
    try:
        import fusegen
    except ImportError:  # not installed: the checkout's package (with FUSEGEN_LIBRARY)
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import fusegen
    return None, torch, fusegen


# ---------------------------------------------------------------------------
# Measuring


def run_recorded(row, run):
    """Calls run(); an exception becomes one line in row["errors"] (a FAIL row) and the run goes on."""
    try:
        run()
    except Exception as e:  # noqa: BLE001 - recorded as FAIL, the run goes on
        row["errors"].append(one_line(e))
        log("  FAIL: %s" % one_line(e))
        traceback.print_exc()


def library_error(fusegen, tool):
    """None when fusegen's library loads; else says why as `tool` and returns the exit status (1)."""
    try:
        fusegen.library_path()
    except fusegen.Error as e:
        log("%s: error: %s" % (tool, e))
        return 1
    return None


def pytorch_in_fp32(torch):
    """PyTorch in full fp32 (TF32 off), as fusegen strict."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def time_gpu(fn, runs, warmup, flush, max_seconds):
    """(median ms, runs) of fn() with CUDA events on the current stream, L2 flushed before each run.

    A variant slower than max_seconds for all its runs gets fewer (at least
    MIN_RUNS): the table shows the count, so that a slow kernel cannot stretch
    the run past its time budget unnoticed."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = time.perf_counter() - start
    if one * runs > max_seconds:
        runs = max(MIN_RUNS, int(max_seconds / max(one, 1e-9)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)), runs


# ---------------------------------------------------------------------------
# A fusion next to its PyTorch module


class Chain:
    """One fusion at one shape: its spec (and fusion name, None for the file's
    only one), batch, module and inputs, and where each spec argument lives in
    the module (names: {spec name: dotted attribute}; state: those updated in
    place)."""

    def __init__(self, key, name, spec, n, make_model, make_inputs, names, state, fusion=None):
        self.key, self.name, self.spec, self.n = key, name, spec, n
        self.make_model, self.make_inputs, self.names, self.state = make_model, make_inputs, names, state
        self.fusion = fusion


def check_precision(row, precision, model, f, chain, sets, key=None):
    """Cold first call, then `sets` fresh input sets against the module; returns the last arguments.

    Fills row["cold_ms"], row["max_error"] and row["passed"] under `key` (default: `precision`; e.g.
    "strict_tuned" for autotuned kernels) with allclose at TOLERANCE[precision] on the output and every
    state tensor."""
    key = key or precision
    import fusegen
    import torch
    state = chain.state
    tolerance = TOLERANCE[precision]
    worst = 0.0
    passed = True
    for i in range(sets):
        inputs = chain.make_inputs()
        arguments = fusegen.module_arguments(model, chain.names, function=f, **inputs)
        # Train-mode batch norm updates the running stats on every call: fusegen
        # updates the module's buffers in place; keep its result, put the state
        # back, and let PyTorch make its own update from the same state.
        before = {name: arguments[name].clone() for name in state}
        torch.cuda.synchronize()
        start = time.perf_counter()
        y = f(**arguments)
        torch.cuda.synchronize()
        if i == 0:
            row["cold_ms"][key] = (time.perf_counter() - start) * 1e3
        ours = {"y": y}
        ours.update({name: arguments[name].clone() for name in state})
        for name in state:
            arguments[name].copy_(before[name])
        expected = {"y": model(*inputs.values())}
        expected.update({name: arguments[name] for name in state})
        for name, value in ours.items():
            if tuple(value.shape) != tuple(expected[name].shape):
                raise RuntimeError("%s: shape %s, PyTorch gives %s" % (name, list(value.shape),
                                                                        list(expected[name].shape)))
            worst = max(worst, (value - expected[name]).abs().max().item())
            passed = passed and torch.allclose(value, expected[name], atol=tolerance, rtol=tolerance)
    row["max_error"][key] = worst
    row["passed"][key] = passed
    return arguments


# ---------------------------------------------------------------------------
# Reports


def environment(commit=None):
    """The GPU, driver, versions, commit, date and command line of this run."""
    import fusegen
    import torch
    info = {"gpu": torch.cuda.get_device_name(0), "driver": "unknown", "cuda": torch.version.cuda,
            "torch": torch.__version__, "triton": "not installed", "python": platform.python_version(),
            "fusegen": fusegen.library_version(), "library": fusegen.library_path(),
            "commit": commit or git_commit(), "date": datetime.date.today().isoformat(),
            "command": "python3 " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT)] +
                                               sys.argv[1:])}
    major, minor = torch.cuda.get_device_capability(0)
    info["arch"] = "sm_%d%d" % (major, minor)
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError:
        pass
    try:
        out = subprocess.check_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
                                      universal_newlines=True, timeout=30)
        info["driver"] = out.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def git_commit():
    try:
        return subprocess.check_output(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], universal_newlines=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (pass --commit)"


def ms(value):
    return "-" if value is None else ("%.4f" % value if value < 10 else "%.2f" % value)


def err(value):
    return "-" if value is None else "%.2e" % value


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"
