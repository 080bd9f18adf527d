"""bench/sweep.py without a GPU (ctest bench_sweep_script): --help, the exit without a GPU, the points
and their spec files, the roofline arithmetic, and the report, JSON and SVG written from a fake result.
The specs themselves: `sweep.py --check` (ctest bench_sweep_specs)."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
import xml.etree.ElementTree as ET

BENCH = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(BENCH, "sweep.py")
sys.path.insert(0, BENCH)
import sweep  # noqa: E402
import sweep_report  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def cuda_visible():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def fake_row(family, point, ms, bytes_, flops, errors=(), passed=True):
    row = {"family": family, "point": point, "spec": "bench/sweep/x.fg", "fusion": "x", "dims": {}, "flops": flops,
           "bytes": bytes_, "ms": dict(ms), "runs": {s: 100 for s in ms}, "bound_ms": {}, "fraction": {},
           "launches": {s: 1 for s in ms}, "other_gpu_ops": {"strict": 1} if "strict" in ms else {},
           "first_call_ms": {}, "cold_ms": {}, "max_error": {"strict": 2e-6, "tf32": 3e-4},
           "passed": {"strict": passed, "tf32": passed}, "compile_warmup_s": 1.0, "errors": list(errors),
           "notes": []}
    sweep.roofline(row)
    return row


def fake_tuning(chosen, heuristic, chosen_ms, heuristic_ms):
    return {"fusion": "f", "dims": "T=1", "chosen": chosen, "heuristic": heuristic, "chosen_ms": chosen_ms,
            "heuristic_ms": heuristic_ms,
            "chosen_variants": "; ".join(["gemm.cu: 128x64 blocks, 3xtf32 products, split-K 8"] * 3),
            "heuristic_variants": "gemm.cu: 128x128 blocks, 3xtf32 products; gemm.cu: 128x128 blocks, 3xtf32 "
                                  "products; gemm.cu: 128x64 blocks, 3xtf32 products",
            "report": "heuristic %.3f ms, %s %.3f ms" % (heuristic_ms, chosen, chosen_ms), "timed": True}


def tuned_row(point, strict, strict_tuned, tf32, tf32_tuned, tuned_passed=True, family="swiglu"):
    """A row of an --autotune run: the heuristic's and the tuned times (None: that system failed)."""
    times = {"eager": 2.0, "strict": strict, "strict_tuned": strict_tuned, "tf32": tf32, "tf32_tuned": tf32_tuned}
    row = fake_row(family, point, {k: v for k, v in times.items() if v is not None}, 5.4e8, 2.7e9)
    row["tuning"] = {}
    for precision in ("strict", "tf32"):
        if times[precision + "_tuned"] is None:
            row["errors"].append("fusegen %s tuned: no kernel" % precision)
            continue
        row["passed"][precision + "_tuned"] = tuned_passed
        row["max_error"][precision + "_tuned"] = 1e-6
        row["first_call_ms"][precision + "_tuned"] = 400.0
        row["tuning"][precision] = fake_tuning("128x64:8", "heuristic", 0.2, 0.3)
    return row


def fake_info():
    return {"gpu": "Fake GPU <80GB>", "arch": "sm_90", "driver": "1", "torch": "2", "cuda": "13", "triton": "3",
            "python": "3", "fusegen": "0.1.0", "commit": "abc", "date": "2026-01-01", "command": "python3 x",
            "library": "/x"}


class SweepScript(unittest.TestCase):
    def test_help(self):
        result = subprocess.run([sys.executable, SCRIPT, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        for option in ("--families", "--quick", "--runs", "--max-seconds", "--out-dir", "--no-compile", "--check"):
            self.assertIn(option, result.stdout)

    def test_without_gpu_exits_0(self):
        if cuda_visible():
            self.skipTest("a GPU is visible: the sweep would run")
        out = tempfile.mkdtemp(prefix="fusegen-sweep-test-")
        self.addCleanup(shutil.rmtree, out, True)
        result = subprocess.run([sys.executable, SCRIPT, "--quick", "--out-dir", out], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("sweep: skipped:", result.stdout)
        self.assertEqual(os.listdir(out), [])

    def test_points_and_specs(self):
        points = sweep.all_points()
        self.assertEqual(sorted({p.family for p in points}), sorted(sweep.FAMILIES))
        used = {os.path.realpath(p.spec) for p in points}
        for p in points:
            self.assertTrue(os.path.isfile(p.spec), p.spec)
        for spec in glob.glob(os.path.join(BENCH, "sweep", "*.fg")):
            self.assertIn(os.path.realpath(spec), used, "%s is not used by any point" % spec)
        for family in sweep.FAMILIES:
            members = [p for p in points if p.family == family]
            self.assertTrue(any(p.quick for p in members), "--quick runs no %s point" % family)
            self.assertEqual(len({p.label for p in members}), len(members))
            if family != "kernelbench":
                self.assertTrue(any(p.tiny for p in members), "%s is not checked on the reference" % family)
        counts = {f: sum(p.family == f for p in points) for f in sweep.FAMILIES}
        self.assertEqual(counts, {"swiglu": 6, "mlp": 5, "rows": 15, "resnet": 2, "kernelbench": 4})

    def test_families_option(self):
        args = sweep.parse_args(["--families", "rows,swiglu", "--quick"])
        self.assertEqual(args.families, ["rows", "swiglu"])
        self.assertEqual((args.runs, args.sets), (20, 2))
        self.assertEqual({p.family for p in sweep.selected_points(args)}, {"rows", "swiglu"})
        self.assertTrue(all(p.quick for p in sweep.selected_points(args)))
        with self.assertRaises(SystemExit), open(os.devnull, "w") as null:
            stderr, sys.stderr = sys.stderr, null
            try:
                sweep.parse_args(["--families", "nope"])
            finally:
                sys.stderr = stderr

    def test_roofline(self):
        # 2.96 GB: 1 ms of memory; 67 GFLOP: 1 ms at the fp32 rate, 0.18 ms at tf32.
        row = fake_row("swiglu", "T=1", {"eager": 2.0, "strict": 0.5, "tf32": 1.0}, 2.96e9, 67e9 * 2)
        self.assertAlmostEqual(row["bound_ms"]["fp32"], 2.0)
        self.assertAlmostEqual(row["bound_ms"]["tf32"], 1.0)
        self.assertAlmostEqual(row["fraction"]["eager"], 1.0)
        self.assertAlmostEqual(row["fraction"]["strict"], 4.0)
        self.assertAlmostEqual(row["fraction"]["tf32"], 1.0)
        self.assertNotIn("compile", row["fraction"])

    def test_report_json_and_svg(self):
        rows = [fake_row("swiglu", "T=16", {"eager": 0.3, "compile": 0.25, "strict": 0.2, "tf32": 0.19}, 5.4e8, 2.7e9),
                fake_row("rows", "softmax [8, 32000]", {"eager": 0.01, "compile": 0.012}, 2.0e6, 0,
                         errors=["fusegen strict: no GPU kernel | for <this>"], passed=None),
                fake_row("resnet", "N=64 64x56x56", {"eager": 2.0, "strict": 1.5, "tf32": 1.2}, 2.0e8, 2.96e10,
                         passed=False)]
        out = tempfile.mkdtemp(prefix="fusegen-sweep-test-")
        self.addCleanup(shutil.rmtree, out, True)
        args = types.SimpleNamespace(runs=100, warmup=10, sets=3, max_seconds=10.0, out_dir=out, fusegen=None,
                                     families=list(sweep.FAMILIES), quick=False)
        base = os.path.join(out, "fake-sweep")
        text = sweep.write_outputs(base, fake_info(), rows, args, 12.0)
        for heading in ("## swiglu:", "## rows:", "## resnet:"):
            self.assertIn(heading, text)
        self.assertNotIn("## mlp:", text)
        self.assertIn("FAIL; fusegen strict: no GPU kernel / for <this>", text)  # '|' cannot break the table
        self.assertIn("| T=16 |", text)
        self.assertEqual([sweep.verdict(r) for r in rows], ["PASS", "FAIL", "FAIL"])
        for line in text.splitlines():
            if line.startswith("| T=16") or line.startswith("| softmax") or line.startswith("| N=64"):
                self.assertEqual(line.count("|"), 18, line)
        with open(base + ".json") as f:
            saved = json.load(f)
        self.assertEqual(len(saved["points"]), 3)
        # --from-json writes the same report again from the saved run.
        os.remove(base + ".md")
        self.assertEqual(sweep.main(["--from-json", base + ".json"]), 0)
        with open(base + ".md") as f:
            self.assertEqual(f.read(), text)
        self.assertEqual(saved["ceilings"]["memory"]["value"], 2.96e12)
        root = ET.parse(base + ".svg").getroot()
        self.assertEqual(root.tag, SVG + "svg")
        bars = [r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None]
        self.assertEqual(len(bars), 4 + 2 + 3)  # one per system that has a time
        texts = [t.text for t in root.iter(SVG + "text")]
        for label in sweep.SYSTEM_LABELS.values():
            self.assertIn(label, texts)
        self.assertIn("rows softmax [8, 32000]", texts)
        self.assertTrue(any("Fake GPU <80GB>" in (t or "") for t in texts))  # escaped, parsed back
        # Without --autotune nothing of it shows.
        self.assertNotIn("autotun", text.lower())
        self.assertNotIn("heuristic_vs_autotuning", saved)

    def test_heuristic_flags(self):
        rows = [tuned_row("T=1", 1.23, 1.0, 0.50, 0.50),      # strict 23% slower: flagged
                tuned_row("T=2", 1.09, 1.0, 0.56, 0.50),      # 9% and 12%: tf32 only
                tuned_row("T=3", 0.90, 1.0, 0.50, 0.51),      # the heuristic faster: nothing
                tuned_row("T=4", 2.0, 1.0, 2.0, 1.0, tuned_passed=False),  # a tuned mismatch: not compared
                tuned_row("T=5", 2.0, None, 1.3, 1.0)]        # strict tuned failed: tf32 still compared
        flags = [(r["point"], p, round(e, 2)) for r, p, e in sweep_report.heuristic_flags(rows)]
        self.assertEqual(flags, [("T=1", "strict", 0.23), ("T=2", "tf32", 0.12), ("T=5", "tf32", 0.3)])
        self.assertEqual([sweep_report.flag_text(r) for r in rows],
                         ["strict: heuristic +23%", "tf32: heuristic +12%", "-", "-", "tf32: heuristic +30%"])
        both = tuned_row("T=6", 1.5, 1.0, 1.2, 1.0)
        self.assertEqual(sweep_report.flag_text(both), "strict: heuristic +50%; tf32: heuristic +20%")
        self.assertIsNone(sweep_report.heuristic_excess(rows[4], "strict"))
        self.assertAlmostEqual(sweep_report.heuristic_excess(rows[2], "strict"), -0.1)
        # A tuned mismatch or failure fails the point.
        self.assertEqual([sweep.verdict(r) for r in rows], ["PASS", "PASS", "PASS", "FAIL", "FAIL"])
        del both["passed"]["tf32_tuned"]  # never checked
        self.assertEqual(sweep.verdict(both), "FAIL")

    def test_compact_variants(self):
        self.assertEqual(sweep_report.compact_variants(
            "gemm.cu: 128x128 blocks, 3xtf32 products; gemm.cu: 128x128 blocks, 3xtf32 products; reduce.cu; "
            "gemm.cu: 64x64 blocks, tf32 products, split-K 8"),
            "2x gemm.cu: 128x128 blocks, 3xtf32 products; reduce.cu; gemm.cu: 64x64 blocks, tf32 products, split-K 8")
        self.assertEqual(sweep_report.compact_variants("window.cu"), "window.cu")
        self.assertEqual(sweep_report.compact_variants(""), "-")

    def test_tuning_record(self):
        record = sweep.tuning_record([fake_tuning("128x64:8", "heuristic", 0.2, 0.3)])
        self.assertEqual((record["chosen"], record["heuristic"], record["chosen_ms"]), ("128x64:8", "heuristic", 0.2))
        with self.assertRaisesRegex(RuntimeError, "tuned 0 times"):
            sweep.tuning_record([])
        with self.assertRaisesRegex(RuntimeError, "tuned 2 times; f at T=1; f at T=1"):
            sweep.tuning_record([fake_tuning("heuristic", "heuristic", 0, 0)] * 2)

    def write_autotune(self, rows):
        out = tempfile.mkdtemp(prefix="fusegen-sweep-test-")
        self.addCleanup(shutil.rmtree, out, True)
        args = types.SimpleNamespace(runs=100, warmup=10, sets=3, max_seconds=10.0, out_dir=out, fusegen=None,
                                     families=list(sweep.FAMILIES), quick=False, autotune=True)
        base = os.path.join(out, "fake-sweep-autotune")
        text = sweep.write_outputs(base, fake_info(), rows, args, 12.0)
        with open(base + ".json") as f:
            saved = json.load(f)
        return base, text, saved

    def test_autotune_report(self):
        rows = [tuned_row("T=16", 1.23, 1.0, 0.5, 0.5, family="swiglu"),
                tuned_row("N=64 64x56x56", 2.0, 2.0, 1.0, 0.8, family="resnet")]
        rows[1]["tuning"]["tf32"] = fake_tuning("64x64:8 (heuristic)", "64x64:8 (heuristic)", 0.7, 0.7)
        base, text, saved = self.write_autotune(rows)
        self.assertEqual(text.count("Autotuned (`--autotune`):"), 2)  # one table per family
        self.assertIn("- autotuning (`--autotune`):", text)
        lines = text.splitlines()
        table = [l for l in lines if l.startswith("| T=16 |")]
        self.assertEqual(len(table), 2)  # the family table and the autotuning table
        self.assertEqual(table[1], "| T=16 | 1.2300 | 1.0000 | 128x64:8 | 0.5000 | 0.5000 | 128x64:8 | 0.4, 0.4 | "
                                   "strict: heuristic +23% |")
        section = lines[lines.index("## Heuristic against autotuning"):]
        flagged = [l for l in section if l.startswith("| swiglu") or l.startswith("| resnet")]
        self.assertEqual(len(flagged), 2)
        self.assertEqual(flagged[0].count("|"), 8, flagged[0])
        self.assertEqual(flagged[0], "| swiglu T=16 | strict | 1.2300 | 1.0000 | +23% | heuristic: 2x gemm.cu: "
                                     "128x128 blocks, 3xtf32 products; gemm.cu: 128x64 blocks, 3xtf32 products "
                                     "(0.3000) | 128x64:8: 3x gemm.cu: 128x64 blocks, 3xtf32 products, split-K 8 "
                                     "(0.2000) |")
        self.assertTrue(flagged[1].startswith("| resnet N=64 64x56x56 | tf32 | 1.0000 | 0.8000 | +25% (the same "
                                              "kernels) | 64x64:8 (heuristic): "), flagged[1])
        self.assertEqual([(e["point"], e["precision"]) for e in saved["heuristic_vs_autotuning"]],
                         [("T=16", "strict"), ("N=64 64x56x56", "tf32")])
        self.assertAlmostEqual(saved["heuristic_vs_autotuning"][0]["excess"], 0.23)
        self.assertEqual(saved["points"][0]["tuning"]["strict"]["chosen"], "128x64:8")
        # --from-json writes the same report again.
        os.remove(base + ".md")
        self.assertEqual(sweep.main(["--from-json", base + ".json"]), 0)
        with open(base + ".md") as f:
            self.assertEqual(f.read(), text)

    def test_autotune_report_without_flags(self):
        base, text, saved = self.write_autotune([tuned_row("T=16", 1.05, 1.0, 0.5, 0.5)])
        section = text[text.index("## Heuristic against autotuning"):].splitlines()
        self.assertIn("none", section[:6])
        self.assertFalse(any(l.startswith("| swiglu") for l in section))
        self.assertEqual(saved["heuristic_vs_autotuning"], [])

    def test_svg_without_values(self):
        root = ET.fromstring(sweep.svg_chart([("a & b", {s: None for s in sweep.SYSTEMS})], "empty <chart>"))
        self.assertEqual(root.tag, SVG + "svg")
        self.assertEqual(ET.fromstring(sweep.svg_chart([], "nothing")).tag, SVG + "svg")


if __name__ == "__main__":
    unittest.main()
