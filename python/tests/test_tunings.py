"""Runtime.tunings() on the fake driver: an autotuning runtime lists the
(fusion, dims) it tuned, with the winning candidate against the heuristic's
kernels, both as the autotuner timed them, and each kernel's variant; a
runtime that finds the tuned entry in its cache lists nothing.

A child process loads the fake CUDA driver of the runtime tests
($FUSEGEN_FAKE_CUDA, set by ctest), whose clock charges 0.01 ms a launch.
Skipped when $FUSEGEN_FAKE_CUDA is not set."""

import unittest

import support

CHILD = r'''
import ctypes, json, sys, tempfile
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # found as libcuda.so.1 by the runtime
sys.path.insert(0, sys.argv[2])
import fusegen

spec, cache = %r, tempfile.mkdtemp(prefix="tunings-", dir=sys.argv[3])  # no tuned entry yet
results = {}
rt = fusegen.Runtime(cache_dir=cache, autotune=True, check_pointers=False)
results["fresh"] = rt.tunings()
f = rt.load(spec).function()
f.prepare(N=128)
f.prepare(N=128)  # tuned once per (fusion, dims)
results["tuned"] = rt.tunings()
results["stats"] = rt.stats()
again = fusegen.Runtime(cache_dir=cache, autotune=True, check_pointers=False)
again.load(spec).function().prepare(N=128)
results["again"] = again.tunings()
results["again_stats"] = again.stats()
print(json.dumps(results))
'''


@support.requires_library
class TuningsTest(unittest.TestCase):
    def test_tunings_on_the_fake_driver(self):
        r = support.run_fake_driver_child(self, CHILD % support.spec("small", "62"), "0")
        self.assertEqual(r["fresh"], [])
        self.assertEqual(r["stats"]["tunings"], 1)
        self.assertEqual(len(r["tuned"]), 1)
        t = r["tuned"][0]
        self.assertEqual(set(t), {"fusion", "dims", "chosen", "heuristic", "chosen_ms", "heuristic_ms",
                                  "chosen_variants", "heuristic_variants", "report", "timed"})
        self.assertEqual(t["fusion"], "matmul_groupnorm_leakyrelu_sum")
        self.assertEqual(t["dims"], "N=128")
        self.assertIs(t["timed"], True)
        # The heuristic's kernels at N=128 are 64x64 with split-K 8 (too few blocks unsplit).
        self.assertEqual(t["heuristic"], "64x64:8 (heuristic)")
        self.assertTrue(t["heuristic_variants"].startswith("gemm.cu: 64x64 blocks, 3xtf32 products, split-K 8"),
                        t["heuristic_variants"])
        self.assertIn(t["heuristic"] + " ", t["report"])
        self.assertIn(t["chosen"].replace(" (heuristic)", ""), t["report"])
        self.assertGreater(t["chosen_ms"], 0.0)
        self.assertLessEqual(t["chosen_ms"], t["heuristic_ms"])
        self.assertTrue(t["chosen_variants"].startswith("gemm.cu: "), t["chosen_variants"])
        # A later runtime takes the tuned entry from the disk cache: nothing tuned, nothing listed.
        self.assertEqual(r["again"], [])
        self.assertEqual(r["again_stats"]["tunings"], 0)
        self.assertEqual(r["again_stats"]["disk_loads"], 1)


if __name__ == "__main__":
    unittest.main()
