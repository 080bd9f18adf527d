"""Quick timing used while iterating on kernels (bench/NOTES.md, "quick"):
fusegen strict and tf32 against PyTorch eager on the four seed chains, CUDA
events, a 256 MB L2 flush before each run, median of 30 runs after 3 warm-up
calls, max abs error against the fp32 module (TF32 off) on one input set.
bench/kernelbench.py is the full harness; this is the 1-minute version.

    FUSEGEN_LIBRARY=build/runtime/libfusegen.so python3 bench/quick_timing.py [v0.1,small] [62,75,39,85]
"""
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import fusegen  # noqa: E402
import kernelbench_models as km  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


def median_ms(fn, runs=30):
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    shape_sets = sys.argv[1].split(",") if len(sys.argv) > 1 else ["v0.1", "small"]
    chains = sys.argv[2].split(",") if len(sys.argv) > 2 else ["62", "75", "39", "85"]
    runtimes = {p: fusegen.Runtime(precision=p) for p in ("strict", "tf32")}
    for shapes in shape_sets:
        for chain in chains:
            n, make, x_shape = km.CONFIGS[shapes][chain]
            torch.manual_seed(0)
            model = make().cuda()
            spec = km.spec_path(shapes, chain)
            x = torch.rand((n,) + x_shape, device="cuda")
            row = [shapes, chain]
            try:
                with torch.no_grad():
                    ref = model(x)
                    for precision, runtime in runtimes.items():
                        f = runtime.load(spec).function()
                        args = {k: v.detach().clone()
                                for k, v in fusegen.module_arguments(model, km.ARGUMENTS[chain]).items()}
                        start = time.time()
                        y = f(x=x, **args)
                        torch.cuda.synchronize()
                        first = time.time() - start
                        err = (y.reshape(ref.shape) - ref).abs().max().item()
                        ms = median_ms(lambda: f(x=x, **args))
                        row.append("%s: %.3f ms err %.2e first %.2fs" % (precision, ms, err, first))
                    row.append("eager %.3f ms" % median_ms(lambda: model(x)))
            except Exception as e:  # noqa: BLE001 - a failing chain is reported, the rest still run
                row.append("FAIL " + str(e)[:300])
            print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
