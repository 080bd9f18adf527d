"""Per-kernel GPU times of eager PyTorch and fusegen on the seed chains
(bench/NOTES.md, "profiler"): torch.profiler (CUPTI, which also sees the
runtime's driver-API launches), the 256 MB L2 flush before each call, 10
calls after 3 warm-up calls. Per chain and precision: the median span of a
call (first kernel start to last kernel end, launch gaps between its kernels
included, host time before the first excluded), the median gap between
kernels (negative when dependent launches overlap), and each kernel's median
time. With dependent launches a kernel starts before the one before it ends
and waits on the GPU, so its time includes that wait: read the span.

    FUSEGEN_LIBRARY=build/runtime/libfusegen.so python3 bench/kernel_profile.py [small|v0.1] [62,75,39,85] [strict,tf32]
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
import fusegen  # noqa: E402
import kernelbench_models as km  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
FLUSH_BYTES = 256 << 20


def calls_of(events):
    """Kernel events split into calls: each call follows a flush (a fill of 60 us or more)."""
    calls, current = [], None
    for e in sorted(events, key=lambda e: e.time_range.start):
        if e.time_range.elapsed_us() > 60 and "fill" in e.name.lower():
            if current:
                calls.append(current)
            current = []
        elif current is not None:
            current.append(e)
    if current:
        calls.append(current)
    return [c for c in calls if c]


def report(label, fn, flush, iters=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    calls = calls_of(kernels)
    spans = [c[-1].time_range.end - c[0].time_range.start for c in calls]
    gaps = [b.time_range.start - a.time_range.end for c in calls for a, b in zip(c, c[1:])]
    print("%s: span median %.1f us over %d calls, %d kernels/call, gaps median %.1f us" % (
        label, statistics.median(spans) if spans else -1, len(calls), len(calls[0]) if calls else 0,
        statistics.median(gaps) if gaps else 0))
    per_kernel = {}
    for c in calls:
        for i, e in enumerate(c):
            per_kernel.setdefault((i, e.name[:70]), []).append(e.time_range.elapsed_us())
    for (i, name), times in sorted(per_kernel.items()):
        print("   k%d %-70s %.1f us" % (i, name, statistics.median(times)))


def main():
    shapes = sys.argv[1] if len(sys.argv) > 1 else "small"
    chains = sys.argv[2].split(",") if len(sys.argv) > 2 else ["62", "75", "39", "85"]
    precisions = sys.argv[3].split(",") if len(sys.argv) > 3 else ["strict", "tf32"]
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    runtimes = {p: fusegen.Runtime(precision=p) for p in precisions}
    for chain in chains:
        n, make, x_shape = km.CONFIGS[shapes][chain]
        torch.manual_seed(0)
        model = make().cuda()
        spec = km.spec_path(shapes, chain)
        x = torch.rand((n,) + x_shape, device="cuda")
        with torch.no_grad():
            report("%s %s eager" % (shapes, chain), lambda: model(x), flush)
            for precision, runtime in runtimes.items():
                f = runtime.load(spec).function()
                args = {k: v.detach().clone() for k, v in fusegen.module_arguments(model, km.ARGUMENTS[chain]).items()}
                report("%s %s %s" % (shapes, chain, precision), lambda: f(x=x, **args), flush)


if __name__ == "__main__":
    main()
