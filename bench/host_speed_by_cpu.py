"""Does the host's speed depend on the CPU that runs a call? (bench/NOTES.md,
"The host's two speeds"). Pins the process to each allowed CPU in turn and
times torch.add and fusegen's `f(a=a, b=b, out={'y': y})` on [1, 16] there:
medians of 40 batches of 64 calls, each batch begun on an idle GPU, the two
cases taken in turn; two rounds, then six rounds unpinned. Prints the GPU's
local CPU list where sysfs has it. Needs a GPU and the installed package:

    PYTHONPATH=<where fusegen is installed> python3 bench/host_speed_by_cpu.py
"""

import os
import statistics
import subprocess
import tempfile
import time

import torch

import fusegen

TINY_SPEC = "fusion tiny_add {\n  input a : f32[1, 16]\n  input b : f32[1, 16]\n  output y = a + b\n}\n"
BATCHES = 40
BATCH = 64


def gpu_local_cpus():
    """The GPU's local CPU list and NUMA node from sysfs, or None."""
    bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()
    if not bus:
        return None
    domain, rest = bus[0].lower().split(":", 1)
    device = "%04x:%s" % (int(domain, 16) & 0xFFFF, rest)  # nvidia-smi prints an 8-digit domain
    path = "/sys/bus/pci/devices/" + device
    if not os.path.exists(path + "/local_cpulist"):
        return None
    with open(path + "/local_cpulist") as cpus, open(path + "/numa_node") as node:
        return "%s: CPUs %s, NUMA node %s" % (device, cpus.read().strip(), node.read().strip())


def medians(cases):
    """{name: median us per call} over BATCHES batches of BATCH calls."""
    for fn in cases.values():
        for _ in range(200):
            fn()
    per_call = {name: [] for name in cases}
    for _ in range(BATCHES):
        for name, fn in cases.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(BATCH):
                fn()
            per_call[name].append((time.perf_counter_ns() - t0) / BATCH / 1e3)
    return {name: statistics.median(times) for name, times in per_call.items()}


def main():
    a = torch.rand(1, 16, device="cuda")
    b = torch.rand(1, 16, device="cuda")
    y = torch.empty(1, 16, device="cuda")
    with tempfile.TemporaryDirectory() as cache_dir:
        f = fusegen.Runtime(cache_dir=cache_dir, check_pointers=False).load_string(TINY_SPEC,
                                                                                   name="tiny.fg").function()
        cases = {"torch.add": lambda: torch.add(a, b), "out=": lambda: f(a=a, b=b, out={"y": y})}
        print("GPU:", gpu_local_cpus() or "no local CPU list in sysfs")
        allowed = sorted(os.sched_getaffinity(0))
        for round_ in range(2):
            for cpu in allowed:
                os.sched_setaffinity(0, {cpu})
                m = medians(cases)
                print("round %d CPU %2d: torch.add %.2f us, out= %.2f us (%.2fx)" %
                      (round_, cpu, m["torch.add"], m["out="], m["out="] / m["torch.add"]), flush=True)
        os.sched_setaffinity(0, set(allowed))
        for _ in range(6):
            m = medians(cases)
            print("unpinned: torch.add %.2f us, out= %.2f us" % (m["torch.add"], m["out="]), flush=True)


if __name__ == "__main__":
    main()
