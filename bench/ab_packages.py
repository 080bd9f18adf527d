"""The Python call's host cost of two builds of the package, A/B in one
process (bench/NOTES.md v24): each build's `fusegen` folder copied under a
folder of its own name, e.g.

    mkdir /tmp/ab && cp -r <build A>/fusegen /tmp/ab/fusegen_a && cp -r <build B>/fusegen /tmp/ab/fusegen_b
    python3 bench/ab_packages.py /tmp/ab fusegen_a fusegen_b

Both load side by side (the package imports itself relatively). For each:
`f(a=a, b=b, out={'y': y})` and `f(a=a, b=b)` on the tiny fusion `y = a + b`
at [1, 16], with and without pointer checks, next to torch.add and the
launch floor (launch_floor.py), timed
together by kernelbench.py's host_overheads (batches begun on an idle GPU,
the cases taken in turn, so the host's drift moves them alike); three rounds.
Needs a GPU.
"""
import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch_floor  # noqa: E402
from kernelbench import host_overheads  # noqa: E402

SPEC = "fusion tiny {\n  input a : f32[N, 16]\n  input b : f32[N, 16]\n  output y = a + b\n}\n"


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: ab_packages.py FOLDER PACKAGE [PACKAGE ...]")
    sys.path.insert(0, sys.argv[1])
    a = torch.rand(1, 16, device="cuda")
    b = torch.rand(1, 16, device="cuda")
    y = torch.empty(1, 16, device="cuda")
    cases = {"torch.add": lambda: torch.add(a, b)}
    floor = launch_floor.load()  # the host's own launch cost, beside the packages'
    if floor:
        stream = torch.cuda.current_stream().cuda_stream
        cases["launch floor"] = lambda: floor.launch(stream)
    for name in sys.argv[2:]:
        package = importlib.import_module(name)
        plain = package.Runtime(check_pointers=False).load_string(SPEC, name="tiny.fg").function()
        checked = package.Runtime(check_pointers=True).load_string(SPEC, name="tiny.fg").function()
        for f in (plain, checked):  # the plans, and the results checked once
            f(a=a, b=b, out={"y": y})
            if not torch.equal(f(a=a, b=b), a + b):
                sys.exit("%s: wrong result" % name)
        cases[name + " f(out=), no checks"] = lambda f=plain: f(a=a, b=b, out={"y": y})
        cases[name + " f(out=), checks"] = lambda f=checked: f(a=a, b=b, out={"y": y})
        cases[name + " f(), no checks"] = lambda f=plain: f(a=a, b=b)
        cases[name + " f(), checks"] = lambda f=checked: f(a=a, b=b)
    print("%-40s %s" % ("per call, us", "batches median / min, back to back"))
    for round_ in range(3):
        print("round %d" % (round_ + 1))
        for case, timing in host_overheads(cases, 20000, torch.cuda.synchronize).items():
            print("%-40s %6.2f / %6.2f  %6.2f" % ((case,) + timing))


if __name__ == "__main__":
    main()
