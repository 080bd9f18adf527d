"""The PyTorch frontends' columns of bench/kernelbench.py: each chain's own module
through fusegen.from_module(model, inputs) and through
torch.compile(model, backend="fusegen"), timed as the other systems and
checked against eager PyTorch on the same kind of fresh input sets.

Only the standard library at import time (the harness's --help works
anywhere); torch and fusegen are passed in. Without a GPU the functions run
too (bench/test_kernelbench.py runs them on CPU tensors, with a timer that
needs no CUDA): from_module then refuses or fails to call, and the backend
falls back to eager PyTorch, which is what those tests check.

row["frontends"][name] holds, per frontend ("from_module", "backend"):
  ms, runs: the median time per call and the runs timed (None when it did not run);
  warmup_s: the first call's wall time (the capture, mapping, fusegen's JIT;
    torch.compile's tracing for the backend);
  max_error, passed: the largest abs difference from eager PyTorch over the
    outputs and every floating-point buffer (running statistics), and allclose
    at TOLERANCE (integer buffers such as num_batches_tracked must be equal);
  fusions: the backend's fusegen ops in its last graph (None for from_module);
  refused: from_module's UnsupportedModuleError, the reason fusegen cannot map
    the module (a refusal is not a failure);
  error: any other failure, one line (a failure: the chain's verdict is FAIL).
"""

import copy
import time

FRONTENDS = ("from_module", "backend")
TOLERANCE = 1e-4  # strict fp32, as the hand-written spec's strict column
_PREFIXES = ("fusegen: from_module: ", "fusegen: torch.compile backend: ", "fusegen: ")


def one_line(error):
    text = str(error).strip() or type(error).__name__
    lines = text.splitlines()
    return lines[0] + (" (...)" if len(lines) > 1 else "")


def reason(error):
    """A refusal's message without fusegen's prefixes, on one line."""
    text = one_line(error)
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def new_result():
    return {"ms": None, "runs": None, "warmup_s": None, "max_error": None, "passed": None, "fusions": None,
            "refused": None, "error": None}


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _flat(item)]
    return [value]


def snapshot(model):
    """{name: clone} of the module's buffers (running statistics, num_batches_tracked)."""
    return {name: b.detach().clone() for name, b in model.named_buffers()}


def restore(model, saved):
    buffers = dict(model.named_buffers())
    for name, value in saved.items():
        buffers[name].copy_(value)


def compare(torch, got, want):
    """(max abs error, passed) of two lists of tensors; floats with allclose at TOLERANCE,
    others exactly; a shape or count mismatch raises."""
    if len(got) != len(want):
        raise RuntimeError("%d results, PyTorch gives %d" % (len(got), len(want)))
    worst, passed = 0.0, True
    for i, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(w.shape):
            raise RuntimeError("result %d: shape %s, PyTorch gives %s" % (i, list(g.shape), list(w.shape)))
        g = g.to(w.device)
        if w.dtype.is_floating_point:
            if g.numel():
                worst = max(worst, (g.float() - w.float()).abs().max().item())
            passed = passed and bool(torch.allclose(g, w, atol=TOLERANCE, rtol=TOLERANCE))
        else:
            passed = passed and bool(torch.equal(g, w))
    return worst, passed


def check(torch, run, model, make_inputs, sets, synchronize):
    """`sets` fresh input sets: run(*inputs) against model(*inputs), the outputs and every
    buffer. Train-mode batch norms update the running statistics on every call: the
    buffers after `run` are kept, put back as they were, and eager PyTorch makes its own
    update from the same state (as bench_common.check_precision does for the spec)."""
    worst, passed = 0.0, True
    for _ in range(sets):
        inputs = list(make_inputs().values())
        before = snapshot(model)
        ours = [t.detach().clone() for t in _flat(run(*inputs))]
        synchronize()
        ours += [b.clone() for b in snapshot(model).values()]
        restore(model, before)
        expected = [t.detach() for t in _flat(model(*inputs))] + list(snapshot(model).values())
        error, ok = compare(torch, ours, expected)
        worst, passed = max(worst, error), passed and ok
    return worst, passed


def fusegen_ops(graph_module):
    return [n for n in graph_module.graph.nodes if n.op == "call_function" and str(n.target).startswith("fusegen.")]


def run_from_module(fusegen, torch, model, x, make_inputs, sets, time_fn, synchronize, log=print):
    result = new_result()
    try:
        start = time.perf_counter()
        fusion = fusegen.from_module(model, tuple(x))
        before = snapshot(model)  # the first call updates running statistics: not part of the check
        fusion(*x)
        synchronize()
        result["warmup_s"] = time.perf_counter() - start
        restore(model, before)
        result["max_error"], result["passed"] = check(torch, fusion, model, make_inputs, sets, synchronize)
        result["ms"], result["runs"] = time_fn(lambda: fusion(*x))
        log("  from_module %.4f ms (first call %.1f s), max error %.3g, %s" % (
            result["ms"], result["warmup_s"], result["max_error"], "ok" if result["passed"] else "MISMATCH"))
    except fusegen.UnsupportedModuleError as e:
        result["refused"] = reason(e)
        log("  from_module: refused: %s" % result["refused"])
    except Exception as e:  # noqa: BLE001 - reported in the row, the run goes on
        result["error"] = one_line(e)
        log("  from_module: FAIL: %s" % result["error"])
    return result


def run_backend(fusegen, torch, model, x, make_inputs, sets, time_fn, synchronize, log=print):
    result = new_result()
    try:
        import fusegen.dynamo as dynamo  # registers backend="fusegen"
        torch._dynamo.reset()  # as in a fresh process: no shapes learnt from another chain
        compiled = torch.compile(model, backend="fusegen")
        before = snapshot(model)
        seen = list(dynamo.compiled_graphs)  # it keeps the last 16 graphs: compare by identity
        start = time.perf_counter()
        compiled(*x)
        synchronize()
        result["warmup_s"] = time.perf_counter() - start
        restore(model, before)
        graphs = [g for g in dynamo.compiled_graphs if not any(g is s for s in seen)]
        result["fusions"] = len(fusegen_ops(graphs[-1])) if graphs else 0
        result["max_error"], result["passed"] = check(torch, compiled, model, make_inputs, sets, synchronize)
        result["ms"], result["runs"] = time_fn(lambda: compiled(*x))
        log("  backend=\"fusegen\" %.4f ms (compiling took %.1f s, %d fusions), max error %.3g, %s" % (
            result["ms"], result["warmup_s"], result["fusions"], result["max_error"],
            "ok" if result["passed"] else "MISMATCH"))
    except Exception as e:  # noqa: BLE001 - reported in the row, the run goes on
        result["error"] = one_line(e)
        log("  backend=\"fusegen\": FAIL: %s" % result["error"])
    finally:
        compiled = None
        torch._dynamo.reset()
    return result


def run_frontends(fusegen, torch, model, x, make_inputs, sets, time_fn, synchronize, log=print):
    """{"from_module": result, "backend": result} for the chain's module (see the module's
    docstring); each on its own copy of the module, so that the other columns' module
    keeps its state."""
    results = {}
    for name, run in (("from_module", run_from_module), ("backend", run_backend)):
        own = copy.deepcopy(model)
        results[name] = run(fusegen, torch, own, x, make_inputs, sets, time_fn, synchronize, log)
    return results


def failures(row):
    """Messages of the frontends that failed or mismatched (refusals are not failures)."""
    out = []
    for name, result in sorted((row.get("frontends") or {}).items()):
        if result.get("error"):
            out.append("%s: %s" % (name, result["error"]))
        elif result.get("passed") is False:
            out.append("%s: mismatch (max error %.3g)" % (name, result["max_error"]))
    return out


def time_cell(result, ms):
    """The table's time cell: the time, 'refused: <reason>', 'FAIL: <error>' or '-'."""
    if result is None:
        return "-"
    if result.get("refused"):
        return "refused: " + result["refused"]
    if result.get("error"):
        return "FAIL: " + result["error"]
    return ms(result.get("ms"))


def check_cell(result, err):
    """The table's correctness cell: 'ok <max error>' or 'MISMATCH <max error>' (with the
    backend's fusions), '-' when it did not run."""
    if result is None or result.get("passed") is None:
        return "-"
    text = "%s %s" % ("ok" if result["passed"] else "MISMATCH", err(result.get("max_error")))
    if result.get("fusions") is not None:
        text += " (%d fusion%s)" % (result["fusions"], "" if result["fusions"] == 1 else "s")
    return text


HEADERS = ["from_module ms", "backend ms", "from_module vs eager", "backend vs eager", "from_module check",
           "backend check"]


def cells(row, ms, err, ratio):
    """The frontends' cells of the main table for one row (HEADERS order)."""
    frontends = row.get("frontends")
    if frontends is None:
        return ["-"] * len(HEADERS)
    fm, be = frontends.get("from_module"), frontends.get("backend")
    return [time_cell(fm, ms), time_cell(be, ms), ratio(row.get("eager_ms"), (fm or {}).get("ms")),
            ratio(row.get("eager_ms"), (be or {}).get("ms")), check_cell(fm, err), check_cell(be, err)]
