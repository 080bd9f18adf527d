"""bench/kernelbench.py's frontend columns without a GPU (ctest bench_kernelbench_script): --help,
the main table with from_module / backend cells (times, checks, refusals, failures) and the verdict,
and bench/kernelbench_frontends.py run for real on CPU tensors: from_module refuses a module it cannot
map (a refusal, not a failure) and fails clearly on CPU tensors of one it maps; the backend falls back
to eager PyTorch on CPU tensors, and its check (outputs and train-mode batch-norm running statistics,
put back between the two runs) passes. The torch parts skip without torch unless
FUSEGEN_REQUIRE_TORCH=1, and need FUSEGEN_LIBRARY (ctest sets it)."""

import os
import subprocess
import sys
import time
import unittest

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import kernelbench  # noqa: E402
import kernelbench_frontends as frontends  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    if os.environ.get("FUSEGEN_REQUIRE_TORCH") == "1":
        raise
    torch = None


def result(**fields):
    r = frontends.new_result()
    r.update(fields)
    return r


def fake_row(name, frontend_results, errors=()):
    row = kernelbench.new_row("small", name, name)
    row.update(n=4, eager_ms=1.0, compile_ms=0.5, fusegen_ms={"strict": 0.25, "tf32": 0.2},
               max_error={"strict": 1e-6, "tf32": 1e-3}, passed={"strict": True, "tf32": True},
               errors=list(errors), frontends=frontend_results)
    return row


class TableTest(unittest.TestCase):
    def test_help_lists_no_frontends(self):
        done = subprocess.run([sys.executable, os.path.join(BENCH, "kernelbench.py"), "--help"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("--no-frontends", done.stdout)

    def test_main_table_cells(self):
        rows = [
            fake_row("ok", {"from_module": result(ms=0.3, runs=100, max_error=2e-6, passed=True),
                            "backend": result(ms=0.4, runs=100, max_error=3e-6, passed=True, fusions=1)}),
            fake_row("refused", {"from_module": result(refused="node 'where' (aten.where.self): where has no op"),
                                 "backend": result(ms=0.8, runs=100, max_error=0.0, passed=True, fusions=2)}),
            fake_row("broken", {"from_module": result(error="ArgumentError: bad | thing"),
                                "backend": result(ms=0.5, runs=100, max_error=3e-2, passed=False, fusions=1)}),
            fake_row("skipped", None),
        ]
        lines = kernelbench.main_table(rows)
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        for h in frontends.HEADERS:
            self.assertIn(h, header)
        self.assertLess(header.index("fusegen tf32 ms"), header.index("from_module ms"))
        self.assertEqual(lines[1].count("---"), len(header))
        table = {}
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            self.assertEqual(len(cells), len(header), line)
            table[cells[0]] = dict(zip(header, cells))
        self.assertEqual(table["ok"]["from_module ms"], "0.3000")
        self.assertEqual(table["ok"]["backend vs eager"], "2.50x")
        self.assertEqual(table["ok"]["backend check"], "ok 3.00e-06 (1 fusion)")
        self.assertTrue(table["ok"]["result"].startswith("PASS"))
        self.assertEqual(table["refused"]["from_module ms"], "refused: node 'where' (aten.where.self): where has no op")
        self.assertEqual(table["refused"]["from_module check"], "-")
        self.assertEqual(table["refused"]["backend check"], "ok 0.00e+00 (2 fusions)")
        self.assertTrue(table["refused"]["result"].startswith("PASS"), "a refusal is not a failure")
        self.assertEqual(table["broken"]["from_module ms"], "FAIL: ArgumentError: bad / thing")
        self.assertEqual(table["broken"]["backend check"], "MISMATCH 3.00e-02 (1 fusion)")
        self.assertTrue(table["broken"]["result"].startswith("FAIL"))
        self.assertIn("backend: mismatch", table["broken"]["result"])
        self.assertEqual(kernelbench.verdict(rows[2]), "FAIL")
        self.assertEqual([table["skipped"][h] for h in frontends.HEADERS], ["-"] * len(frontends.HEADERS))

    def test_jit_table_has_the_frontends_warm_up(self):
        row = fake_row("ok", {"from_module": result(warmup_s=1.25), "backend": result(warmup_s=3.5)})
        lines = kernelbench.jit_table([row])
        self.assertIn("from_module first call s", lines[0])
        self.assertTrue(lines[2].endswith("| 1.2 | 3.5 |") or lines[2].endswith("| 1.3 | 3.5 |"), lines[2])

    def test_refusal_reason_drops_the_prefix(self):
        self.assertEqual(frontends.reason(Exception("fusegen: from_module: node 'x': why\nmore")),
                         "node 'x': why (...)")


if torch is not None:
    class BatchNormWhere(nn.Module):
        """Train-mode batch norm (running statistics updated) then where: from_module refuses it."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)
            self.bn = nn.BatchNorm1d(8)

        def forward(self, x):
            h = self.bn(self.fc(x))
            return torch.where(h > 0, h, 0.5 * h)

    class BatchNormScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)
            self.bn = nn.BatchNorm1d(8)

        def forward(self, x):
            return self.bn(self.fc(x)) * 2.0


def cpu_timer(fn, runs=3):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[runs // 2], runs


@unittest.skipUnless(torch, "skipped: no torch (scripts/install-torch.sh installs it)")
@unittest.skipUnless(os.environ.get("FUSEGEN_LIBRARY"), "skipped: FUSEGEN_LIBRARY is not set")
class FrontendsOnCpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import fusegen
        cls.fusegen = fusegen
        cls.logged = []

    def run_frontends(self, model):
        torch.manual_seed(0)
        make_inputs = lambda: {"x": torch.randn(6, 16)}  # noqa: E731
        x = list(make_inputs().values())
        before = {k: v.clone() for k, v in model.state_dict().items()}
        with torch.no_grad():
            results = frontends.run_frontends(self.fusegen, torch, model, x, make_inputs, 2, cpu_timer,
                                              lambda: None, self.logged.append)
        for k, v in model.state_dict().items():  # the frontends ran on copies
            self.assertTrue(torch.equal(v, before[k]), k)
        return results

    def test_a_refusal_is_recorded_and_the_backend_still_runs(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the backend's "not all CUDA tensors" warning
            results = self.run_frontends(BatchNormWhere().train())
        fm, be = results["from_module"], results["backend"]
        self.assertIsNotNone(fm["refused"])
        self.assertIn("where", fm["refused"])
        self.assertIsNone(fm["error"])
        self.assertIsNone(fm["ms"])
        # CPU tensors: the backend runs the graph with eager PyTorch, so it matches, running stats included
        self.assertIsNone(be["error"], be["error"])
        self.assertTrue(be["passed"])
        self.assertEqual(be["max_error"], 0.0)
        self.assertEqual(be["fusions"], 0)
        self.assertIsNotNone(be["ms"])
        row = fake_row("x", results)
        self.assertEqual(kernelbench.verdict(row), "PASS")
        self.assertTrue(frontends.time_cell(fm, kernelbench.ms).startswith("refused: node"))

    def test_a_mapped_module_on_cpu_tensors_is_a_clear_failure(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = self.run_frontends(BatchNormScale().train())
        fm = results["from_module"]
        self.assertIsNone(fm["refused"])
        self.assertIsNotNone(fm["error"])  # fusegen's fusions take CUDA tensors
        self.assertRegex(fm["error"], "CUDA|cuda|device")
        self.assertEqual(kernelbench.verdict(fake_row("x", results)), "FAIL")

    def test_the_check_compares_running_statistics(self):
        """A run that updates the running statistics differently from eager is a mismatch."""
        model = BatchNormScale().train()

        def wrong(x):
            y = model(x)
            with torch.no_grad():
                model.bn.running_mean.add_(1.0)
            return y
        with torch.no_grad():
            error, passed = frontends.check(torch, wrong, model, lambda: {"x": torch.randn(6, 16)}, 2, lambda: None)
            self.assertFalse(passed)
            self.assertAlmostEqual(error, 1.0, places=5)
            error, passed = frontends.check(torch, model, model, lambda: {"x": torch.randn(6, 16)}, 2, lambda: None)
        self.assertTrue(passed)
        self.assertEqual(error, 0.0)


if __name__ == "__main__":
    unittest.main()
