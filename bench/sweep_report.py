"""The shape sweep's ceilings, rooflines and report (bench/sweep.py): the
Markdown tables, the JSON and the SVG plot, standard library only."""

import html
import json
import math

import bench_common as bc
from bench_common import ms

# ---------------------------------------------------------------------------
# The roofline's ceilings: one NVIDIA H100 80GB HBM3 (SXM), the lent GPU.
# name: (value, unit, where it comes from)
CEILINGS = {
    "memory": (2.96e12, "B/s", "device memory, measured with a device-to-device copy on the lent H100 "
               "(bench/NOTES.md, 'Ceilings and rooflines'; the datasheet says 3.35 TB/s)"),
    "fp32": (67e12, "FLOP/s", "fp32 FMA peak of the H100 SXM datasheet, an FMA counted as 2 FLOPs (a cuBLAS fp32 "
             "SIMT GEMM measured 51.5, bench/NOTES.md); fusegen strict runs 3xTF32 on tensor cores, whose "
             "ceiling is 126 TFLOP/s of fp32 work, so strict can pass 100% of this roofline"),
    "tf32": (378e12, "FLOP/s", "TF32 tensor cores, measured with a cuBLAS TF32 GEMM on the lent H100 "
             "(bench/NOTES.md; the datasheet's dense figure is 495)"),
}
SYSTEMS = ("eager", "compile", "strict", "tf32")
RATE_OF = {"eager": "fp32", "compile": "fp32", "strict": "fp32", "tf32": "tf32"}  # each system's FLOP rate
SYSTEM_LABELS = {"eager": "eager", "compile": "torch.compile", "strict": "fusegen strict", "tf32": "fusegen tf32"}

FAMILIES = {
    "swiglu": "SwiGLU feed-forward (LLaMA: d 4096, hidden 11008, no bias)",
    "mlp": "pre-norm MLP block (d 2048, hidden 8192, with bias, exact GELU, + residual)",
    "rows": "row ops: softmax, log_softmax, layer_norm over the last dim",
    "resnet": "ResNet basic block (64 channels, 3x3 convs, batch norm in training mode)",
    "kernelbench": "KernelBench level-2 seed chains (v0.1 shapes)",
}


# ---------------------------------------------------------------------------
# The roofline


def roofline(row):
    """Fills row["bound_ms"] per rate and row["fraction"] per system from bytes, FLOPs and the times."""
    if row.get("bytes") is None or row.get("flops") is None:
        return
    bytes_s = row["bytes"] / CEILINGS["memory"][0]
    row["bound_ms"] = {rate: max(bytes_s, row["flops"] / CEILINGS[rate][0]) * 1e3 for rate in ("fp32", "tf32")}
    row["fraction"] = {s: row["bound_ms"][RATE_OF[s]] / row["ms"][s] for s in SYSTEMS if row["ms"].get(s)}


def verdict(row):
    """PASS when fusegen ran and matched PyTorch in both precisions, with autotuning too where the row
    has it (a torch.compile failure is reported in the row but is not fusegen's failure)."""
    ours = [e for e in row["errors"] if not e.startswith("torch.compile")]
    checked = list(bc.TOLERANCE) + ([TUNED[p] for p in bc.TOLERANCE] if "tuning" in row else [])
    return "PASS" if not ours and all(row["passed"].get(p) for p in checked) else "FAIL"


# ---------------------------------------------------------------------------
# The heuristic against autotuning (--autotune)

TUNED = {"strict": "strict_tuned", "tf32": "tf32_tuned"}  # the autotuned system of each precision
HEURISTIC_SLOWER = 0.10  # flagged when the heuristic's kernels take more than 10% longer than the tuned ones


def heuristic_excess(row, precision):
    """How much longer the heuristic's kernels took than the autotuned ones, heuristic ms / tuned ms - 1
    (0.23: 23% slower); None where either has no time or failed its correctness check."""
    tuned = TUNED[precision]
    heuristic_ms, tuned_ms = row["ms"].get(precision), row["ms"].get(tuned)
    if not heuristic_ms or not tuned_ms or not (row["passed"].get(precision) and row["passed"].get(tuned)):
        return None
    return heuristic_ms / tuned_ms - 1


def heuristic_flags(rows):
    """[(row, precision, excess)] for every point and precision where the heuristic's kernels are more
    than HEURISTIC_SLOWER slower than the autotuned ones, in row order."""
    flags = []
    for row in rows:
        for precision in TUNED:
            excess = heuristic_excess(row, precision)
            if excess is not None and excess > HEURISTIC_SLOWER:
                flags.append((row, precision, excess))
    return flags


def flag_text(row):
    """The flag column: "strict: heuristic +23%" for each precision where it is flagged, "-" where
    neither is."""
    return "; ".join("%s: heuristic +%.0f%%" % (p, 100 * e) for r, p, e in heuristic_flags([row])) or "-"


def compact_variants(text):
    """Kernel variants ("gemm.cu: 128x128 blocks; gemm.cu: 128x128 blocks; reduce.cu") with runs of the
    same one counted: "2x gemm.cu: 128x128 blocks; reduce.cu"."""
    runs = []
    for part in (text or "").split("; "):
        if runs and runs[-1][0] == part:
            runs[-1][1] += 1
        elif part:
            runs.append([part, 1])
    return "; ".join(part if n == 1 else "%dx %s" % (n, part) for part, n in runs) or "-"


def winner(row, precision):
    tuning = (row.get("tuning") or {}).get(precision)
    return tuning["chosen"] if tuning else "-"


AUTOTUNE_METHOD = (
    "- autotuning (`--autotune`): fusegen strict and tf32 again, each in a runtime with autotuning on (the "
    "heuristic's kernels and each GEMM block forced, unsplit and at its largest split-K, in strict precision on "
    "sm_90 each also with FP16x3 products, timed by the runtime; "
    "the fastest kept), checked and timed as above. Every fusegen runtime, the heuristic's too, has a fresh "
    "cache directory, so no cached kernels (tuned ones included) are reused. Winner: `heuristic` or the forced "
    "block (`64x64:8`: split-K 8), `, fp16x3` for FP16x3 products, `(heuristic)` where the heuristic's kernels "
    "are that block's. First tuned "
    "call: tuning, compiles and the call. Flagged where the heuristic's time is more than %.0f%% above the "
    "tuned one." % (100 * HEURISTIC_SLOWER))


def tuning_table(rows):
    """A family's autotuning table: each precision's heuristic and tuned times and the tuned winner."""
    lines = ["| shape | strict ms | strict tuned ms | strict winner | tf32 ms | tf32 tuned ms | tf32 winner | "
             "first tuned call s (strict, tf32) | heuristic slower |", "|" + "---|" * 9]
    for r in rows:
        first = r.get("first_call_ms", {})
        seconds = ", ".join("-" if first.get(TUNED[p]) is None else "%.1f" % (first[TUNED[p]] / 1e3) for p in TUNED)
        lines.append(table_row([r["point"]] + [cell for p in TUNED for cell in (
            ms(r["ms"].get(p)), ms(r["ms"].get(TUNED[p])), winner(r, p))] + [seconds, flag_text(r)]))
    return lines


def table_row(cells):
    """A Markdown table row; a '|' inside a cell becomes '/' so that it cannot break the table."""
    return "| %s |" % " | ".join(str(c).replace("|", "/") for c in cells)


def heuristic_section(rows):
    """The "Heuristic against autotuning" section: every flagged point with both times and both
    variants, or "none"."""
    md = ["## Heuristic against autotuning", "",
          "Points where the heuristic's kernels took more than %.0f%% longer than the autotuned ones (both timed "
          "as above; the autotuner's own timings on scratch tensors in parentheses):" % (100 * HEURISTIC_SLOWER), ""]
    flags = heuristic_flags(rows)
    if not flags:
        return md + ["none", ""]
    md += ["| point | precision | heuristic ms | tuned ms | heuristic slower | heuristic's variant | tuned variant |",
           "|" + "---|" * 7]
    for row, precision, excess in flags:
        tuning = (row.get("tuning") or {}).get(precision) or {}

        def variant(side):
            if not tuning:
                return "-"
            text = "%s: %s" % (tuning[side], compact_variants(tuning[side + "_variants"]))
            return text + (" (%s)" % ms(tuning[side + "_ms"]) if tuning.get("timed") else "")
        same = " (the same kernels)" if tuning and tuning["chosen"] == tuning["heuristic"] else ""
        md.append(table_row(["%s %s" % (row["family"], row["point"]), precision, ms(row["ms"][precision]),
                             ms(row["ms"][TUNED[precision]]), "+%.0f%%%s" % (100 * excess, same),
                             variant("heuristic"), variant("chosen")]))
    return md + [""]


def heuristic_json(rows):
    """The flagged points for the JSON."""
    out = []
    for row, precision, excess in heuristic_flags(rows):
        tuning = (row.get("tuning") or {}).get(precision) or {}
        out.append({"family": row["family"], "point": row["point"], "precision": precision,
                    "heuristic_ms": row["ms"][precision], "tuned_ms": row["ms"][TUNED[precision]],
                    "excess": excess, "heuristic": tuning.get("heuristic"), "chosen": tuning.get("chosen"),
                    "heuristic_variants": tuning.get("heuristic_variants"),
                    "chosen_variants": tuning.get("chosen_variants")})
    return out


# ---------------------------------------------------------------------------
# Reports


def percent(value):
    if value is None:
        return "-"
    return "%.0f%%" % (100 * value) if value >= 0.095 else "%.1f%%" % (100 * value)


def launches(row):
    parts = []
    for s in SYSTEMS:
        n = row["launches"].get(s)
        text = "-" if n is None else "%g" % n
        if row["other_gpu_ops"].get(s):
            text += "+%g" % row["other_gpu_ops"][s]
        parts.append(text)
    return " / ".join(parts)


def family_table(rows):
    lines = ["| shape | eager ms | compile ms | strict ms | tf32 ms | MB | GFLOP | bound fp32 ms | bound tf32 ms | "
             "eager | compile | strict | tf32 | correct (strict, max err) | tf32 max err | kernels e/c/s/t | result |",
             "|" + "---|" * 17]
    for r in rows:
        result = verdict(r) + "".join("; " + e for e in r["errors"])
        strict_ok = r["passed"].get("strict")
        correct = "-" if strict_ok is None else "%s (%s)" % ("yes" if strict_ok else "no",
                                                             bc.err(r["max_error"].get("strict")))
        lines.append("| %s |" % " | ".join([
            r["point"], ms(r["ms"].get("eager")), ms(r["ms"].get("compile")), ms(r["ms"].get("strict")),
            ms(r["ms"].get("tf32")), "-" if r["bytes"] is None else "%.1f" % (r["bytes"] / 1e6),
            "-" if r["flops"] is None else "%.3g" % (r["flops"] / 1e9), ms(r["bound_ms"].get("fp32")),
            ms(r["bound_ms"].get("tf32"))] + [percent(r["fraction"].get(s)) for s in SYSTEMS] + [
            correct, bc.err(r["max_error"].get("tf32")), launches(r), result.replace("|", "/")]))
    return lines


def runs_note(rows, args):
    short = ["%s %s %s: %d" % (r["family"], r["point"], k, v) for r in rows for k, v in r["runs"].items()
             if v < args.runs]
    return ("Runs below %d because a variant would have exceeded --max-seconds %g: %s." % (
        args.runs, args.max_seconds, ", ".join(short))) if short else ""


def report(info, rows, args, seconds):
    md = ["# fusegen shape sweep on %s" % info["gpu"], "",
          "fusegen %s (commit %s), %s. Produced by:" % (info["fusegen"], info["commit"], info["date"]), "",
          "    " + info["command"], "",
          "- GPU: %s (%s), driver %s" % (info["gpu"], info["arch"], info["driver"]),
          "- torch %s (CUDA %s), triton %s, Python %s" % (info["torch"], info["cuda"], info["triton"], info["python"]),
          "- method: one process; PyTorch fp32 with TF32 off; torch.compile default mode, dynamo reset per point; "
          "CUDA events on the current stream; %d MB written before each timed run (L2 flush); median of %d runs "
          "after %d warm-up runs; fusegen strict checked against eager on %d fresh input sets (allclose "
          "atol=rtol=1e-4, running stats included; tf32 at 1e-2); norm weights, biases and running stats random." % (
              bc.L2_FLUSH_BYTES >> 20, args.runs, args.warmup, args.sets),
          "- roofline: MB = inputs, weights and running stats read once + output and running stats written once; "
          "GFLOP = 2 per multiply-add of the linear and conv layers (pointwise and normalization work not counted); "
          "bound = max(bytes / memory, FLOPs / rate), rate fp32 for eager, compile and strict, tf32 for fusegen "
          "tf32; each system's column is its fraction of roofline, bound / time (above 100%: faster than the "
          "ceiling, as strict's 3xTF32 can be against the fp32 rate).",
          "- kernels e/c/s/t: GPU kernels per call of eager / torch.compile / fusegen strict / fusegen tf32 "
          "(torch.profiler; +N: memsets and copies).",
          "- total time: %.0f s" % seconds, "",
          "| ceiling | value | source |", "|---|---|---|"]
    autotune = getattr(args, "autotune", False)  # absent from the settings of runs before --autotune
    if autotune:
        md.insert(md.index("- total time: %.0f s" % seconds), AUTOTUNE_METHOD)
    for name, (value, unit, source) in CEILINGS.items():
        md.append("| %s | %s | %s |" % (name, "%.3g T%s" % (value / 1e12, unit), source))
    md.append("")
    for family in FAMILIES:
        members = [r for r in rows if r["family"] == family]
        if members:
            md += ["## %s: %s" % (family, FAMILIES[family]), ""] + family_table(members) + [""]
            if autotune:
                md += ["Autotuned (`--autotune`):", ""] + tuning_table(members) + [""]
    if autotune:
        md += heuristic_section(rows)
    note = runs_note(rows, args)
    if note:
        md += [note, ""]
    notes = ["%s %s: %s" % (r["family"], r["point"], n) for r in rows for n in r["notes"]]
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    md += ["Plot: the fraction of roofline per point and system in the .svg beside this file.", ""]
    return "\n".join(md)


SVG_COLORS = {"eager": "#4e79a7", "compile": "#f28e2b", "strict": "#59a14f", "tf32": "#b07aa1"}


def svg_chart(points, title):
    """A grouped bar chart as SVG text: `points` is [(label, {system: fraction or None})] in order; one
    bar per system, a dashed line at 1 (the roofline), labelled axes and a legend. Standard library only."""
    top, bottom, left, right = 60, 190, 70, 20
    bar, gap = 7, 10
    group = bar * len(SYSTEMS) + gap
    height = 360
    width = max(640, left + right + max(1, len(points)) * group)
    values = [v for _, fractions in points for v in fractions.values() if v is not None]
    y_max = max([1.0] + values)
    y_max = math.ceil(y_max * 4) / 4  # a multiple of 0.25
    scale = height / y_max

    def y(value):
        return top + height - value * scale

    e = html.escape
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="11">' % (width, top + height + bottom, width, top + height + bottom),
           '<rect x="0" y="0" width="%d" height="%d" fill="white"/>' % (width, top + height + bottom),
           '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>' % (left, e(title))]
    steps = int(round(y_max / 0.25))
    for i in range(steps + 1):
        value = i * 0.25
        if steps > 8 and i % 2:
            continue
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, y(value), width - right,
                                                                                 y(value)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%d%%</text>' % (left - 6, y(value) + 4, value * 100))
    out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black" stroke-dasharray="5,3"/>' % (
        left, y(1.0), width - right, y(1.0)))
    out.append('<text x="%d" y="%.1f" text-anchor="end" font-size="10">roofline</text>' % (width - right - 2,
                                                                                          y(1.0) - 3))
    for i, (label, fractions) in enumerate(points):
        x0 = left + i * group + gap / 2
        for k, system in enumerate(SYSTEMS):
            value = fractions.get(system)
            if value is None:
                continue
            out.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.1f%%</title>'
                       '</rect>' % (x0 + k * bar, y(value), bar, value * scale, SVG_COLORS[system], e(label),
                                    e(SYSTEM_LABELS[system]), value * 100))
        cx = x0 + bar * len(SYSTEMS) / 2
        if all(fractions.get(system) is None for system in SYSTEMS):
            out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#888" font-size="9">n/a</text>' % (
                cx, top + height - 4))
        out.append('<text x="%.1f" y="%d" text-anchor="end" transform="rotate(-60 %.1f %d)">%s</text>' % (
            cx, top + height + 12, cx, top + height + 12, e(label)))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top, left, top + height))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top + height, width - right,
                                                                          top + height))
    out.append('<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">fraction of roofline '
               '(bound / time)</text>' % (top + height / 2, top + height / 2))
    out.append('<text x="%d" y="%d" text-anchor="middle">point (family, shape)</text>' % (
        (left + width - right) / 2, top + height + bottom - 8))
    for k, system in enumerate(SYSTEMS):
        lx = left + k * 120
        out.append('<rect x="%d" y="32" width="10" height="10" fill="%s"/>' % (lx, SVG_COLORS[system]))
        out.append('<text x="%d" y="41">%s</text>' % (lx + 14, e(SYSTEM_LABELS[system])))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def chart_points(rows):
    return [("%s %s" % (r["family"], r["point"]), {s: r["fraction"].get(s) for s in SYSTEMS}) for r in rows]


def write_outputs(base, info, rows, args, seconds):
    text = report(info, rows, args, seconds)
    with open(base + ".md", "w") as f:
        f.write(text)
    settings = {k: v for k, v in vars(args).items() if k not in ("out_dir", "fusegen")}
    with open(base + ".json", "w") as f:
        json.dump({"environment": info, "settings": settings, "seconds": seconds,
                   "ceilings": {k: {"value": v, "unit": u, "source": s} for k, (v, u, s) in CEILINGS.items()},
                   "rate_of": RATE_OF, "points": rows, **({"heuristic_vs_autotuning": heuristic_json(rows)}
                                                          if getattr(args, "autotune", False) else {})},
                  f, indent=1)
    with open(base + ".svg", "w") as f:
        f.write(svg_chart(chart_points(rows), "fusegen shape sweep on %s: fraction of roofline" % info["gpu"]))
    return text
