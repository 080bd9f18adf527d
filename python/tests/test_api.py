"""Loading specs, signatures, output shapes and load errors (no GPU needed)."""

import os
import unittest

import support
from support import fusegen

SPEC_TEXT = """\
fusion scale_add {
  input  x : f32[N, 16]
  param  s : f32[16]
  output y = x * s + x
}

fusion two_outputs {
  input  a : f32[M, 4]
  output p = a + a
  output q = a * a
}
"""


@support.requires_library
class ApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runtime = fusegen.Runtime(cache_dir=support.CACHE_DIR)

    def test_runtime(self):
        self.assertEqual(self.runtime.device, 0)
        self.assertEqual(os.path.realpath(self.runtime.cache_dir), os.path.realpath(support.CACHE_DIR))
        stats = self.runtime.stats()
        self.assertEqual(set(stats), {"calls", "memory_hits", "generations", "compiles", "disk_loads",
                                      "disk_writes", "disk_rejects", "tunings",
                                      "remote_loads", "remote_writes", "remote_rejects", "remote_waits"})
        self.assertTrue(all(isinstance(v, int) for v in stats.values()))
        self.assertEqual(fusegen.Runtime(disk_cache=False).cache_dir, "")
        self.assertEqual(fusegen.library_version(), fusegen.__version__)  # one version (CMakeLists.txt)

    def test_bad_runtime_options(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, "precision must be None, 'strict' or 'tf32'"):
            fusegen.Runtime(precision="fast")
        with self.assertRaisesRegex(fusegen.ArgumentError, "device must be"):
            fusegen.Runtime(device=-1)

    def test_load_file(self):
        program = self.runtime.load(support.spec("small", "62"))
        self.assertEqual(program.function_names, ("matmul_groupnorm_leakyrelu_sum",))
        f = program.function("matmul_groupnorm_leakyrelu_sum")
        self.assertEqual(f.name, "matmul_groupnorm_leakyrelu_sum")
        self.assertTrue(f.signature.startswith("matmul_groupnorm_leakyrelu_sum(x: f32[N, 512], w: f32[256, 512]"),
                        f.signature)
        self.assertEqual(f.argument_names, ("x", "w", "b", "gn_w", "gn_b"))
        self.assertEqual(f.arguments[0], fusegen.TensorSpec("x", "input", ("N", 512)))
        self.assertEqual(f.arguments[1], fusegen.TensorSpec("w", "param", (256, 512)))
        self.assertEqual(f.output_names, ("y",))
        self.assertEqual(f.outputs[0].kind, "output")
        self.assertEqual(program.function().name, f.name)  # the only fusion may be left unnamed
        self.assertIn("matmul_groupnorm_leakyrelu_sum", repr(f))

    def test_state_kind(self):
        f = self.runtime.load(support.spec("small", "39")).function()
        kinds = {s.name: s.kind for s in f.arguments}
        self.assertEqual(kinds["running_mean"], "state")
        self.assertEqual(kinds["running_var"], "state")
        self.assertEqual(kinds["w"], "param")

    def test_default_runtime(self):
        f = fusegen.load(support.spec("small", "75")).function("gemm_groupnorm_min_biasadd")
        self.assertIs(f.runtime, fusegen.default_runtime(0))
        g = fusegen.load_string(SPEC_TEXT, name="mine.fg").function("scale_add")
        self.assertIs(g.runtime, f.runtime)

    def test_load_string(self):
        program = self.runtime.load_string(SPEC_TEXT, name="mine.fg")
        self.assertEqual(program.function_names, ("scale_add", "two_outputs"))
        f = program.function("two_outputs")
        self.assertEqual(f.output_names, ("p", "q"))
        self.assertEqual(f.output_shapes(a=(3, 4)), {"p": (3, 4), "q": (3, 4)})
        with self.assertRaisesRegex(fusegen.ArgumentError, r"mine.fg has 2 fusions \(scale_add, two_outputs\)"):
            program.function()

    def test_output_shapes(self):
        cases = [("small", "62", {"x": (8, 512)}, (8, 256)),
                 ("small", "75", {"x": (8, 512)}, (1, 256, 8, 1)),
                 ("small", "39", {"x": (8, 1024)}, (8, 512)),
                 ("small", "85", {"x": (2, 3, 32, 32)}, (2, 16, 15, 15)),
                 ("v0.1", "85", {"x": (2, 8, 128, 128)}, (2, 64, 31, 31)),
                 ("v0.1", "75", {"x": (16, 8192)}, (1, 8192, 16, 1))]
        for shapes, chain, given, expected in cases:
            with self.subTest(shapes=shapes, chain=chain):
                f = self.runtime.load(support.spec(shapes, chain)).function()
                arguments = {s.name: given.get(s.name, s.dims) for s in f.arguments}
                self.assertEqual(f.output_shapes(**arguments), {"y": expected})

    def test_output_shapes_errors(self):
        f = self.runtime.load(support.spec("small", "62")).function()
        good = {s.name: s.dims for s in f.arguments if s.name != "x"}
        with self.assertRaisesRegex(fusegen.ArgumentError, "x"):
            f.output_shapes(x=(8, 511), **good)
        with self.assertRaisesRegex(fusegen.ArgumentError, "missing x"):
            f.output_shapes(**good)

    def test_spec_error_has_position(self):
        bad = "fusion f {\n  input x : f32[N, 4]\n  output y = frobnicate(x)\n}\n"
        with self.assertRaises(fusegen.SpecError) as caught:
            self.runtime.load_string(bad, name="bad.fg")
        self.assertRegex(str(caught.exception), r"bad\.fg:3:\d+: error")
        self.assertEqual(caught.exception.status, 1)
        self.assertIsInstance(caught.exception, fusegen.Error)

    def test_missing_file(self):
        with self.assertRaises(fusegen.Error) as caught:
            self.runtime.load("/nonexistent/spec.fg")
        self.assertIn("/nonexistent/spec.fg", str(caught.exception))

    def test_unknown_function_lists_names(self):
        program = self.runtime.load_string(SPEC_TEXT, name="mine.fg")
        with self.assertRaises(fusegen.ArgumentError) as caught:
            program.function("scale_ad")
        self.assertIn("no fusion named 'scale_ad'", str(caught.exception))
        self.assertIn("scale_add, two_outputs", str(caught.exception))

    def test_device_info_without_gpu(self):
        if support.has_driver(self.runtime):
            name, arch = self.runtime.device_info()
            self.assertTrue(name)
            self.assertGreaterEqual(arch, 50)
        else:
            with self.assertRaises(fusegen.NoDriverError):
                self.runtime.device_info()


if __name__ == "__main__":
    unittest.main()
