"""The Python call path's host cost taken apart (bench/NOTES.md, "Where it
stands"): one eager torch.add, torch.empty and torch.empty_like for scale, the attribute reads
the call makes on three torch tensors, torch's raw stream getter, the ctypes
call of fusegen_function_call (with the driver's launch), and whole calls of
the tiny fusion `y = a + b` on [1, 16] with and without pointer checks and
out=. Each: mean host wall time of 20,000 back-to-back calls after 2,000
warm-up calls; two rounds. Needs a GPU and the installed package:

    PYTHONPATH=<where fusegen is installed> python3 bench/python_call_parts.py
"""

import ctypes
import time

import torch

import fusegen
from fusegen import _tensors

TINY_SPEC = "fusion tiny {\n  input a : f32[N, 16]\n  input b : f32[N, 16]\n  output y = a + b\n}\n"


def main():
    a = torch.rand(1, 16, device="cuda")
    b = torch.rand(1, 16, device="cuda")
    y = torch.empty(1, 16, device="cuda")
    plain = fusegen.Runtime(check_pointers=False).load_string(TINY_SPEC, name="tiny.fg").function()
    checked = fusegen.Runtime(check_pointers=True).load_string(TINY_SPEC, name="tiny.fg").function()
    plain(a=a, b=b, out={"y": y})
    torch.cuda.synchronize()
    tensor_type, f32, raw_stream = torch.Tensor, torch.float32, _tensors.raw_stream
    plan = plain._plans[(a.shape, b.shape)]  # built by the call above

    def attribute_reads():
        for t in (a, b, y):
            _ = isinstance(t, tensor_type) and t.dtype is f32 and t.get_device() == 0 and t.is_contiguous()
            _ = t.shape, t.data_ptr()

    def ctypes_call():
        plain._c_call(plain._handle, plan.args, 2, plan.outs, 1, ctypes.c_void_p(raw_stream(0)))

    cases = [
        ("torch.add", lambda: torch.add(a, b)),
        ("torch.empty", lambda: torch.empty((1, 16), dtype=f32, device="cuda:0")),
        ("torch.empty_like", lambda: torch.empty_like(y)),
        ("attribute reads of 3 tensors", attribute_reads),
        ("raw stream", lambda: raw_stream(0)),
        ("ctypes call with launch, no checks", ctypes_call),
        ("f(out=), no pointer checks", lambda: plain(a=a, b=b, out={"y": y})),
        ("f(out=), pointer checks", lambda: checked(a=a, b=b, out={"y": y})),
        ("f(), no pointer checks", lambda: plain(a=a, b=b)),
        ("f(), pointer checks", lambda: checked(a=a, b=b)),
    ]
    for _ in range(2):
        for name, fn in cases:
            for _ in range(2000):
                fn()
            torch.cuda.synchronize()
            calls = 20000
            begin = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            elapsed = time.perf_counter_ns() - begin
            torch.cuda.synchronize()
            print("%-36s %.2f us" % (name, elapsed / calls / 1e3))


if __name__ == "__main__":
    main()
