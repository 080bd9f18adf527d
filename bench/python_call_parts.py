"""The Python call path's host cost taken apart (bench/NOTES.md, "Where it
stands"): one eager torch.add, torch.empty and torch.empty_like for scale, the attribute reads
the call makes on three torch tensors (and one at a time), an empty Python
call with the same keywords, torch's raw stream getter, the ctypes
call of fusegen_function_call (with the driver's launch), the launch floor
(launch_floor.py: a C function that only launches an empty kernel, on torch's
stream and on a stream of its own; and one that only calls
fusegen_function_call, or the bound call's launch, with ready arrays), and whole calls of
the tiny fusion `y = a + b` on [1, 16] with and without pointer checks and
out=. All are timed together by kernelbench.py's host_overheads: median and
min per call over batches of 64 calls begun on an idle GPU, the cases taken in
turn (the host's cost), and the mean of 20,000 back-to-back calls (where
launches may wait for the GPU); two rounds.
Needs a GPU and the installed package:

    PYTHONPATH=<where fusegen is installed> python3 bench/python_call_parts.py
"""

import ctypes

import torch

import fusegen
from fusegen import _tensors
import launch_floor
from kernelbench import host_overheads

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
            _ = isinstance(t, tensor_type) and t.dtype is f32 and t.is_cuda and t.get_device() == 0 \
                and t.is_contiguous()
            _ = t.shape, t.data_ptr()

    def ctypes_call():
        plain._c_call(plain._handle, plan.args, 2, plan.outs, 1, ctypes.c_void_p(raw_stream(0)))

    def noop_kwargs(out=None, **tensors):  # the Python frame that f(a=a, b=b, out=...) enters
        return tensors

    cases = dict([
        ("torch.add", lambda: torch.add(a, b)),
        ("torch.empty", lambda: torch.empty((1, 16), dtype=f32, device="cuda:0")),
        ("torch.empty_like", lambda: torch.empty_like(y)),
        ("attribute reads of 3 tensors", attribute_reads),
        ("t.dtype", lambda: a.dtype),
        ("t.is_cuda", lambda: a.is_cuda),
        ("t.get_device()", lambda: a.get_device()),
        ("t.is_contiguous()", lambda: a.is_contiguous()),
        ("t.data_ptr()", lambda: a.data_ptr()),
        ("t.shape", lambda: a.shape),
        ("Python call noop(a=a, b=b, out={...})", lambda: noop_kwargs(a=a, b=b, out={"y": y})),
        ("raw stream", lambda: raw_stream(0)),
        ("ctypes call with launch, no checks", ctypes_call),
        ("f(out=), no pointer checks", lambda: plain(a=a, b=b, out={"y": y})),
        ("f.call(dict, out=), no pointer checks", lambda: plain.call({"a": a, "b": b}, {"y": y})),
        ("f(out=), pointer checks", lambda: checked(a=a, b=b, out={"y": y})),
        ("f(), no pointer checks", lambda: plain(a=a, b=b)),
        ("f(), pointer checks", lambda: checked(a=a, b=b)),
    ])
    floor = launch_floor.load()
    if floor:
        stream, own_stream = raw_stream(0), torch.cuda.Stream()
        cases["launch floor"] = lambda: floor.launch(stream)
        cases["launch floor, stream read each call"] = lambda: floor.launch(raw_stream(0))
        cases["launch floor, a created stream"] = lambda: floor.launch(own_stream.cuda_stream)
        call_address = ctypes.cast(plain._c_call, ctypes.c_void_p).value
        arrays = plan.fast[0], plan.fast[1]  # the data pointers of the first call are in them
        cases["function_call from C, no checks"] = lambda: floor.call(call_address, plain._handle.value, arrays[0], 2,
                                                                      arrays[1], 1, stream)
        plain(a=a, b=b, out={"y": y})  # the C call path's second call of the plan binds it
        if plan.bound is not None:
            get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
            get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
            bound = get_pointer(plan.bound, b"fusegen.bound_call")
            launch = ctypes.cast(plain._lib.fusegen_bound_call_launch, ctypes.c_void_p).value
            data = (ctypes.c_void_p * 2)(a.data_ptr(), b.data_ptr())
            out_data = (ctypes.c_void_p * 1)(y.data_ptr())
            cases["bound_call_launch from C, no checks"] = lambda: floor.call(
                launch, bound, ctypes.addressof(data), ctypes.addressof(out_data), stream)
    run = getattr(plain, "_fast_run", None)  # the C call path's entry, where there is one
    if run:
        tensors, outs = {"a": a, "b": b}, {"y": y}
        cases["C path run(dict, dict) alone"] = lambda: run(tensors, outs)
    print("%-40s %s" % ("per call, us", "batches median / min, back to back"))
    for _ in range(2):
        for name, timing in host_overheads(cases, 20000, torch.cuda.synchronize).items():
            print("%-40s %6.2f / %6.2f  %6.2f" % ((name,) + timing))


if __name__ == "__main__":
    main()
